import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from common.commands import errors_as_command_errors
from recruitment.mturk import HitRequest, MTurkError, Requester, money, qualification_requirements

HOUR = 3600


class Command(BaseCommand):
    help = (
        "MTurk's requester API (sandbox unless MTURK_SANDBOX=false): create a HIT for a study, approve, reject, "
        "pay a bonus once, list a HIT's assignments. --dry-run prints the requests instead of sending them. "
        "MTurk is in maintenance (no new requesters since July 2026); Prolific is the main platform."
    )

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)

        hit = actions.add_parser("create-hit", help="a HIT whose ExternalQuestion is the study's entry link")
        hit.add_argument("slug", help="the study")
        hit.add_argument("--site", required=True, help="this site's public https address, e.g. https://nli.example.org")
        hit.add_argument("--title", required=True)
        hit.add_argument("--description", required=True)
        hit.add_argument("--reward", required=True, help="US dollars per assignment, e.g. 1.50")
        hit.add_argument("--assignments", type=int, required=True, help="workers the HIT takes")
        hit.add_argument("--lifetime-hours", type=float, default=72.0, help="how long it is listed (default 72)")
        hit.add_argument("--duration-minutes", type=float, default=60.0, help="time a worker has (default 60)")
        hit.add_argument("--auto-approve-hours", type=float, default=72.0, help="approved unless decided sooner")
        hit.add_argument("--keywords", default="")
        hit.add_argument("--qualifications", type=Path, help="a JSON file: MTurk's QualificationRequirements list")
        hit.add_argument("--key", default="", help="another key makes another HIT for the same study and offer")

        approve = actions.add_parser("approve", help="approve submitted assignments")
        approve.add_argument("assignment_ids", nargs="+", metavar="ASSIGNMENT_ID")
        approve.add_argument("--feedback", default="", help="an optional message to the workers")

        reject = actions.add_parser("reject", help="reject submitted assignments, saying why")
        reject.add_argument("assignment_ids", nargs="+", metavar="ASSIGNMENT_ID")
        reject.add_argument("--feedback", required=True, help="why (MTurk shows it to the workers)")

        bonus = actions.add_parser("bonus", help="pay a bonus once, however often this is run")
        bonus.add_argument("--worker", required=True, help="the MTurk worker ID")
        bonus.add_argument("--assignment", required=True, help="one of the worker's assignments")
        bonus.add_argument("--amount", required=True, help="US dollars, e.g. 0.50")
        bonus.add_argument("--reason", required=True, help="shown to the worker")
        bonus.add_argument("--key", default="", help="another key pays another bonus of the same amount")

        listing = actions.add_parser("assignments", help="a HIT's assignments, one JSON object a line")
        listing.add_argument("hit_id")
        listing.add_argument("--status", action="append", choices=["Submitted", "Approved", "Rejected"], default=[])

        for action in (hit, approve, reject, bonus):
            action.add_argument("--dry-run", action="store_true", help="print the requests; send nothing")

    def handle(self, *args, **opts):
        requester = Requester(dry_run=opts.get("dry_run", False), echo=self.stdout.write)
        where = "sandbox" if settings.MTURK_SANDBOX else "production"
        with errors_as_command_errors(MTurkError):
            getattr(self, opts["action"].replace("-", "_"))(requester, opts, where)

    def create_hit(self, requester, opts, where):
        project = Project.objects.filter(slug=opts["slug"]).first()
        if project is None:
            raise CommandError(f"no study {opts['slug']!r}")
        offer = HitRequest(
            title=opts["title"],
            description=opts["description"],
            reward=money(opts["reward"], "the reward"),
            max_assignments=opts["assignments"],
            lifetime_seconds=round(opts["lifetime_hours"] * HOUR),
            assignment_duration_seconds=round(opts["duration_minutes"] * 60),
            auto_approval_delay_seconds=round(opts["auto_approve_hours"] * HOUR),
            keywords=opts["keywords"],
            qualification_requirements=self.qualifications(opts["qualifications"]),
        )
        hit_id = requester.create_hit(project, offer, opts["site"], key=opts["key"])
        if hit_id:
            self.stdout.write(f"created HIT {hit_id} on MTurk's {where} for {project.slug}")

    def approve(self, requester, opts, where):
        for assignment_id in opts["assignment_ids"]:
            requester.approve(assignment_id, opts["feedback"])
            if not requester.dry_run:
                self.stdout.write(f"approved {assignment_id} ({where})")

    def reject(self, requester, opts, where):
        for assignment_id in opts["assignment_ids"]:
            requester.reject(assignment_id, opts["feedback"])
            if not requester.dry_run:
                self.stdout.write(f"rejected {assignment_id} ({where})")

    def bonus(self, requester, opts, where):
        paid = requester.send_bonus(opts["worker"], opts["assignment"], opts["amount"], opts["reason"], opts["key"])
        if not paid:
            self.stdout.write(f"this bonus (same key) was already paid ({where}): not paid again")
        elif not requester.dry_run:
            self.stdout.write(f"paid {opts['amount']} to {opts['worker']} ({where})")

    def assignments(self, requester, opts, where):
        for assignment in requester.assignments(opts["hit_id"], tuple(opts["status"])):
            self.stdout.write(json.dumps(assignment, default=str))

    @staticmethod
    def qualifications(path: Path | None):
        if path is None:
            return ()
        try:
            return qualification_requirements(path.read_text())
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
