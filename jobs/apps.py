from django.apps import AppConfig
from django.core import checks


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Background jobs"

    def ready(self):
        checks.register(storage_reachable)


def storage_reachable(app_configs=None, **kwargs):
    """A bucket that does not exist or refuses the credentials is named by `manage.py check` (one round trip)."""
    from django.conf import settings

    from jobs.files import check_storage

    if not getattr(settings, "AWS_STORAGE_BUCKET_NAME", ""):
        return []
    problem = check_storage()
    return [checks.Error(problem, id="jobs.E001")] if problem else []
