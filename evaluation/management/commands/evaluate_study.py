import tempfile
from pathlib import Path

from django.core.management.base import CommandError

from annotation.models import Project
from models_backend.devices import PRECISIONS
from models_backend.management.pipeline_command import PipelineCommand


class Command(PipelineCommand):
    help = (
        "Score one or more checkpoints on a study's settled items with every figure of its protocol "
        "(docs/models.md, 'Evaluating a study'); each model's figures under its name."
    )
    bar_unit = "input"

    def add_pipeline_arguments(self, parser):
        parser.add_argument("study", help="the study's slug")
        parser.add_argument(
            "--model", action="append", required=True, help="checkpoint folder; repeat it for several models"
        )
        parser.add_argument(
            "--collected-only", action="store_true", help="leave out items whose reference value is imported"
        )
        parser.add_argument(
            "--baseline",
            help="slider studies: checkpoint folder run on the hypotheses alone (the U-SNLI paper's baseline)",
        )
        parser.add_argument("--output", help="folder for each model's suite files (default: a temporary one)")
        parser.add_argument("--precision", choices=PRECISIONS, default="auto")
        parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the human baselines")
        parser.add_argument("--bootstrap", type=int, default=1000, help="resamples for the intervals")
        parser.add_argument(
            "--alt-test-min-items",
            type=int,
            default=30,
            help="label-distribution studies: items an annotator shares with others",
        )
        parser.add_argument("--weighted", action="store_true", help="defeasible: I_C weighted by bucket support")
        parser.add_argument("--bucket-nli", help="defeasible: NLI checkpoint that groups equivalent atoms")
        parser.add_argument("--bucket-embedder", help="with --bucket-nli: sentence encoder (default: MiniLM)")

    def handle(self, *args, **options):
        from evaluation.study_evaluation.protocols import Settings
        from evaluation.study_evaluation.scoring import evaluate_folders

        project = Project.objects.filter(slug=options["study"]).first()
        if project is None:
            raise CommandError(f"study: no study with the slug {options['study']!r}")
        settings = Settings(
            batch_size=options["batch_size"],
            precision=options["precision"],
            device=options["device"],
            seed=options["seed"],
            bootstrap=options["bootstrap"],
            alt_test_min_items=options["alt_test_min_items"],
            weighted=options["weighted"],
            bucket_nli=options["bucket_nli"],
            bucket_embedder=options["bucket_embedder"],
        )
        with tempfile.TemporaryDirectory() as scratch:
            output = Path(options["output"] or scratch)
            self.run_pipeline(
                options,
                lambda progress: evaluate_folders(
                    project,
                    options["model"],
                    output,
                    settings,
                    collected_only=options["collected_only"],
                    baseline=options["baseline"],
                    progress=progress,
                ),
            )

    def describe(self, summary):
        from evaluation.study_evaluation.protocols import headline_rows

        reference = summary["reference"]
        sources = ", ".join(f"{n} {source}" for source, n in reference["sources"].items())
        counted = (
            f"{reference['items']} examples, {reference['atoms']} atoms"
            if "atoms" in reference
            else f"{reference['items']} items"
        )
        lines = [f"{summary['study_protocol']}: {counted} as reference ({sources})"]
        lines += [f"warning: {warning}" for warning in reference["warnings"]]
        human = summary["human_baseline"]
        lines.append("people: " + ", ".join(f"{key} {value}" for key, value in human.items()))
        for row in headline_rows(summary):
            figures = "  ".join(
                f"{name} {value:.4f}" if isinstance(value, float) else f"{name} {value}"
                for name, value in row.items()
                if name != "model"
            )
            lines.append(f"{row['model']}: {figures}")
        return "\n".join(lines)
