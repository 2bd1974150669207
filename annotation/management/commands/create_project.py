import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.services.projects import create_project, find_user
from annotation.tasktypes import TASK_TYPES


class Command(BaseCommand):
    help = "Create an annotation project."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--task-type", required=True, choices=sorted(TASK_TYPES))
        parser.add_argument("--items-per-page", type=int)
        parser.add_argument("--redundancy", type=int)
        parser.add_argument("--max-annotations", type=int)
        parser.add_argument("--owner", help="username of the owning author (default: the first superuser)")
        parser.add_argument("--title", default="")
        parser.add_argument("--instructions", default="")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        try:
            if opts["owner"]:
                owner = find_user(opts["owner"])
            else:
                owner = get_user_model().objects.filter(is_superuser=True).order_by("id").first()
                if owner is None:
                    raise ValueError("no --owner given and no superuser exists")
            project = create_project(
                opts["slug"],
                opts["task_type"],
                owner,
                title=opts["title"],
                items_per_page=opts["items_per_page"],
                redundancy=opts["redundancy"],
                max_annotations=opts["max_annotations"],
                instructions=opts["instructions"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        result = {
            "slug": project.slug,
            "task_type": project.task_type,
            "items_per_page": project.items_per_page,
            "redundancy": project.redundancy,
            "max_annotations": project.max_annotations,
            "owner": project.owner.username,
        }
        if opts["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self.stdout.write(self.style.SUCCESS(f"created project {project.slug} ({project.task_type})"))
