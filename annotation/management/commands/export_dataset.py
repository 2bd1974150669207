import json
import sys
import time

from django.core.management.base import BaseCommand, CommandError

from annotation.services.projects import find_project
from annotation.services.exporters import FORMATS, ExportError, record_export, write_export


class Command(BaseCommand):
    help = "Export a project's data (streamed: memory does not grow with the project)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--format", required=True, choices=FORMATS)
        parser.add_argument("--output", required=True)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        try:
            project = find_project(opts["slug"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        started = time.perf_counter()
        try:
            records = write_export(project, opts["format"], opts["output"])
        except ExportError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"cannot write {opts['output']}: {exc.strerror}") from None
        record_export(project, opts["format"], None, via="command line")
        result = {"records": records, "output": opts["output"], "seconds": round(time.perf_counter() - started, 3)}
        if opts["json"]:
            self.stdout.write(json.dumps(result))
        else:
            print(f"wrote {records} records to {opts['output']}", file=sys.stdout)
