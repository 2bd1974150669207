"""The ``predict`` service: a checkpoint, a file of pairs, an output file of predictions."""

import csv
import json
import time
from pathlib import Path

import numpy as np

from .dataio import read_pairs
from .devices import pick_device, pick_precision
from .lm_scoring import ChoicePrompt, score_choices
from .registry import ModelError, ModelKind, enc_indices, inspect_checkpoint, load_model
from .runner import Progress, predict_pairs

FORMATS = ("jsonl", "chaosnli", "csv")


def write_jsonl(path: Path, ids: list[str], outputs: np.ndarray, label_names: tuple[str, ...] | None) -> None:
    """Classifier rows ``{"id", "probabilities": {name: p}, "label"}``; regressor rows ``{"id", "prediction"}``."""
    with path.open("w", encoding="utf-8") as handle:
        for row_id, output in zip(ids, outputs):
            if label_names is None:
                record = {"id": row_id, "prediction": float(output)}
            else:
                record = {
                    "id": row_id,
                    "probabilities": {name: float(p) for name, p in zip(label_names, output)},
                    "label": label_names[int(np.argmax(output))],
                }
            handle.write(json.dumps(record) + "\n")


def write_csv(path: Path, ids: list[str], outputs: np.ndarray, label_names: tuple[str, ...] | None) -> None:
    """Regressors: ``id,prediction`` (what the UNLI evaluation reads); classifiers: ``id,label,<label names>``."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        if label_names is None:
            writer.writerow(["id", "prediction"])
            writer.writerows([row_id, repr(float(value))] for row_id, value in zip(ids, outputs))
            return
        writer.writerow(["id", "label", *label_names])
        for row_id, output in zip(ids, outputs):
            writer.writerow([row_id, label_names[int(np.argmax(output))], *(repr(float(p)) for p in output)])


def chaosnli_predictions(model_name: str, ids: list[str], enc_probabilities: np.ndarray) -> dict:
    """ChaosNLI format ``{name: {uid: {"uid", "predicted_probabilities": [e, n, c], "predicted_label"}}}``."""
    names = ("entailment", "neutral", "contradiction")
    return {
        model_name: {
            uid: {
                "uid": uid,
                "predicted_probabilities": [float(p) for p in probs],
                "predicted_label": names[int(np.argmax(probs))],
            }
            for uid, probs in zip(ids, enc_probabilities)
        }
    }


def predict_file(
    model_dir: str | Path,
    input_path: str | Path,
    output_path: str | Path,
    *,
    output_format: str = "jsonl",
    batch_size: int = 64,
    device: str | None = None,
    kind: str | None = None,
    max_length: int | None = None,
    model_name: str | None = None,
    prompt: ChoicePrompt | None = None,
    progress: Progress | None = None,
    precision: str = "auto",
) -> dict:
    """Predict every row of ``input_path`` and write ``output_path``; returns a summary of the run.

    Classifiers and regressors run through the batched runner; a causal LM is scored as a multiple-choice
    reader (``prompt``, default ChoicePrompt()) and its option distribution is written like a classifier's.
    ``precision``: auto, fp32, bf16-linear or int8 (CPU fast paths), fp16 or bf16 (CUDA); see devices.py.
    """
    if output_format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {output_format!r}")
    spec = inspect_checkpoint(model_dir, kind)
    prompt = prompt or ChoicePrompt()
    label_names = spec.label_names if spec.is_classifier else None
    if spec.kind is ModelKind.CAUSAL_LM:
        label_names = tuple(prompt.options)
    if output_format == "chaosnli":
        if spec.kind is ModelKind.NLI:
            order = enc_indices(spec)
        elif spec.kind is ModelKind.CAUSAL_LM and label_names == ("entailment", "neutral", "contradiction"):
            order = [0, 1, 2]
        else:
            raise ModelError(f"model folder {spec.path}: the chaosnli format needs 3-way NLI outputs")
    rows = read_pairs(input_path)
    premises, hypotheses = [r.premise for r in rows], [r.hypothesis for r in rows]
    torch_device = pick_device(device)
    precision = pick_precision(torch_device, precision)
    loaded = time.perf_counter()
    model, tokenizer = load_model(spec, torch_device, precision)
    started = time.perf_counter()
    if spec.kind is ModelKind.CAUSAL_LM:
        outputs = score_choices(
            model, tokenizer, premises, hypotheses, prompt, batch_size=batch_size, progress=progress
        ).distributions
    else:
        outputs = predict_pairs(
            spec,
            model,
            tokenizer,
            premises,
            hypotheses,
            batch_size=batch_size,
            max_length=max_length,
            progress=progress,
        )
    ids = [r.id for r in rows]
    output_path = Path(output_path)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    if output_format == "chaosnli":
        output_path.write_text(json.dumps(chaosnli_predictions(model_name or spec.name, ids, outputs[:, order])))
    elif output_format == "csv":
        write_csv(output_path, ids, outputs, label_names)
    else:
        write_jsonl(output_path, ids, outputs, label_names)
    seconds = time.perf_counter() - started
    return {
        "rows": len(rows),
        "seconds": round(seconds, 3),
        "rows_per_s": round(len(rows) / seconds, 2) if seconds > 0 else None,
        "load_seconds": round(started - loaded, 3),
        "device": str(torch_device),
        "precision": precision,
        "kind": spec.kind.value,
        "output": str(output_path),
    }
