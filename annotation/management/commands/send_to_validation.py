import json

from django.core.management.base import BaseCommand, CommandError

from annotation.services.linking import send_to_validation
from annotation.services.projects import find_project


class Command(BaseCommand):
    help = ("Send a project's written pairs that are not there yet to its linked validation project (created "
            "and linked on the first send). Sending again creates nothing new.")

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        try:
            report = send_to_validation(find_project(opts["slug"]))
        except ValueError as exc:  # no such project, or a LinkError: nothing can be sent
            raise CommandError(str(exc)) from None
        if opts["json"]:
            self.stdout.write(json.dumps(report.as_dict()))
        else:
            self.stdout.write(f"sent {report.created} new pairs to {report.validation_project} "
                              f"({report.already_sent} sent before)")
