from rest_framework.routers import SimpleRouter

from label_variation.api import LabelVariationViewSet

router = SimpleRouter()
router.register("projects", LabelVariationViewSet, basename="project")
urlpatterns = router.urls
