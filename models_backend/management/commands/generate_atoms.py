from models_backend.management.pipeline_command import PipelineCommand
from models_backend.pipelines.atoms import generate_atoms_file


class Command(PipelineCommand):
    bar_unit = "hypothesis"
    default_batch_size = 8
    help = (
        "Decompose hypotheses into atoms with a local causal LM, prune them with a local NLI model, write atoms JSONL."
    )

    def add_pipeline_arguments(self, parser):
        parser.add_argument("--lm", required=True, help="causal LM checkpoint folder")
        parser.add_argument("--nli-model", required=True, help="3-way NLI classifier folder used for pruning")
        parser.add_argument("--input", required=True, help="JSONL or CSV with id, premise, hypothesis")
        parser.add_argument("--output", required=True, help='atoms JSONL: {"example_id", "atoms"} per row')
        parser.add_argument("--defeasible", action="store_true", help="also drop atoms the premise entails")
        parser.add_argument("--max-new-tokens", type=int, default=80)

    def handle(self, *args, **options):
        self.run_pipeline(
            options,
            lambda progress: generate_atoms_file(
                options["lm"],
                options["nli_model"],
                options["input"],
                options["output"],
                defeasible=options["defeasible"],
                max_new_tokens=options["max_new_tokens"],
                batch_size=options["batch_size"],
                device=options["device"],
                progress=progress,
            ),
        )

    def describe(self, summary):
        return (
            f"{summary['rows']} examples, {summary['candidate_atoms']} candidate atoms, "
            f"{summary['kept_atoms']} kept -> {summary['output']}"
        )
