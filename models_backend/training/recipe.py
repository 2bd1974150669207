"""The UNLI training recipe and its defaults (the best one measured), importable without torch: the browser
form of the training job declares its settings from it when the app starts."""

from dataclasses import dataclass, field, replace

from .auxiliary import SNLI_FILE, shared_file

LOSSES = ("bce", "rank")
# Below this many training rows a fine-tuning's figures say more about the sample than about the recipe (the
# U-SNLI paper trains on 55,517): the training's result and its page warn (docs/models.md, "UNLI training").
MIN_TRAINING_ROWS = 1000


def few_rows_warning(n_train: int) -> str | None:
    if n_train >= MIN_TRAINING_ROWS:
        return None
    return (
        f"trained on only {n_train} rows (fewer than {MIN_TRAINING_ROWS}): its figures say more about these "
        "rows than about the recipe"
    )


@dataclass
class UnliSettings:
    """The training recipe; the defaults are the best one measured (docs/models.md, "Results")."""

    epochs: int = 2
    batch_size: int = 32
    lr: float = 8e-5
    loss: str = "bce"
    margin: float = 0.3
    cross_pairs: int = 1
    rank_weight: float = 0.0
    hypothesis_only: bool = False
    seed: int = 13
    seeds: int = 2  # fine-tunings of the pre-trained model (seed, seed + 1, ...), averaged weight by weight
    max_length: int = 64
    dropout: float | None = None  # every dropout layer's rate while training; None: the base model's own
    max_train: int | None = None
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    pretrain_snli: str | None = field(default_factory=lambda: shared_file(SNLI_FILE))
    pretrain_chaosnli: list[str] = field(default_factory=list)
    pretrain_dnli: str | None = None
    pretrain_epochs: int = 2
    max_pretrain: int | None = None

    def without_pretraining(self) -> "UnliSettings":
        return replace(self, pretrain_snli=None, pretrain_chaosnli=[], pretrain_dnli=None)
