from django.apps import AppConfig
from django.core import checks


class RecruitmentConfig(AppConfig):
    name = "recruitment"
    verbose_name = "Recruitment"

    def ready(self):
        from annotation.services import extensions, projects
        from annotation.services.crowd import crowd, participants
        from recruitment.services.erasure import forget_prolific_participant
        from recruitment.services.studies import close_for_good, follow_status, prolific_study
        from recruitment.services.waves import kept_out, next_wave

        checks.register(secrets_key_check, checks.Tags.security)
        crowd.register_platform_study_source(prolific_study)
        crowd.register_arrival_check(kept_out)
        projects.register_clone_step(next_wave)
        projects.register_status_follower(follow_status)
        extensions.add_panel("confirm_close", "recruitment/_close_for_good.html", close_for_good)
        participants.register_eraser(forget_prolific_participant)


def secrets_key_check(app_configs, **kwargs):
    """A SECRETS_ENCRYPTION_KEY that is not a Fernet key stops the server at start-up, not at the first save."""
    from recruitment.secrets import check_key

    problem = check_key()
    return [checks.Error(problem, id="recruitment.E001")] if problem else []
