"""Registry of local checkpoints: what kind of model a folder holds, and loading it without any download.

Kinds:
- ``nli``: 3-way sequence classifier; label names come from the checkpoint's ``id2label``.
- ``unli``: one-output regressor; a sigmoid is applied when the config carries ``nli_studio_output="sigmoid"``
  (checkpoints written by ``train_unli`` do).
- ``defeasible``: sequence classifier over update types (strengthener / weakener, ...).
- ``acceptability``: sentence classifier (CoLA-style) with a label named ``acceptable`` (else label 1).
- ``causal_lm``: a causal language model, for choice scoring, generation and perplexity.
"""

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

from .checkpoint_spec import (  # noqa: F401 - the registry's own names, used by its callers
    ENC_LABELS,
    HYPOTHESIS_ONLY_KEY,
    OUTPUT_ACTIVATION_KEY,
    ModelError,
    ModelSpec,
    inspect_checkpoint,
)
from .devices import bf16_linear, load_dtype, onednn_linear, pick_precision, quantise_int8
from .model_kinds import ModelKind


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
