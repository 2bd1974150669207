import sys
import time

from tqdm import tqdm

from annotation.formats import FORMATS, ExportOptions
from annotation.management.project_command import ProjectCommand
from annotation.services.exporters import record_export, write_export
from annotation.services.records import FREE_TEXT_CHOICES


class Command(ProjectCommand):
    help = (
        "Export a project's data in one format, or with --bundle every fitting format with its instrument "
        "versions, data statement and validation in one zip (streamed: memory does not grow with the project)."
    )

    def add_project_arguments(self, parser):
        parser.add_argument("--format", choices=list(FORMATS), help="the format (not with --bundle)")
        parser.add_argument("--bundle", action="store_true", help="write the dataset bundle (a zip) instead")
        parser.add_argument("--output", required=True)
        parser.add_argument(
            "--include-gold",
            action="store_true",
            help="also write the gold checks, flagged with their pool and reference",
        )
        parser.add_argument(
            "--include-unanswered", action="store_true", help="also write items without a label or answer yet, flagged"
        )
        parser.add_argument(
            "--free-text",
            choices=FREE_TEXT_CHOICES,
            default="keep",
            help="the text workers typed (reasons, explanations, written sentences): keep it, omit it, or scrub "
            "e-mail addresses and phone numbers from it",
        )

    def handle_project(self, project, opts):
        if bool(opts["bundle"]) == bool(opts["format"]):
            raise ValueError("give --format F or --bundle (one of the two)")
        options = ExportOptions(
            include_gold=opts["include_gold"],
            include_unanswered=opts["include_unanswered"],
            free_text=opts["free_text"],
        )
        started = time.perf_counter()
        try:
            if opts["bundle"]:
                from annotation.services.bundle import write_bundle

                with tqdm(desc="bundle", unit=" steps", file=sys.stderr, disable=not sys.stderr.isatty()) as bar:

                    def progress(done, total):
                        bar.total = total
                        bar.update(done - bar.n)

                    statement = write_bundle(project, opts["output"], progress=progress, options=options)
                record_export(project, "bundle", None, via="command line", options=options)
                files = [{key: file[key] for key in ("name", "records", "valid")} for file in statement["files"]]
                result = {
                    "output": opts["output"],
                    "files": files,
                    "valid": all(f["valid"] for f in files),
                    "seconds": round(time.perf_counter() - started, 3),
                }
                return result, "\n".join(
                    [f"{f['name']}: {f['records']} records, {'valid' if f['valid'] else 'NOT VALID'}" for f in files]
                    + [f"wrote the bundle {opts['output']}"]
                )
            records = write_export(project, opts["format"], opts["output"], options=options)  # ExportError: ValueError
        except OSError as exc:
            raise ValueError(f"cannot write {opts['output']}: {exc.strerror}") from None
        record_export(project, opts["format"], None, via="command line", options=options)
        result = {"records": records, "output": opts["output"], "seconds": round(time.perf_counter() - started, 3)}
        return result, f"wrote {records} records to {opts['output']}"
