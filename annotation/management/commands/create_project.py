import json

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Project
from annotation.services.projects import create_project, find_user
from annotation.services.study_settings import all_settings
from annotation.tasktypes import TASK_TYPES
from common.commands import errors_as_command_errors


class Command(BaseCommand):
    help = (
        "Create an annotation project. Every setting of the web form is an option here (see --help); each "
        "task type accepts its own. Unlike the web form and the API, whose new projects start as drafts, "
        "the command creates projects --status published unless told otherwise, so scripts run at once."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--task-type", required=True, choices=sorted(TASK_TYPES))
        parser.add_argument("--owner", help="username of the owning author (default: the first superuser)")
        parser.add_argument("--json", action="store_true")
        all_settings().add_arguments(parser)

    def handle(self, *args, **opts):
        settings = all_settings().given(opts)
        settings.setdefault("status", Project.Status.PUBLISHED)
        with errors_as_command_errors(ValueError):
            if opts["owner"]:
                owner = find_user(opts["owner"])
            else:
                owner = get_user_model().objects.filter(is_superuser=True).order_by("id").first()
                if owner is None:
                    raise ValueError("no --owner given and no superuser exists")
            try:
                project = create_project(opts["slug"], opts["task_type"], owner, **settings)
            except PermissionDenied as exc:
                raise CommandError(f"--owner {owner.username}: {exc}") from None
        result = {
            "slug": project.slug,
            "task_type": project.task_type,
            "status": project.status,
            "items_per_page": project.items_per_page,
            "redundancy": project.redundancy,
            "max_annotations": project.max_annotations,
            "owner": project.owner.username,
        }
        if opts["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self.stdout.write(
                self.style.SUCCESS(f"created project {project.slug} ({project.task_type}, {project.status})")
            )
