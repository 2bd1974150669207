from rest_framework.routers import SimpleRouter

from models_backend.api import StudyEvaluationRoutes

router = SimpleRouter()
router.register("projects", StudyEvaluationRoutes, basename="project")
urlpatterns = router.urls
