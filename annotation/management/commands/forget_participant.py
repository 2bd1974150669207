from django.core.management.base import BaseCommand, CommandError
from django.template.defaultfilters import pluralize

from annotation.models import CrowdSession
from annotation.services.participants import ParticipantError, forget_participant


class Command(BaseCommand):
    help = (
        "Erase one crowd participant's identifying data (platform ID, session IDs, account name, free-text "
        "reasons) and keep their answers under a pseudonym; the erasure is written to the audit log."
    )

    def add_arguments(self, parser):
        parser.add_argument("platform", choices=CrowdSession.Platform.values)
        parser.add_argument("participant_id", help="the Prolific PID or MTurk worker ID")

    def handle(self, *args, **opts):
        try:
            erasure = forget_participant(opts["platform"], opts["participant_id"])
        except ParticipantError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"erased {counted(erasure.sessions, 'session')} and {counted(erasure.accounts, 'account name')}; "
            f"{counted(erasure.answers_kept, 'answer')} kept, "
            f"{counted(erasure.reasons_erased, 'free-text reason')} erased"
        )


def counted(number: int, noun: str) -> str:
    return f"{number} {noun}{pluralize(number)}"
