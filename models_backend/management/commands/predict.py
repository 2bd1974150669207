from pathlib import Path

from django.core.management.base import CommandError

from models_backend.devices import PRECISIONS
from models_backend.lm_scoring import ChoicePrompt
from models_backend.management.pipeline_command import PipelineCommand
from models_backend.prediction import FORMATS, predict_file
from models_backend.registry import ModelKind


class Command(PipelineCommand):
    help = "Run a local classifier or regressor checkpoint over a JSONL/CSV file of premise-hypothesis pairs."

    def add_pipeline_arguments(self, parser):
        parser.add_argument("--model", required=True, help="checkpoint folder (transformers format)")
        parser.add_argument(
            "--input", required=True, help="JSONL or CSV with id, premise, hypothesis (or id, pre, hyp)"
        )
        parser.add_argument("--output", required=True)
        parser.add_argument(
            "--format",
            choices=FORMATS,
            default="jsonl",
            help="jsonl (default), chaosnli (3-way classifiers), csv (id,prediction for regressors)",
        )
        parser.add_argument(
            "--kind",
            choices=[k.value for k in ModelKind],
            help="model kind when the config does not tell (causal_lm: multiple-choice scoring)",
        )
        parser.add_argument(
            "--prompt-template",
            help="file with the choice prompt template for a causal LM "
            "(placeholders {premise}, {hypothesis}, {options})",
        )
        parser.add_argument("--max-length", type=int, help="truncate pairs to this many tokens")
        parser.add_argument(
            "--precision",
            choices=PRECISIONS,
            default="auto",
            help="auto (fp16 on CUDA, fp32 on CPU), fp32, bf16-linear (faster CPU path on CPUs with "
            "bfloat16 units: bfloat16 linear layers), int8 (faster CPU path: int8 linear "
            "layers), fp16 or bf16 (CUDA)",
        )
        parser.add_argument("--name", help="model name in the chaosnli output (default: the folder name)")

    def handle(self, *args, **options):
        prompt = None
        if options["prompt_template"]:
            try:
                prompt = ChoicePrompt(template=Path(options["prompt_template"]).read_text(encoding="utf-8"))
            except OSError as exc:
                raise CommandError(f"--prompt-template: {exc}") from exc
        self.run_pipeline(
            options,
            lambda progress: predict_file(
                options["model"],
                options["input"],
                options["output"],
                output_format=options["format"],
                batch_size=options["batch_size"],
                device=options["device"],
                kind=options["kind"],
                max_length=options["max_length"],
                model_name=options["name"],
                prompt=prompt,
                progress=progress,
                precision=options["precision"],
            ),
        )

    def describe(self, summary):
        return (
            f"{summary['rows']} rows in {summary['seconds']:.2f} s ({summary['rows_per_s']} rows/s) "
            f"on {summary['device']} ({summary['precision']}) -> {summary['output']}"
        )
