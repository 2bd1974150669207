from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self):
        from annotation.services import extensions
        from evaluation import runs  # noqa: F401  registers the "evaluate" job kind
        from evaluation.study_evaluation import jobs  # noqa: F401  registers the "evaluate_study" job kind
        from evaluation.study_evaluation.as_annotator import report_panel
        from evaluation.study_evaluation.protocols import takes_checkpoint_kind
        from evaluation.study_evaluation.views import study_page_panel
        from models_backend import study_evaluation_link

        # The study page links the study's model evaluations.
        extensions.add_panel("study_page_data", "evaluation/_study_evaluation_panel.html", study_page_panel)
        # The report shows the newest evaluation's models among the annotators, flagged as models.
        extensions.add_panel("report", "evaluation/_model_as_annotator_report.html", report_panel)
        # The checkpoints page offers the studies whose evaluation takes each checkpoint.
        study_evaluation_link.register(takes_checkpoint_kind)
