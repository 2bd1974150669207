from django.core.management.base import BaseCommand
from django.template.defaultfilters import pluralize

from annotation.models import CrowdSession
from annotation.services.crowd.participants import ParticipantError, forget_participant
from common.commands import errors_as_command_errors


class Command(BaseCommand):
    help = (
        "Erase one crowd participant's identifying data (platform ID, session IDs, account name) and what they "
        "wrote (reasons, explanations, written sentences, drafts, their copies in linked validation studies), "
        "keeping their answers' choices under a pseudonym; the studies' stored exports and bundles are removed, "
        "and the erasure is written to the audit log."
    )

    def add_arguments(self, parser):
        parser.add_argument("platform", choices=CrowdSession.Platform.values)
        parser.add_argument("participant_id", help="the Prolific PID or MTurk worker ID")
        parser.add_argument(
            "--keep-free-text",
            action="store_true",
            help="keep what they wrote under the pseudonymous account: only where the study's consent said so",
        )

    def handle(self, *args, **opts):
        with errors_as_command_errors(ParticipantError):
            erasure = forget_participant(
                opts["platform"], opts["participant_id"], keep_free_text=opts["keep_free_text"]
            )
        self.stdout.write(
            f"erased {counted(erasure.sessions, 'session')} and {counted(erasure.accounts, 'account name')}; "
            f"{counted(erasure.answers_kept, 'answer')} kept, "
            f"{counted(erasure.reasons_erased, 'free-text reason')} and the text of "
            f"{counted(erasure.answers_with_text_erased, 'answer')} erased ({erasure.free_text} free text), "
            f"{counted(erasure.drafts_erased, 'draft')} deleted, "
            f"{counted(erasure.copies_marked, 'validation item')} marked where their text was copied"
        )
        self.stdout.write(f"stored exports and bundles removed (made before the erasure): {len(erasure.files_removed)}")
        for line in erasure.files_removed:
            self.stdout.write(f"  {line}")


def counted(number: int, noun: str) -> str:
    return f"{number} {noun}{pluralize(number)}"
