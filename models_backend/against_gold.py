"""Score a checkpoint against a gold file: a UNLI regressor against U-SNLI probabilities (Pearson r, Spearman
rho, MSE), a 3-way NLI classifier against SNLI-style gold labels (accuracy). The per-pair predictions are
written beside the gold, so a study's author can see where the model and the study part ways."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import numpy as np

from common.vocabulary import NLI, NO_GOLD, LabelError, long_name, to_label
from metrics.classification import accuracy
from metrics.regression import unli_scores

from .dataio import InputError, iter_records, read_pairs, read_usnli
from .devices import pick_device, pick_precision
from .registry import ModelError, ModelKind, enc_indices, inspect_checkpoint, load_model
from .runner import Progress, predict_pairs

GOLD_LABEL_FIELDS = ("gold_label", "label")
SCORED_KINDS = (ModelKind.UNLI.value, ModelKind.NLI.value)


def gold_labels(path: Path) -> list[str | None]:
    """The 3-way gold label of every row (None where the row has no gold: SNLI's "-"), as e/n/c."""
    labels = []
    for line_no, record in iter_records(path):
        value = next((record[name] for name in GOLD_LABEL_FIELDS if record.get(name) not in (None, "")), None)
        if value is None or value == NO_GOLD:
            labels.append(None)
            continue
        try:
            labels.append(to_label(value, NLI.labels))
        except LabelError as error:
            raise InputError(f"{path}:{line_no}: field 'gold_label' {error}") from None
    return labels


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


def evaluate_against_gold(
    model_dir: str | Path,
    gold_path: str | Path,
    output_path: str | Path,
    *,
    batch_size: int = 64,
    precision: str = "auto",
    device: str | None = None,
    progress: Progress | None = None,
) -> dict:
    started = time.perf_counter()
    spec = inspect_checkpoint(model_dir)
    if spec.kind.value not in SCORED_KINDS:
        raise ModelError(
            f"model folder {spec.path.name}: a {spec.kind.value} model has no gold to be scored "
            "against here (UNLI regressors and 3-way NLI classifiers do)"
        )
    gold_path, output_path = Path(gold_path), Path(output_path)
    if spec.kind is ModelKind.UNLI:
        rows, targets = read_usnli(gold_path)
    else:
        order = enc_indices(spec)
        rows, labels = read_pairs(gold_path), gold_labels(gold_path)
    torch_device = pick_device(device)
    model, tokenizer = load_model(spec, torch_device, pick_precision(torch_device, precision))
    outputs = predict_pairs(
        spec,
        model,
        tokenizer,
        [r.premise for r in rows],
        [r.hypothesis for r in rows],
        batch_size=batch_size,
        max_length=trained_length(spec.path),
        progress=progress,
    )
    output_path.parent.mkdir(parents=True, exist_ok=True)
    with output_path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        if spec.kind is ModelKind.UNLI:
            writer.writerow(["id", "premise", "hypothesis", "gold", "prediction"])
            writer.writerows([r.id, r.premise, r.hypothesis, t, f"{p:.6f}"] for r, t, p in zip(rows, targets, outputs))
            scores = unli_scores(targets, np.clip(outputs, 0.0, 1.0))
            result = {key: scores[key] for key in ("pearson", "spearman", "mse", "n")}
        else:
            predicted = [NLI.labels[order.index(i)] for i in outputs.argmax(axis=1)]  # NLI.labels are in ENC order
            writer.writerow(["id", "premise", "hypothesis", "gold", "prediction"])
            writer.writerows(
                [r.id, r.premise, r.hypothesis, long_name(g) if g else NO_GOLD, long_name(p)]
                for r, g, p in zip(rows, labels, predicted)
            )
            scored = [(g, p) for g, p in zip(labels, predicted) if g is not None]
            if not scored:
                raise InputError(f"{gold_path.name}: no row has a gold label")
            result = {
                "accuracy": accuracy([g for g, _ in scored], [p for _, p in scored]),
                "n": len(scored),
                "without_gold": len(rows) - len(scored),
            }
    return {
        **result,
        "model_kind": spec.kind.value,
        "seconds": round(time.perf_counter() - started, 3),
        "device": str(torch_device),
        "output": str(output_path),
    }
