import json

from django.core.management.base import BaseCommand, CommandError

from models_backend.dataio import InputError
from models_backend.progress import stderr_bar
from models_backend.registry import ModelError
from models_backend.training.unli import UnliSettings, train_unli


class Command(BaseCommand):
    help = "Train a UNLI regressor (encoder -> linear -> sigmoid) on U-SNLI CSV files and save it with a model card."

    def add_arguments(self, parser):
        parser.add_argument("--base", help="encoder checkpoint folder (default: the packaged MiniLM)")
        parser.add_argument("--train", required=True, help="U-SNLI CSV (id,pre,hyp,...,unli)")
        parser.add_argument("--eval", required=True, help="U-SNLI CSV for the reported metrics")
        parser.add_argument("--output", required=True, help="folder for the checkpoint and model card")
        parser.add_argument("--epochs", type=int, default=3)
        parser.add_argument("--loss", choices=["bce", "rank"], default="bce")
        parser.add_argument("--margin", type=float, default=0.3, help="ranking loss margin")
        parser.add_argument("--cross-pairs", type=int, default=1, help="K cross-premise pairs per row (ranking loss)")
        parser.add_argument("--hypothesis-only", action="store_true")
        parser.add_argument("--seed", type=int, default=13)
        parser.add_argument("--batch-size", type=int, default=32)
        parser.add_argument("--lr", type=float, default=5e-5)
        parser.add_argument("--max-length", type=int, default=128)
        parser.add_argument("--max-train", type=int, help="use only the first N training rows")
        parser.add_argument("--pretrain-snli", help="SNLI JSONL (premise, hypothesis, label) for surrogate pre-training")
        parser.add_argument("--pretrain-epochs", type=int, default=1)
        parser.add_argument("--max-pretrain", type=int, help="use only the first N SNLI rows")
        parser.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: cuda if available)")
        parser.add_argument("--json", action="store_true", help="print the metrics as one JSON line")

    def handle(self, *args, **options):
        settings = UnliSettings(
            epochs=options["epochs"], batch_size=options["batch_size"], lr=options["lr"], loss=options["loss"],
            margin=options["margin"], cross_pairs=options["cross_pairs"], hypothesis_only=options["hypothesis_only"],
            seed=options["seed"], max_length=options["max_length"], max_train=options["max_train"],
            pretrain_snli=options["pretrain_snli"], pretrain_epochs=options["pretrain_epochs"],
            max_pretrain=options["max_pretrain"],
        )
        try:
            with stderr_bar("train_unli", unit="step") as progress:
                result = train_unli(options["output"], options["train"], options["eval"], settings,
                                    base=options["base"], device=options["device"], progress=progress)
        except (InputError, ModelError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        for key in ("pearson", "spearman", "mse"):
            self.stdout.write(f"{key:>10}  {result[key]:.4f}")
        self.stdout.write(f"{'n_train':>10}  {result['n_train']}\n{'n_eval':>10}  {result['n_eval']}")
        self.stdout.write(f"{'seconds':>10}  {result['seconds']:.1f}\n{'output':>10}  {result['output']}")
