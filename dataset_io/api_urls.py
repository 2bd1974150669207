from rest_framework.routers import SimpleRouter

from dataset_io.api import DatasetViewSet

router = SimpleRouter()
router.register("projects", DatasetViewSet, basename="project")
urlpatterns = router.urls
