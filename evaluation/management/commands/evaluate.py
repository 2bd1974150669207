"""`manage.py evaluate SUITE ...`: score model predictions with one of the evaluation suites.

Thin wrapper over `evaluation.suites`: parse arguments, run the suite, print a table, or with --json one
JSON object as the last line of stdout. With --save the run is also stored (evaluation.runs) and shows up
on /evaluation/; inputs are read and checked before anything is stored. Bad input (a file, line and field
named in one line) and bad options exit with status 2. docs/metrics.md describes every suite, metric and
file format.
"""

import json
import tempfile
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from common.commands import errors_as_command_errors
from evaluation import runs, suites
from evaluation.readers import InputError
from evaluation.runs import RunError
from evaluation.tables import show, split_result, table_cells

# Exit status of bad input or options, as argparse uses for a bad command line.
INPUT_ERROR = 2


class Command(BaseCommand):
    help = "Evaluate predictions: unli, chaos, nli-atoms, defeasible, transitivity, epistemic, alt-test."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="suite", required=True, metavar="SUITE")

        unli = sub.add_parser("unli", help="U-SNLI probabilities: Pearson, Spearman, MSE")
        unli.add_argument("--gold", help="U-SNLI CSV: id,pre,hyp,nli,unli")
        unli.add_argument(
            "--project", help="instead of --gold: a slider project's final (adjudicated or median) labels"
        )
        unli.add_argument("--predictions", required=True, help="CSV id,prediction or JSONL {id, prediction}")

        chaos = sub.add_parser("chaos", help="ChaosNLI: model vs human label distributions")
        chaos.add_argument("--human", help="ChaosNLI JSONL")
        chaos.add_argument("--project", help="instead of --human: a 3-way label project's votes")
        chaos.add_argument("--predictions", required=True, help="ChaosNLI prediction JSON or JSONL rows")
        runs.get_suite("chaos").settings.add_arguments(chaos)

        atoms = sub.add_parser("nli-atoms", help="logical consistency of full vs atom labels")
        atoms.add_argument("--input", required=True, help="atomic NLI JSONL")

        defeasible = sub.add_parser("defeasible", help="defeasible atoms: critical atoms, inferential consistency")
        defeasible.add_argument("--input", required=True, help="defeasible atoms JSONL")
        runs.get_suite("defeasible").settings.add_arguments(defeasible)
        defeasible.add_argument(
            "--nli-model",
            help="build buckets of equivalent atoms with this local NLI checkpoint "
            "(entailment both ways) instead of reading bucket ids from the file",
        )
        defeasible.add_argument(
            "--embedder",
            help="with --nli-model: sentence encoder for the cosine >= 0.75 test (default: the packaged MiniLM)",
        )
        defeasible.add_argument("--device", help="with --nli-model: cpu, cuda, ... (default: cuda if available)")

        transitivity = sub.add_parser("transitivity", help="transitive self-consistency")
        transitivity.add_argument("--input", required=True, help="transitivity JSONL")

        epistemic = sub.add_parser("epistemic", help="epistemic closure filters: generate or score")
        mode = epistemic.add_mutually_exclusive_group(required=True)
        mode.add_argument("--generate", action="store_true", help="build the data set from SNLI")
        mode.add_argument("--score", action="store_true", help="score predictions on a generated data set")
        epistemic.add_argument("--snli", help="SNLI JSONL (premise, hypothesis, label) for --generate")
        epistemic.add_argument("--per-template", type=int, default=300, help="rows per template and label")
        epistemic.add_argument("--seed", type=int, default=0)
        epistemic.add_argument("--output", help="JSONL file to write with --generate")
        epistemic.add_argument("--input", help="generated JSONL for --score")
        epistemic.add_argument("--predictions", help="JSONL {id or index, label} for --score")

        alt_test = sub.add_parser("alt-test", help="alternative annotator test: may the model replace the annotators?")
        alt_test.add_argument(
            "--annotations", required=True, help="JSONL {id, annotator, label}, or a study's annotations export"
        )
        alt_test.add_argument("--predictions", required=True, help="ChaosNLI prediction JSON or JSONL rows")
        runs.get_suite("alt-test").settings.add_arguments(alt_test)

        for suite_parser in (unli, chaos, atoms, defeasible, transitivity, epistemic, alt_test):
            suite_parser.add_argument("--json", action="store_true", help="print one JSON object (last line)")
            suite_parser.add_argument(
                "--save",
                action="store_true",
                help="store the run (inputs copied with sha256 checksums) to browse later",
            )
            suite_parser.add_argument("--user", help="with --save: the username the run belongs to")

    def handle(self, *args, **options):
        run = None
        self.scratch = tempfile.TemporaryDirectory()
        try:
            with errors_as_command_errors(InputError, RunError, returncode=INPUT_ERROR):
                if options["save"]:
                    run = self.save_run(options)
                    result = run.result
                else:
                    result = self.run_suite(options)
        except OSError as error:
            raise CommandError(f"{error.filename}: {error.strerror}", returncode=INPUT_ERROR) from None
        finally:
            self.scratch.cleanup()
        if options["json"]:
            if run:
                self.stderr.write(f"stored as evaluation run {run.pk}")
            self.stdout.write(json.dumps(result, allow_nan=False))
        else:
            self.stdout.write(format_table(result))
            if run:
                self.stdout.write(f"\nstored as evaluation run {run.pk}")

    def run_suite(self, options) -> dict:
        if options["suite"] == "epistemic" and options["generate"]:
            needed = ("snli", "output")
            self.require(options, needed, "--generate")
            if options["per_template"] < 1:
                raise CommandError("--per-template must be at least 1", returncode=INPUT_ERROR)
            return suites.run_epistemic_generate(
                options["snli"], options["per_template"], options["seed"], options["output"]
            )
        if options["suite"] == "defeasible" and options.get("nli_model"):
            return self.defeasible_with_models(options)
        paths, params = self.suite_inputs(options)
        return runs.run_suite(options["suite"], paths, params)

    def defeasible_with_models(self, options) -> dict:
        from models_backend.pipelines.equivalence import nli_entailment, sentence_embedder
        from models_backend.registry import ModelError

        with errors_as_command_errors(ModelError):
            embed = sentence_embedder(options.get("embedder"), options.get("device"))
            entails = nli_entailment(options["nli_model"], options.get("device"))
        settings = runs.clean_parameters("defeasible", runs.get_suite("defeasible").settings.given(options))
        return suites.run_defeasible(options["input"], embed=embed, entails=entails, **settings)

    def save_run(self, options):
        """Check the inputs, store the run (inputs copied with checksums) and score it here. Bad input stores
        nothing (start_run raises RunError); a suite that fails on checked input is stored as failed."""
        if options["suite"] == "epistemic" and options["generate"]:
            raise CommandError(
                "--save stores scoring runs; epistemic --generate writes a data set", returncode=INPUT_ERROR
            )
        if options.get("nli_model"):
            raise CommandError(
                "--save stores runs over files; buckets built with --nli-model are not stored yet",
                returncode=INPUT_ERROR,
            )
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"--user: no user named {options['user']!r}", returncode=INPUT_ERROR)
        paths, params = self.suite_inputs(options)
        run = runs.start_run(options["suite"], params, paths, user, background=False)
        if run.status == run.Status.FAILED:
            raise CommandError(f"{run.error} (stored as failed evaluation run {run.pk})")
        return run

    def suite_inputs(self, options) -> tuple[dict, dict]:
        """The suite's input files (role -> path) and settings, from the command-line options."""
        suite = runs.get_suite(options["suite"])
        if suite.name == "epistemic":
            self.require(options, ("input", "predictions"), "--score")
        paths = {role: options.get(role) for role in suite.files}
        gold_role = {"unli": "gold", "chaos": "human"}.get(suite.name)
        if gold_role and options.get("project"):
            paths[gold_role] = self.project_gold(options["project"], "usnli" if suite.name == "unli" else "chaosnli")
        elif gold_role and not paths[gold_role]:
            raise CommandError(f"{suite.name} needs --{gold_role} or --project", returncode=INPUT_ERROR)
        params = suite.settings.given(options)
        return paths, params

    def project_gold(self, slug: str, fmt: str) -> str:
        """A project's gold written in the suite's file format, through the same exporter users download."""
        from annotation.models import Project
        from dataset_io.formats import ExportOptions
        from dataset_io.services.exporters import write_export

        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"--project: no project with the slug {slug!r}", returncode=INPUT_ERROR)
        path = Path(self.scratch.name) / f"{slug}.{fmt}"
        write_export(project, fmt, path, options=ExportOptions(study_gold=True))
        return str(path)

    @staticmethod
    def require(options, names, mode):
        missing = [f"--{name.replace('_', '-')}" for name in names if not options.get(name)]
        if missing:
            raise CommandError(f"epistemic {mode} needs {' and '.join(missing)}", returncode=INPUT_ERROR)


def format_table(result: dict) -> str:
    """Readable text: one `name  value` line per scalar (nested names joined with dots), and a small
    aligned table for each list of rows (bins, cells, buckets)."""
    scalars, tables = split_result(result)
    width = max((len(name) for name, _ in scalars), default=0)
    lines = [f"{name:<{width}}  {show(value)}" for name, value in scalars]
    for name, rows in tables:
        columns, cells = table_cells(rows)
        widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)]
        lines += ["", f"{name}:", "  ".join(c.ljust(w) for c, w in zip(columns, widths))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in cells]
    return "\n".join(lines)
