from rest_framework.routers import DefaultRouter

from jobs.api import JobViewSet

router = DefaultRouter()
router.register("", JobViewSet, basename="job")
urlpatterns = router.urls
