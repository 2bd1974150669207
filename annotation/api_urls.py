from django.urls import path
from rest_framework.routers import DefaultRouter

from annotation.api import AssignmentViewSet, MeView, ProjectViewSet, TokenView

router = DefaultRouter()
router.register("projects", ProjectViewSet, basename="project")
router.register("assignments", AssignmentViewSet, basename="assignment")
urlpatterns = [
    path("token/", TokenView.as_view(), name="api-token"),
    path("me/", MeView.as_view(), name="api-me"),
    *router.urls,
]
