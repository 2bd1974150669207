from rest_framework.routers import DefaultRouter

from evaluation.api import EvaluationRunViewSet

router = DefaultRouter()
router.register("runs", EvaluationRunViewSet, basename="evaluation-run")
urlpatterns = router.urls
