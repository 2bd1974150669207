import json
import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotation.services.projects import find_project
from annotation.services.importers import FORMATS, ImportFileError, import_file


class Command(BaseCommand):
    help = "Import examples (or atoms) from a dataset file into a project. A file with any bad row imports nothing."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("path")
        parser.add_argument("--format", required=True, choices=FORMATS)
        parser.add_argument(
            "--map",
            action="append",
            default=[],
            metavar="FIELD=COLUMN",
            help="for jsonl/csv: which column holds id, premise, hypothesis, update or label",
        )
        parser.add_argument("--gold", action="store_true", help="import the rows as hidden gold checks (their label is the reference)")
        parser.add_argument("--qualification", action="store_true",
                            help="import the rows as items of the project's qualification test (their label is the reference)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        try:
            project = find_project(opts["slug"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        mapping = {}
        for pair in opts["map"]:
            field, sep, column = pair.partition("=")
            if not sep or not column:
                raise CommandError(f"--map takes FIELD=COLUMN, got {pair!r}")
            mapping[field.strip()] = column.strip()
        try:
            purpose = "gold" if opts["gold"] else "qualification" if opts["qualification"] else "data"
            with tqdm(desc="checking rows", unit=" lines", file=sys.stderr, disable=not sys.stderr.isatty()) as bar:
                def progress(done, total):
                    bar.total = total
                    bar.update(done - bar.n)

                report = import_file(project, opts["path"], opts["format"], mapping or None, purpose=purpose,
                                     progress=progress)
        except FileNotFoundError:
            raise CommandError(f"no such file: {opts['path']}") from None
        except (ImportFileError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        result = report.as_dict()
        if opts["json"]:
            self.stdout.write(json.dumps(result))
        else:
            for key, value in result.items():
                self.stdout.write(f"{key:>18}: {value}")
