from django.apps import AppConfig
from django.core import checks


def task_type_contract(app_configs=None, **kwargs):
    """Django system check: every registered task type keeps the contract (annotation.tasktypes.checks)."""
    from annotation.services.study_settings import every_study_settings
    from annotation.tasktypes import TASK_TYPES
    from annotation.tasktypes.checks import check_task_types

    return check_task_types(TASK_TYPES.values(), {setting.name for setting in every_study_settings()})


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self):
        from annotation.services import extensions, linking
        from annotation.services.access import crowd_study_of
        from annotation.services.analysis import report_job  # noqa: F401  importing it registers its job kind
        from core.roles import register_user_fact

        checks.register(task_type_contract)
        # A written page goes to its validation study once stored, where the study sends on submit.
        extensions.add_submit_step(extensions.SubmitStep(after=linking.after_submit))
        register_user_fact("crowd_study", crowd_study_of)  # read with the user on every request
