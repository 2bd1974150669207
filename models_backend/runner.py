"""Batched inference for sequence classifiers and regressors.

Pairs are tokenised once, sorted by length, and cut into batches padded only to their own longest row
(dynamic padding), so short pairs never pay for long ones; outputs are put back in input order.
"""

from collections.abc import Callable, Sequence

import numpy as np
import torch

from .registry import ModelSpec

Progress = Callable[[int, int], None]
"""Called as ``progress(done, total)`` after each batch."""


def encode_pairs(tokenizer, premises: Sequence[str] | None, hypotheses: Sequence[str], max_length: int | None):
    """Token ids (and type ids, masks) per row, unpadded. ``premises=None`` encodes hypotheses alone."""
    limit = max_length or min(getattr(tokenizer, "model_max_length", 512), 512)
    if premises is None:
        return tokenizer(list(hypotheses), truncation=True, max_length=limit)
    return tokenizer(list(premises), list(hypotheses), truncation="longest_first", max_length=limit)


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Row indices grouped into batches of similar length, longest first (memory errors show up at once)."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def pad_batch(encoded, rows: np.ndarray, pad_token_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    """Stack the chosen rows into right-padded tensors as long as the batch's longest row."""
    width = max(len(encoded["input_ids"][i]) for i in rows)
    batch = {}
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        if key not in encoded:
            continue
        fill = pad_token_id if key == "input_ids" else 0
        array = np.full((len(rows), width), fill, dtype=np.int64)
        for out_row, i in enumerate(rows):
            values = encoded[key][i]
            array[out_row, : len(values)] = values
        batch[key] = torch.from_numpy(array).to(device)
    return batch


def pair_logits(
    model,
    tokenizer,
    premises: Sequence[str] | None,
    hypotheses: Sequence[str],
    *,
    batch_size: int = 64,
    max_length: int | None = None,
    progress: Progress | None = None,
) -> np.ndarray:
    """Raw logits, shape (n_rows, num_labels), float32, in input order."""
    encoded = encode_pairs(tokenizer, premises, hypotheses, max_length)
    lengths = [len(ids) for ids in encoded["input_ids"]]
    device = next(model.parameters()).device
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    logits = np.zeros((len(lengths), model.config.num_labels), dtype=np.float32)
    done = 0
    with torch.inference_mode():
        for rows in length_sorted_batches(lengths, batch_size):
            batch = pad_batch(encoded, rows, pad_id, device)
            logits[rows] = model(**batch).logits.float().cpu().numpy()
            done += len(rows)
            if progress:
                progress(done, len(lengths))
    return logits


def logits_to_outputs(spec: ModelSpec, logits: np.ndarray) -> np.ndarray:
    """Probabilities (n, labels) for classifiers; predictions (n,) for regressors (sigmoid if flagged)."""
    if spec.is_classifier:
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        return exp / exp.sum(axis=1, keepdims=True)
    values = logits[:, 0]
    return 1.0 / (1.0 + np.exp(-values)) if spec.sigmoid else values


def predict_pairs(
    spec: ModelSpec,
    model,
    tokenizer,
    premises: Sequence[str],
    hypotheses: Sequence[str],
    *,
    batch_size: int = 64,
    max_length: int | None = None,
    progress: Progress | None = None,
) -> np.ndarray:
    """Model outputs for (premise, hypothesis) pairs; a hypothesis-only checkpoint never sees the premise."""
    logits = pair_logits(
        model,
        tokenizer,
        None if spec.hypothesis_only else premises,
        hypotheses,
        batch_size=batch_size,
        max_length=max_length,
        progress=progress,
    )
    return logits_to_outputs(spec, logits)
