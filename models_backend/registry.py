"""Registry of local checkpoints: what kind of model a folder holds, and loading it without any download.

Kinds:
- ``nli``: 3-way sequence classifier; label names come from the checkpoint's ``id2label``.
- ``unli``: one-output regressor; a sigmoid is applied when the config carries ``nli_studio_output="sigmoid"``
  (checkpoints written by ``train_unli`` do).
- ``defeasible``: sequence classifier over update types (strengthener / weakener, ...).
- ``acceptability``: sentence classifier (CoLA-style) with a label named ``acceptable`` (else label 1).
- ``causal_lm``: a causal language model, for choice scoring, generation and perplexity.
"""

from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

from .devices import bf16_linear, load_dtype, onednn_linear, pick_precision, quantise_int8
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


def inspect_checkpoint(path: str | Path, kind: str | ModelKind | None = None) -> ModelSpec:
    """Read a checkpoint's config and decide (or check) its kind. Raises ModelError naming the folder."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise ModelError(f"model folder {path} does not exist")
    if not (path / "config.json").is_file():
        raise ModelError(f"model folder {path} has no config.json: not a transformers checkpoint")
    try:
        config = AutoConfig.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
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


def enc_indices(spec: ModelSpec) -> list[int]:
    """Positions of entailment, neutral, contradiction among the model's labels (matched by name prefix)."""
    lowered = [name.lower() for name in spec.label_names]
    indices = []
    for wanted in ENC_LABELS:
        matches = [i for i, name in enumerate(lowered) if name.startswith(wanted[:6])]
        if len(matches) != 1:
            raise ModelError(
                f"model folder {spec.path}: labels {list(spec.label_names)} do not name {wanted!r} exactly once"
            )
        indices.append(matches[0])
    return indices


def load_tokenizer(path: Path):
    try:
        return AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, TypeError) as exc:
        raise ModelError(f"model folder {path}: tokenizer cannot be loaded ({exc})") from exc


def load_model(spec: ModelSpec, device: torch.device, precision: str = "auto"):
    """Load (model, tokenizer) for inference on ``device`` in eval mode, at ``precision`` (see devices.py;
    ``auto``: half precision on CUDA, float32 on CPU)."""
    precision = pick_precision(device, precision)
    model_class = AutoModelForCausalLM if spec.kind is ModelKind.CAUSAL_LM else AutoModelForSequenceClassification
    tokenizer = load_tokenizer(spec.path)
    try:
        model = model_class.from_pretrained(spec.path, local_files_only=True, dtype=load_dtype(precision))
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelError(f"model folder {spec.path}: weights cannot be loaded ({exc})") from exc
    model.to(device).eval()
    if precision == "int8":
        quantise_int8(model)
    elif precision == "bf16-linear":
        bf16_linear(model)
    elif precision == "fp32" and device.type == "cpu" and spec.kind is not ModelKind.CAUSAL_LM:
        onednn_linear(model)  # generation and LM scoring keep torch's own layers (tied output embeddings)
    return model, tokenizer
