"""`manage.py prolific SLUG --dry-run | --pull | --pay-bonuses`: a study's Prolific side from the command
line, through the same services as its Prolific page."""

from annotation.management.project_command import ProjectCommand
from recruitment.prolific import ProlificError
from recruitment.services import bonuses, settle, studies


class Command(ProjectCommand):
    help = (
        "A study's Prolific side: --dry-run prints the requests creating and publishing it would send (the "
        "token redacted, nothing sent); --pull reads its submissions; --pay-bonuses pays the bonuses ledger."
    )

    def add_project_arguments(self, parser):
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--dry-run", action="store_true", help="print the requests, send nothing")
        what.add_argument("--pull", action="store_true", help="read the study's submissions from Prolific")
        what.add_argument("--pay-bonuses", action="store_true", help="pay every bonus of the ledger not paid yet")
        parser.add_argument(
            "--site", default="http://127.0.0.1:8000", help="this site's address, for the entry URL (--dry-run)"
        )

    def handle_project(self, project, opts):
        link = studies.link_of(project)
        if link is None:
            raise ValueError(f"{project.slug} is not linked to Prolific (set a token on its Prolific page)")
        try:
            if opts["dry_run"]:
                recorded = studies.dry_run(link, opts["site"])
                result = {"requests": [vars(request) for request in recorded]}
                return result, "\n\n".join(request.describe() for request in recorded)
            if opts["pull"]:
                count = settle.pull(link)
                return {"submissions": count}, f"{count} submissions read from Prolific"
            report = bonuses.pay(link, None)
        except ProlificError as error:
            raise ValueError(str(error)) from None
        text = (
            f"paid {len(report.paid)}, confirmed {len(report.confirmed)}, failed {len(report.failed)}, "
            f"sent but not confirmed {len(report.unconfirmed)}"
        )
        return vars(report), text
