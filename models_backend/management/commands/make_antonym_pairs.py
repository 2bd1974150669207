from pathlib import Path

from django.conf import settings

from models_backend.management.pipeline_command import PipelineCommand
from models_backend.pipelines.antonyms import make_antonym_pairs_file


class Command(PipelineCommand):
    help = (
        "Make antonym-replaced hypotheses H' and label (P,H), (H,H'), (H',H), (P,H') with a local NLI model; "
        "writes the `evaluate transitivity` input JSONL."
    )

    def add_pipeline_arguments(self, parser):
        parser.add_argument("--input", required=True, help="JSONL or CSV with id, premise, hypothesis")
        parser.add_argument("--nli-model", required=True, help="3-way NLI classifier folder")
        parser.add_argument("--output", required=True)
        parser.add_argument("--embedder", help="encoder folder for similarity ranking (default: packaged MiniLM)")
        parser.add_argument(
            "--scorer",
            help="causal LM (perplexity) or acceptability classifier folder; "
            "without it every candidate counts as acceptable",
        )
        parser.add_argument("--scorer-kind", choices=["causal_lm", "acceptability"])
        parser.add_argument(
            "--max-perplexity-ratio", type=float, default=2.0, help="LM scorer: keep H' when ppl(H') <= ratio * ppl(H)"
        )
        parser.add_argument(
            "--wordnet",
            default=str(Path(settings.VAR_DIR) / "wordnet" / "dict"),
            help="WordNet dict folder (default: var/wordnet/dict, see wordnet_install.sh)",
        )

    def handle(self, *args, **options):
        self.run_pipeline(
            options,
            lambda progress: make_antonym_pairs_file(
                options["input"],
                options["nli_model"],
                options["output"],
                options["wordnet"],
                embedder_dir=options["embedder"],
                scorer_dir=options["scorer"],
                scorer_kind=options["scorer_kind"],
                max_perplexity_ratio=options["max_perplexity_ratio"],
                batch_size=options["batch_size"],
                device=options["device"],
                progress=progress,
            ),
        )

    def describe(self, summary):
        return (
            f"{summary['written']} of {summary['rows']} hypotheses modified "
            f"(mutual entailment {summary['mutual_entailment']}, mutual contradiction "
            f"{summary['mutual_contradiction']}) -> {summary['output']}"
        )
