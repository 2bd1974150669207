"""Evaluation suites: read gold and predictions, compute the metrics, return a JSON-ready dict.

One function per suite, `run_<suite>(...) -> dict`, shared by the `evaluate` command, the API and
background tasks. Files are read with `evaluation.readers`, which raises `InputError` on bad input;
the metrics themselves live in `evaluation.metrics`. Floats that are not finite come back as None.
"""
import json
import math
from pathlib import Path

import numpy as np

from evaluation.generators.epistemic import generate_epistemic
from evaluation.metrics.atomic_nli import logical_consistency
from evaluation.metrics.classification import accuracy_by_group
from evaluation.metrics.defeasible import NEUTRAL, bucket_ids, defeasible_scores, equivalent_atom_groups
from evaluation.metrics.distributions import human_split_jsd, human_vs_model
from evaluation.metrics.regression import unli_scores
from evaluation.metrics.transitivity import transitivity_scores
from evaluation.readers import (
    InputError,
    chaos_label_names,
    read_chaos_human,
    read_chaos_predictions,
    read_defeasible,
    read_epistemic_rows,
    read_label_predictions,
    read_nli_atoms,
    read_scalar_predictions,
    read_snli_pairs,
    read_transitivity,
    read_usnli_gold,
)


def json_ready(value):
    """`value` with numpy scalars made plain and NaN / infinite floats replaced by None."""
    if isinstance(value, dict):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def run_unli(gold, predictions) -> dict:
    """U-SNLI gold CSV + predictions (CSV `id,prediction` or JSONL) -> n, pearson, spearman, mse.
    Predictions for ids not in the gold file are ignored; a gold id without a prediction is an error."""
    truth = read_usnli_gold(gold)
    predicted = read_scalar_predictions(predictions)
    missing = [item_id for item_id in truth["id"] if item_id not in predicted]
    if missing:
        raise InputError(f"{predictions}: no prediction for id {missing[0]!r} ({len(missing)} gold ids missing)")
    return json_ready(unli_scores(truth["unli"].to_numpy(), [predicted[item_id] for item_id in truth["id"]]))


def run_chaos(human, predictions, model: str | None = None, divergence: bool = False, seed: int = 0) -> dict:
    """ChaosNLI human JSONL + model predictions -> the ChaosNLI scores, the 5 entropy bins and the
    human split-half baseline. `divergence` reports the squared JS distance (the divergence) instead."""
    items = read_chaos_human(human)
    n_classes = len(items["label_count"].iloc[0])
    predicted = read_chaos_predictions(predictions, n_classes, model)
    missing = [uid for uid in items["uid"] if uid not in predicted]
    if missing:
        raise InputError(f"{predictions}: no prediction for uid {missing[0]!r} ({len(missing)} items missing)")
    entries = [predicted[uid] for uid in items["uid"]]
    probabilities = np.array([entry["probabilities"] for entry in entries])
    names = chaos_label_names(n_classes)
    # Accuracy uses the file's predicted label when it gives one, else the most probable class.
    labels = [entry["label"] if entry["label"] is not None else names[int(np.argmax(entry["probabilities"]))]
              for entry in entries]
    human_dist = np.array(items["label_dist"].tolist())
    scores = human_vs_model(
        human_dist, probabilities, items["entropy"].to_numpy(), items["majority_label"].to_numpy(),
        items["old_label"].to_numpy(), np.array(labels, dtype=object), squared=divergence,
    )
    scores["human_split_jsd"] = human_split_jsd(
        np.array(items["label_count"].tolist()), np.random.default_rng(seed), squared=divergence
    )
    scores["jsd_measure"] = "divergence" if divergence else "distance"
    return json_ready(scores)


def run_nli_atoms(path) -> dict:
    """Atomic NLI JSONL -> logical consistency report."""
    examples, atom_labels = read_nli_atoms(path)
    return json_ready(logical_consistency(examples["gold_label"], examples["predicted_label"], atom_labels))


def run_defeasible(path, weighted: bool = False, atom_labels: str = "auto", embed=None, entails=None) -> dict:
    """Defeasible atoms JSONL -> accuracies, critical atoms and inferential consistency.

    atom_labels: "binary" (the model only says strengthener/weakener on atoms), "ternary", or "auto":
    binary when no valid atom is predicted neutral. With `embed` and `entails` (see
    `equivalent_atom_groups`), buckets are built from the atoms' texts instead of read from the file.
    """
    examples, atoms = read_defeasible(path)
    if embed is not None and entails is not None:
        ids = bucket_ids(equivalent_atom_groups(list(atoms["text"]), embed, entails))
        atoms["buckets"] = [tuple(ids[text]) for text in atoms["text"]]
    if atom_labels == "auto":
        valid = atoms[atoms["valid"].astype(bool)]
        binary = not (valid["predicted"] == NEUTRAL).any()
    elif atom_labels in ("binary", "ternary"):
        binary = atom_labels == "binary"
    else:
        raise ValueError(f"atom_labels must be auto, binary or ternary, not {atom_labels!r}")
    return json_ready(defeasible_scores(examples, atoms, binary_atoms=binary, weighted=weighted))


def run_transitivity(path) -> dict:
    """Transitivity JSONL -> mutual entailment / contradiction rates and the four rules' inconsistency."""
    rows = read_transitivity(path)
    return json_ready(transitivity_scores(rows["label_p_h"], rows["label_h_m"], rows["label_m_h"], rows["label_p_m"]))


def run_epistemic_generate(snli, per_template: int, seed: int, output) -> dict:
    """Write the epistemic closure data set (JSONL) built from SNLI pairs; returns counts per cell."""
    try:
        rows = generate_epistemic(read_snli_pairs(snli), per_template, seed)
    except ValueError as error:
        raise InputError(f"{snli}: {error}") from None
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    cells = {}
    for row in rows:
        key = (row["template"], row["original_label"], row["label"])
        cells[key] = cells.get(key, 0) + 1
    return {
        "n": len(rows),
        "output": str(output),
        "seed": seed,
        "cells": [{"template": t, "original_label": o, "label": l, "n": n} for (t, o, l), n in cells.items()],
    }


def run_epistemic_score(path, predictions) -> dict:
    """Generated epistemic rows + predicted labels -> accuracy overall, per template and per cell
    (template x original label). Predictions match rows by "id", or by "index" (0-based line)."""
    rows = read_epistemic_rows(path)
    predicted = read_label_predictions(predictions)
    labels = []
    for row in rows.itertuples():
        key = row.id if row.id in predicted else row.index
        if key not in predicted:
            raise InputError(f"{predictions}: no prediction for id {row.id!r} (index {row.index})")
        labels.append(predicted[key])
    correct = rows["label"].to_numpy(dtype=object) == np.array(labels, dtype=object)
    return json_ready({
        "n": int(len(rows)),
        "accuracy": float(correct.mean()) if len(rows) else None,
        "by_template": accuracy_by_group(rows["label"], labels, {"template": rows["template"].tolist()}),
        "cells": accuracy_by_group(
            rows["label"], labels,
            {"template": rows["template"].tolist(), "original_label": rows["original_label"].tolist()},
        ),
    })
