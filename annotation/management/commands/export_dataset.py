import time

from annotation.management.project_command import ProjectCommand
from annotation.services.exporters import FORMATS, record_export, write_export


class Command(ProjectCommand):
    help = "Export a project's data (streamed: memory does not grow with the project)."

    def add_project_arguments(self, parser):
        parser.add_argument("--format", required=True, choices=FORMATS)
        parser.add_argument("--output", required=True)

    def handle_project(self, project, opts):
        started = time.perf_counter()
        try:
            records = write_export(project, opts["format"], opts["output"])  # ExportError is a ValueError
        except OSError as exc:
            raise ValueError(f"cannot write {opts['output']}: {exc.strerror}") from None
        record_export(project, opts["format"], None, via="command line")
        result = {"records": records, "output": opts["output"], "seconds": round(time.perf_counter() - started, 3)}
        return result, f"wrote {records} records to {opts['output']}"
