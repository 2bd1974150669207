"""What a checkpoint folder holds, read from its config.json alone: its kind, its labels, the settings this
project writes into what it trains. No torch and no transformers: listing the checkpoints (the models pages, a
worker's start) reads every folder, and importing those costs seconds (registry.py loads models and imports them).
"""

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from .model_kinds import ModelKind

# Config keys this project writes into checkpoints it trains.
OUTPUT_ACTIVATION_KEY = "nli_studio_output"
HYPOTHESIS_ONLY_KEY = "nli_studio_hypothesis_only"

ENC_LABELS = ("entailment", "neutral", "contradiction")


class ModelError(Exception):
    """A checkpoint folder is missing, unreadable, or does not fit the requested use."""


@dataclass(frozen=True)
class ModelSpec:
    path: Path
    kind: ModelKind
    label_names: tuple[str, ...]
    sigmoid: bool = False
    hypothesis_only: bool = False

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def is_classifier(self) -> bool:
        return self.kind in (ModelKind.NLI, ModelKind.DEFEASIBLE, ModelKind.ACCEPTABILITY)


def _architecture_family(architectures: list[str]) -> str | None:
    for arch in architectures:
        if arch.endswith("ForSequenceClassification"):
            return "sequence_classification"
        if arch.endswith(("ForCausalLM", "LMHeadModel")):
            return "causal_lm"
    return None


def _label_names(config) -> tuple[str, ...]:
    id2label = getattr(config, "id2label", None) or {}
    return tuple(str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(config.num_labels))


class _Config(SimpleNamespace):
    """config.json's fields as attributes, as transformers' config object offers them."""


def _read_config(path: Path) -> _Config:
    """A checkpoint's config.json read as transformers reads the fields used here: a label map gives the
    number of labels (its num_labels then follows it), else num_labels, else 2."""
    fields = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(fields, dict):
        raise ValueError("it is not a JSON object")
    id2label = fields.get("id2label") or None
    if id2label is not None and not isinstance(id2label, dict):
        raise ValueError("id2label is not an object")
    num_labels = len(id2label) if id2label else fields.get("num_labels", 2)
    if not isinstance(num_labels, int) or num_labels < 0:
        raise ValueError(f"num_labels is {num_labels!r}")
    return _Config(**{**fields, "id2label": id2label, "num_labels": num_labels})


def inspect_checkpoint(path: str | Path, kind: str | ModelKind | None = None) -> ModelSpec:
    """Read a checkpoint's config and decide (or check) its kind. Raises ModelError naming the folder."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise ModelError(f"model folder {path} does not exist")
    if not (path / "config.json").is_file():
        raise ModelError(f"model folder {path} has no config.json: not a transformers checkpoint")
    try:
        config = _read_config(path / "config.json")
    except (OSError, ValueError) as exc:
        raise ModelError(f"model folder {path}: config.json cannot be read ({exc})") from exc

    architectures = list(getattr(config, "architectures", None) or [])
    family = _architecture_family(architectures)
    labels = _label_names(config)
    lowered = [name.lower() for name in labels]
    if kind is None:
        if family == "causal_lm":
            kind = ModelKind.CAUSAL_LM
        elif family == "sequence_classification" and config.num_labels == 1:
            kind = ModelKind.UNLI
        elif family == "sequence_classification" and any(name.startswith(("strengthen", "weaken")) for name in lowered):
            kind = ModelKind.DEFEASIBLE
        elif family == "sequence_classification" and "acceptable" in lowered:
            kind = ModelKind.ACCEPTABILITY
        elif family == "sequence_classification" and config.num_labels == 3:
            kind = ModelKind.NLI
        else:
            raise ModelError(
                f"model folder {path}: cannot tell its kind (architectures {architectures or 'none'}, "
                f"{config.num_labels} labels); pass the kind explicitly"
            )
    kind = ModelKind(kind)

    if kind is ModelKind.CAUSAL_LM:
        if family != "causal_lm":
            raise ModelError(f"model folder {path}: architectures {architectures or 'none'} are not a causal LM")
    else:
        if family != "sequence_classification":
            raise ModelError(
                f"model folder {path}: architectures {architectures or 'none'} have no sequence "
                f"classification head, so it cannot serve as a {kind.value} model"
            )
        expected = {
            ModelKind.NLI: config.num_labels == 3,
            ModelKind.UNLI: config.num_labels == 1,
            ModelKind.DEFEASIBLE: config.num_labels >= 2,
            ModelKind.ACCEPTABILITY: config.num_labels >= 2,
        }[kind]
        if not expected:
            raise ModelError(
                f"model folder {path}: {config.num_labels} output labels do not fit a {kind.value} model "
                f"(nli needs 3, unli 1, defeasible and acceptability at least 2)"
            )
    return ModelSpec(
        path=path,
        kind=kind,
        label_names=labels if kind is not ModelKind.CAUSAL_LM else (),
        sigmoid=getattr(config, OUTPUT_ACTIVATION_KEY, None) == "sigmoid",
        hypothesis_only=bool(getattr(config, HYPOTHESIS_ONLY_KEY, False)),
    )


def trained_length(model_dir: Path) -> int | None:
    """Tokens per pair the checkpoint was trained with (train_unli's model card), else what its position
    embeddings allow, else None (the tokenizer's own limit)."""
    try:
        return int(json.loads((model_dir / "model_card.json").read_text())["settings"]["max_length"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        return int(json.loads((model_dir / "config.json").read_text())["max_position_embeddings"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
