import json

from django.core.management.base import BaseCommand

from common.commands import errors_as_command_errors
from models_backend.dataio import InputError
from models_backend.progress import stderr_bar
from models_backend.registry import ModelError
from models_backend.training.unli import LOSSES, UnliSettings, train_unli

DEFAULTS = UnliSettings()


class Command(BaseCommand):
    help = (
        "Train a UNLI regressor (encoder -> linear -> sigmoid) on U-SNLI CSV files and save it with a model card. "
        "The defaults are the best recipe measured (docs/models.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--base", help="encoder checkpoint folder (default: the packaged MiniLM)")
        parser.add_argument("--train", required=True, help="U-SNLI CSV (id,pre,hyp,...,unli)")
        parser.add_argument("--eval", required=True, help="U-SNLI CSV for the reported metrics")
        parser.add_argument("--output", required=True, help="folder for the checkpoint and model card")
        # Recipe options default to None: whatever is not given comes from UnliSettings.
        parser.add_argument("--epochs", type=int, help=f"U-SNLI epochs (default {DEFAULTS.epochs})")
        parser.add_argument("--loss", choices=LOSSES, help=f"U-SNLI loss (default {DEFAULTS.loss})")
        parser.add_argument("--margin", type=float, help=f"ranking hinge margin (default {DEFAULTS.margin})")
        parser.add_argument(
            "--cross-pairs",
            type=int,
            help=f"K cross-premise pairs per row, ranking loss (default {DEFAULTS.cross_pairs})",
        )
        parser.add_argument(
            "--rank-weight",
            type=float,
            help=f"weight of an in-batch ranking hinge beside BCE (default {DEFAULTS.rank_weight})",
        )
        parser.add_argument(
            "--hypothesis-only", action="store_true", default=None, help="train and predict on hypotheses alone"
        )
        parser.add_argument("--seed", type=int, help=f"default {DEFAULTS.seed}")
        parser.add_argument(
            "--seeds",
            type=int,
            help=f"fine-tune the pre-trained model this many times (seed, "
            f"seed + 1, ...) and save their weight average (default {DEFAULTS.seeds})",
        )
        parser.add_argument("--batch-size", type=int, help=f"default {DEFAULTS.batch_size}")
        parser.add_argument("--lr", type=float, help=f"peak learning rate of every stage (default {DEFAULTS.lr})")
        parser.add_argument("--max-length", type=int, help=f"tokens per pair (default {DEFAULTS.max_length})")
        parser.add_argument(
            "--dropout",
            type=float,
            help="dropout rate of every dropout layer while training (default: the base model's)",
        )
        parser.add_argument("--max-train", type=int, help="use only the first N training rows")
        parser.add_argument(
            "--pretrain-snli",
            help=f"SNLI JSONL (premise, hypothesis, label) for surrogate pre-training (default {DEFAULTS.pretrain_snli})",
        )
        parser.add_argument(
            "--pretrain-chaosnli",
            nargs="*",
            help=f"ChaosNLI JSONL files, targets = expected surrogate under the vote distribution "
            f"(default {' '.join(DEFAULTS.pretrain_chaosnli) or 'none'})",
        )
        parser.add_argument(
            "--pretrain-dnli",
            help=f"delta-NLI JSONL for (strengthened > weakened) ranking pairs (default {DEFAULTS.pretrain_dnli})",
        )
        parser.add_argument("--no-pretrain", action="store_true", help="no surrogate pre-training at all")
        parser.add_argument("--pretrain-epochs", type=int, help=f"default {DEFAULTS.pretrain_epochs}")
        parser.add_argument("--max-pretrain", type=int, help="use only the first N SNLI rows")
        parser.add_argument(
            "--with-baseline",
            action="store_true",
            help="also train the same recipe on hypotheses alone and print its scores",
        )
        parser.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: cuda if available)")
        parser.add_argument("--json", action="store_true", help="print the metrics as one JSON line")

    def handle(self, *args, **options):
        given = {name: options[name] for name in UnliSettings.__dataclass_fields__ if options.get(name) is not None}
        settings = UnliSettings(**given)
        if options["no_pretrain"]:
            settings = settings.without_pretraining()
        with (
            errors_as_command_errors(InputError, ModelError, ValueError),
            stderr_bar("train_unli", unit="step") as progress,
        ):
            result = train_unli(
                options["output"],
                options["train"],
                options["eval"],
                settings,
                base=options["base"],
                device=options["device"],
                progress=progress,
                baseline=options["with_baseline"],
            )
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        baseline = result.get("baseline", {})
        self.stdout.write(f"{'':>10}  {'model':>8}" + (f"  {'hypothesis only':>15}" if baseline else ""))
        for key in ("pearson", "spearman", "mse"):
            self.stdout.write(f"{key:>10}  {result[key]:8.4f}" + (f"  {baseline[key]:15.4f}" if baseline else ""))
        self.stdout.write(f"{'n_train':>10}  {result['n_train']}\n{'n_eval':>10}  {result['n_eval']}")
        self.stdout.write(f"{'seconds':>10}  {result['seconds']:.1f}\n{'output':>10}  {result['output']}")
