from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self):
        from evaluation import runs  # noqa: F401  registers the "evaluate" job kind
