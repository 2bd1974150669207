import sys

from tqdm import tqdm

from annotation.management.project_command import ProjectCommand
from dataset_io.services.importers import IMPORT_FORMATS, import_file


class Command(ProjectCommand):
    help = "Import examples (or atoms) from a dataset file into a project. A file with any bad row imports nothing."

    def add_project_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--format", required=True, choices=IMPORT_FORMATS)
        parser.add_argument(
            "--map",
            action="append",
            default=[],
            metavar="FIELD=COLUMN",
            help="for jsonl/csv: which column holds id, premise, hypothesis, update or label",
        )
        parser.add_argument(
            "--map-label",
            action="append",
            default=[],
            metavar="VALUE=LABEL",
            help="read a label value the file writes as one of the study's labels "
            "(e.g. --map-label 0=contradiction); repeatable",
        )
        parser.add_argument(
            "--gold", action="store_true", help="import the rows as hidden gold checks (their label is the reference)"
        )
        parser.add_argument(
            "--qualification",
            action="store_true",
            help="import the rows as items of the project's qualification test (their label is the reference; "
            "a per-atom study's test items are picked on its page instead)",
        )

    def handle_project(self, project, opts):
        mapping = {}
        for pair in opts["map"]:
            field, sep, column = pair.partition("=")
            if not sep or not column:
                raise ValueError(f"--map takes FIELD=COLUMN, got {pair!r}")
            mapping[field.strip()] = column.strip()
        purpose = "gold" if opts["gold"] else "qualification" if opts["qualification"] else "data"
        with tqdm(desc="checking rows", unit=" lines", file=sys.stderr, disable=not sys.stderr.isatty()) as bar:

            def progress(done, total):
                bar.total = total
                bar.update(done - bar.n)

            try:
                report = import_file(
                    project,
                    opts["path"],
                    opts["format"],
                    mapping or None,
                    purpose=purpose,
                    progress=progress,
                    label_map=opts["map_label"],
                )
            except FileNotFoundError:
                raise ValueError(f"no such file: {opts['path']}") from None
        result = report.as_dict()
        return result, "\n".join(f"{key:>18}: {value}" for key, value in result.items())
