from rest_framework.routers import SimpleRouter

from evaluation.study_evaluation.api import StudyEvaluationRoutes

router = SimpleRouter()
router.register("projects", StudyEvaluationRoutes, basename="project")
urlpatterns = router.urls
