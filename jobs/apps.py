from django.apps import AppConfig
from django.core import checks


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Background jobs"

    def ready(self):
        checks.register(storage_reachable)
        checks.register(time_limits_known)


def storage_reachable(app_configs=None, **kwargs):
    """A bucket that does not exist or refuses the credentials is named by `manage.py check` (one round trip)."""
    from django.conf import settings

    from jobs.files import check_storage

    if not getattr(settings, "AWS_STORAGE_BUCKET_NAME", ""):
        return []
    problem = check_storage()
    return [checks.Error(problem, id="jobs.E001")] if problem else []


def time_limits_known(app_configs=None, **kwargs):
    """JOB_TIME_LIMITS names kinds that exist, each with a limit from 1 s to a week."""
    from django.conf import settings

    from jobs.kinds import KINDS, JobError, check_time_limit

    problems = []
    for name, seconds in settings.JOB_TIME_LIMITS.items():
        if name not in KINDS:
            problems.append(
                f"JOB_TIME_LIMITS names {name!r}, which is no job kind; the kinds: {', '.join(sorted(KINDS))}"
            )
            continue
        try:
            check_time_limit(seconds, f"JOB_TIME_LIMITS {name}")
        except JobError as error:
            problems.append(str(error))
    return [checks.Error(problem, id="jobs.E002") for problem in problems]
