import json

from django.core.management.base import BaseCommand, CommandError

from dataset_io.formats import Names
from dataset_io.services.validation import validate_file

SHOWN_ERRORS = 50
INVALID, INPUT_ERROR = 1, 2


class Command(BaseCommand):
    help = (
        "Check a dataset file against the published shape of its format (field names, types, value ranges, "
        "label orders, per-row consistency such as label_count and entropy). Exit 0: valid; 1: it is not, "
        "every problem listed with its line and field; 2: the file cannot be read."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--format", required=True, choices=Names())
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        try:
            report = validate_file(opts["file"], opts["format"])
        except OSError as error:
            raise CommandError(f"cannot read {opts['file']}: {error.strerror}", returncode=INPUT_ERROR) from None
        if opts["json"]:
            self.stdout.write(json.dumps({"file": opts["file"], **report.as_dict()}))
        else:
            lines = [
                f"line {e.line}, field {e.field!r}: {e.message}" if e.line else f"field {e.field!r}: {e.message}"
                for e in report.errors[:SHOWN_ERRORS]
            ]
            if report.errors_total > SHOWN_ERRORS:
                lines.append(f"... and {report.errors_total - SHOWN_ERRORS} more")
            verdict = (
                "valid" if report.valid else f"{report.errors_total} problem{'s' if report.errors_total != 1 else ''}"
            )
            self.stdout.write(
                "\n".join([*lines, f"{opts['file']}: {report.records} records, {verdict} ({opts['format']})"])
            )
        if not report.valid:
            raise SystemExit(INVALID)
