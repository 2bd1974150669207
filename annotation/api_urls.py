from rest_framework.routers import DefaultRouter

from annotation.api import AssignmentViewSet, ProjectViewSet

router = DefaultRouter()
router.register("projects", ProjectViewSet, basename="project")
router.register("assignments", AssignmentViewSet, basename="assignment")
urlpatterns = router.urls
