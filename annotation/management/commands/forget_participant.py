from django.core.management.base import BaseCommand, CommandError

from annotation.models import CrowdSession
from annotation.services.participants import ParticipantError, forget_participant


class Command(BaseCommand):
    help = ("Erase one crowd participant's identifying data (platform ID, session IDs, account name, free-text "
            "reasons) and keep their answers under a pseudonym; the erasure is written to the audit log.")

    def add_arguments(self, parser):
        parser.add_argument("platform", choices=CrowdSession.Platform.values)
        parser.add_argument("participant_id", help="the Prolific PID or MTurk worker ID")

    def handle(self, *args, **opts):
        try:
            erasure = forget_participant(opts["platform"], opts["participant_id"])
        except ParticipantError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"erased {erasure.sessions} session(s) and {erasure.accounts} account name(s); "
                          f"{erasure.answers_kept} answer(s) kept, {erasure.reasons_erased} free-text reason(s) erased")
