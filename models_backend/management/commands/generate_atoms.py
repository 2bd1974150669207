import json

from django.core.management.base import BaseCommand, CommandError

from models_backend.dataio import InputError
from models_backend.pipelines.atoms import generate_atoms_file
from models_backend.progress import stderr_bar
from models_backend.registry import ModelError


class Command(BaseCommand):
    help = "Decompose hypotheses into atoms with a local causal LM, prune them with a local NLI model, write atoms JSONL."

    def add_arguments(self, parser):
        parser.add_argument("--lm", required=True, help="causal LM checkpoint folder")
        parser.add_argument("--nli-model", required=True, help="3-way NLI classifier folder used for pruning")
        parser.add_argument("--input", required=True, help="JSONL or CSV with id, premise, hypothesis")
        parser.add_argument("--output", required=True, help="atoms JSONL: {\"example_id\", \"atoms\"} per row")
        parser.add_argument("--defeasible", action="store_true", help="also drop atoms the premise entails")
        parser.add_argument("--max-new-tokens", type=int, default=80)
        parser.add_argument("--batch-size", type=int, default=8)
        parser.add_argument("--device", help="cpu, cuda, ... (default: cuda if available)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        try:
            with stderr_bar("generate_atoms", unit="hypothesis") as progress:
                summary = generate_atoms_file(
                    options["lm"], options["nli_model"], options["input"], options["output"],
                    defeasible=options["defeasible"], max_new_tokens=options["max_new_tokens"],
                    batch_size=options["batch_size"], device=options["device"], progress=progress,
                )
        except (InputError, ModelError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(summary))
            return
        self.stdout.write(
            f"{summary['rows']} examples, {summary['candidate_atoms']} candidate atoms, "
            f"{summary['kept_atoms']} kept -> {summary['output']}"
        )
