"""The shape every command about one project shares: SLUG first, --json for one JSON object, and the
services' ValueErrors (no such project, bad settings, bad file) as a one-line CommandError."""

import json
from abc import ABCMeta, abstractmethod

from django.core.management.base import BaseCommand

from annotation.services.projects import find_project
from common.commands import errors_as_command_errors


class ProjectCommand(BaseCommand, metaclass=ABCMeta):
    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        self.add_project_arguments(parser)

    def add_project_arguments(self, parser):
        """Options of this command beyond SLUG and --json."""

    def handle(self, *args, **opts):
        with errors_as_command_errors(ValueError):
            result, text = self.handle_project(find_project(opts["slug"]), opts)
        self.stdout.write(json.dumps(result, allow_nan=False) if opts["json"] else text)

    @abstractmethod
    def handle_project(self, project, opts) -> tuple[dict, str]:
        """Do the work; return the result as a dict (for --json) and as text for a person."""
