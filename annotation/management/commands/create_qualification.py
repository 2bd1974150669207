import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from annotation.services.qualification import QualificationError, create_test
from annotation.tasktypes import TASK_TYPES
from common.commands import errors_as_command_errors


class Command(BaseCommand):
    help = (
        "Create a qualification test from a JSONL file of reference items "
        '({"premise", "hypothesis", "update"?, "atom"?, "reference", "easy"?}) and require it on projects.'
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--task-type", required=True, choices=sorted(TASK_TYPES))
        parser.add_argument("--items", required=True, help="JSONL file of reference items")
        parser.add_argument(
            "--project", action="append", default=[], help="project slug that requires the test (repeatable)"
        )
        parser.add_argument("--title", default="")
        parser.add_argument("--max-attempts", type=int, default=2)
        parser.add_argument("--min-accuracy", type=float, default=0.8)
        parser.add_argument("--min-pearson", type=float, default=0.7)
        parser.add_argument("--min-spearman", type=float, default=0.4)
        parser.add_argument("--delta-divisor", type=float, default=4.0)
        parser.add_argument("--min-delta", type=float, default=0.01)
        parser.add_argument(
            "--show-feedback", action="store_true", help="after an attempt, show each item's reference answer"
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        projects = []
        for slug in opts["project"]:
            project = Project.objects.filter(slug=slug).first()
            if project is None:
                raise CommandError(f"no project with the slug {slug!r}")
            if project.task_type != opts["task_type"]:
                raise CommandError(f"project {slug} is a {project.task_type} project, the test is {opts['task_type']}")
            projects.append(project)
        rows = []
        try:
            with open(opts["items"], encoding="utf-8") as handle:
                for number, line in enumerate(handle, start=1):
                    if line.strip():
                        try:
                            rows.append(json.loads(line))
                        except json.JSONDecodeError as exc:
                            raise CommandError(f"line {number}: not valid JSON ({exc.msg})") from None
        except FileNotFoundError:
            raise CommandError(f"no such file: {opts['items']}") from None
        options = dict(projects[0].options) if projects else {}
        if opts["show_feedback"]:
            options["show_feedback"] = True
        with errors_as_command_errors(QualificationError):
            test = create_test(
                opts["slug"],
                opts["task_type"],
                rows,
                title=opts["title"],
                options=options or None,
                projects=projects,
                max_attempts=opts["max_attempts"],
                min_accuracy=opts["min_accuracy"],
                min_pearson=opts["min_pearson"],
                min_spearman=opts["min_spearman"],
                delta_divisor=opts["delta_divisor"],
                min_delta=opts["min_delta"],
            )
        Project.objects.filter(pk__in=[p.pk for p in projects]).update(qualification=test)
        result = {"test": test.slug, "items": len(rows), "projects": [p.slug for p in projects]}
        self.stdout.write(json.dumps(result) if opts["json"] else f"created test {test.slug} with {len(rows)} items")
