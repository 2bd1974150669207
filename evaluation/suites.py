"""Evaluation suites: read and check the inputs, then score them; the result is a JSON-ready dict.

Each suite is two steps, shared by the `evaluate` command, the web form, the API and background runs:
`load_<suite>(files, reading settings)` reads every input with `evaluation.readers`, which checks every
value and raises `RowError` naming the file, line and field of the first bad one, and returns arrays;
`score_<suite>(inputs, scoring settings)` computes the metrics of `metrics`. `run_<suite>` is
the two in a row. `check_inputs` is the first step alone: `evaluation.runs.start_run` calls it before it
stores a run, so bad input stores nothing. Floats that are not finite come back as None.
"""

import json
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from evaluation.generators.epistemic import generate_epistemic
from evaluation.readers import (
    RowError,
    chaos_label_names,
    read_annotator_labels,
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
    source_name,
)
from metrics.agreement import pairable_units, split_half_jsd_per_unit
from metrics.alt_test import CROWD_EPSILON, MIN_ITEMS, alt_test, items_with_others
from metrics.atomic_nli import logical_consistency
from metrics.classification import accuracy, accuracy_by_group
from metrics.defeasible import (
    NEUTRAL,
    bucket_ids,
    defeasible_scores,
    equivalent_atom_groups,
)
from metrics.distributions import human_vs_model, human_vs_model_per_item
from metrics.regression import unli_scores
from metrics.soft_labels import soft_label_report
from metrics.transitivity import transitivity_scores


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


def check_inputs(suite_name: str, paths: dict, params: dict | None = None) -> None:
    """Read and check the input files of a suite (role -> path or uploaded file) without scoring them.

    Raises the readers' RowError (file, line, field) on the first bad value; returns None when all is well.
    """
    params = params or {}
    loaders = {
        "unli": lambda: load_unli(paths["gold"], paths["predictions"]),
        "chaos": lambda: load_chaos(
            paths["human"], paths["predictions"], params.get("model"), params.get("renormalise", False)
        ),
        "nli-atoms": lambda: read_nli_atoms(paths["input"]),
        "defeasible": lambda: read_defeasible(paths["input"]),
        "transitivity": lambda: read_transitivity(paths["input"]),
        "epistemic": lambda: load_epistemic(paths["input"], paths["predictions"]),
        "alt-test": lambda: load_alt_test(
            paths["annotations"],
            paths["predictions"],
            params.get("model"),
            params.get("renormalise", False),
            params.get("min_items", MIN_ITEMS),
        ),
    }
    loaders[suite_name]()


# U-SNLI ------------------------------------------------------------------------------------------------


class UnliInputs(NamedTuple):
    y_true: np.ndarray  # (n,) gold probabilities, n >= 2
    y_pred: np.ndarray  # (n,) predictions in the same order


def load_unli(gold, predictions) -> UnliInputs:
    """U-SNLI gold CSV + predictions (CSV `id,prediction` or JSONL). Every gold id needs a prediction;
    predictions for other ids are ignored."""
    truth = read_usnli_gold(gold)
    predicted = read_scalar_predictions(predictions)
    missing = truth[~truth["id"].isin(list(predicted))]
    if len(missing):
        first = missing.iloc[0]
        raise RowError(
            "id",
            f"no prediction for id {first['id']!r} in {source_name(predictions)} ({len(missing)} gold ids missing)",
            file=source_name(gold),
            line=int(first["line"]),
        )
    if len(truth) < 2:
        raise RowError(
            "unli",
            "only 1 item; Pearson and Spearman need at least 2",
            file=source_name(gold),
            line=int(truth["line"].iloc[-1]),
        )
    inputs = UnliInputs(truth["unli"].to_numpy(), np.array([predicted[item_id] for item_id in truth["id"]]))
    # A correlation with a column that never varies is undefined: nothing to compute, so no run.
    if np.all(inputs.y_true == inputs.y_true[0]):
        message = f"every gold probability is {inputs.y_true[0]:g}; Pearson and Spearman need values that vary"
        raise RowError("unli", message, file=source_name(gold), line=int(truth["line"].iloc[-1]))
    if np.all(inputs.y_pred == inputs.y_pred[0]):
        message = (
            f"every prediction for the gold ids is {inputs.y_pred[0]:g}; Pearson and Spearman need values that vary"
        )
        raise RowError("prediction", message, file=source_name(predictions))
    return inputs


def score_unli(inputs: UnliInputs) -> dict:
    """n, pearson, spearman, mse."""
    return json_ready(unli_scores(inputs.y_true, inputs.y_pred))


def run_unli(gold, predictions) -> dict:
    return score_unli(load_unli(gold, predictions))


# ChaosNLI ----------------------------------------------------------------------------------------------


class ChaosInputs(NamedTuple):
    uid: np.ndarray  # (n,) item ids
    label_count: np.ndarray  # (n, k) human votes, label order of chaos_label_names(k)
    human: np.ndarray  # (n, k) human label distributions (the file's label_dist)
    entropy: np.ndarray  # (n,) the file's entropy field, bits
    majority_label: np.ndarray  # (n,)
    old_label: np.ndarray  # (n,)
    model: np.ndarray  # (n, k) model probabilities
    predicted_label: np.ndarray  # (n,) the file's predicted label, else the most probable class
    renormalised_rows: int  # prediction rows rescaled to sum to 1 (only with renormalise)


def load_chaos(human, predictions, model: str | None = None, renormalise: bool = False) -> ChaosInputs:
    """ChaosNLI human JSONL + model predictions (see read_chaos_predictions); every uid needs a prediction.
    `renormalise`: rescale prediction rows that do not sum to 1 instead of refusing them."""
    items = read_chaos_human(human)
    n_classes = len(items["label_count"].iloc[0])
    predicted, renormalised = read_chaos_predictions(predictions, n_classes, model, renormalise)
    missing = items[~items["uid"].isin(list(predicted))]
    if len(missing):
        first = missing.iloc[0]
        raise RowError(
            "uid",
            f"no prediction for uid {first['uid']!r} in {source_name(predictions)} ({len(missing)} items missing)",
            file=source_name(human),
            line=int(first["line"]),
        )
    entries = [predicted[uid] for uid in items["uid"]]
    names = chaos_label_names(n_classes)
    return ChaosInputs(
        uid=items["uid"].to_numpy(dtype=object),
        label_count=np.array(items["label_count"].tolist()),
        human=np.array(items["label_dist"].tolist()),
        entropy=items["entropy"].to_numpy(),
        majority_label=items["majority_label"].to_numpy(dtype=object),
        old_label=items["old_label"].to_numpy(dtype=object),
        model=np.array([entry["probabilities"] for entry in entries]),
        predicted_label=np.array(
            [
                entry["label"] if entry["label"] is not None else names[int(np.argmax(entry["probabilities"]))]
                for entry in entries
            ],
            dtype=object,
        ),
        renormalised_rows=renormalised,
    )


# Items listed as the most and the least human-like (by JSD) in a chaos result.
HUMAN_LIKE_EXTREMES = 10


def score_chaos(inputs: ChaosInputs, divergence: bool = False, seed: int = 0, bootstrap: int = 1000) -> dict:
    """The ChaosNLI scores, the 5 entropy bins and the human split-half baseline (items with 2 or more
    votes; the others are counted). `divergence` reports the squared JS distance (the divergence).

    `soft_labels` adds the distribution measures of metrics.soft_labels and the items the model is most and
    least human-like on; `intervals` holds a 95% percentile bootstrap interval over items for every overall
    figure (`bootstrap` resamples drawn with `seed`, the seed of the split-half baseline too; 0: none).
    """
    scores = human_vs_model(
        inputs.human,
        inputs.model,
        inputs.entropy,
        inputs.majority_label,
        inputs.old_label,
        inputs.predicted_label,
        squared=divergence,
    )
    pairable = pairable_units(inputs.label_count)
    per_item = human_vs_model_per_item(
        inputs.human, inputs.model, inputs.majority_label, inputs.old_label, inputs.predicted_label, divergence
    )
    split_jsd = np.full(len(pairable), np.nan)
    split_jsd[pairable] = split_half_jsd_per_unit(inputs.label_count, seed=seed, squared=divergence)
    scores["human_split_jsd"] = float(np.nanmean(split_jsd)) if pairable.any() else None
    scores["human_split_jsd_items"] = int(pairable.sum())
    scores["human_split_jsd_excluded_items"] = int((~pairable).sum())
    scores["renormalised_rows"] = inputs.renormalised_rows
    scores["jsd_measure"] = "divergence" if divergence else "distance"
    soft = soft_label_report(
        inputs.human,
        inputs.model,
        inputs.uid,
        n_boot=bootstrap,
        seed=seed,
        extremes=HUMAN_LIKE_EXTREMES,
        jsd=per_item["jsd"],
        more_means=per_item | {"human_split_jsd": split_jsd},
    )
    scores["soft_labels"] = soft["figures"] | {"distance_correlation_items": soft["distance_correlation_items"]}
    scores["soft_label_conventions"] = soft["conventions"]
    scores["most_human_like"] = soft["most_human_like"]
    scores["least_human_like"] = soft["least_human_like"]
    scores["intervals"] = {name: [interval.low, interval.high] for name, interval in soft["more"].items()} | {
        f"soft_labels.{name}": bounds for name, bounds in soft["intervals"].items()
    }
    scores["bootstrap"] = {"resamples": bootstrap, "seed": seed, "level": 0.95, "unit": "item"}
    return json_ready(scores)


def run_chaos(
    human,
    predictions,
    model: str | None = None,
    divergence: bool = False,
    seed: int = 0,
    renormalise: bool = False,
    bootstrap: int = 1000,
) -> dict:
    return score_chaos(load_chaos(human, predictions, model, renormalise), divergence, seed, bootstrap)


# Alternative annotator test ---------------------------------------------------------------------------


class AltTestInputs(NamedTuple):
    annotator_ids: np.ndarray  # (n_annotators,) the file's annotator ids
    items: np.ndarray  # (m,) item index of each label, in [0, n_items)
    annotators: np.ndarray  # (m,) annotator index of each label
    labels: np.ndarray  # (m,) class index, label order of chaos_label_names(k)
    model: np.ndarray  # (n_items, k) model probabilities
    model_label: np.ndarray  # (n_items,) class index of the file's predicted label, else the most probable
    renormalised_rows: int  # prediction rows rescaled to sum to 1 (only with renormalise)
    skipped_rows: dict  # rows of the annotations file left out: imported, excluded, gold_checks -> count


def load_alt_test(
    annotations, predictions, model: str | None = None, renormalise: bool = False, min_items: int = MIN_ITEMS
) -> AltTestInputs:
    """Per-annotator labels (read_annotator_labels) + model predictions in the chaos suite's formats. Every
    labelled item needs a prediction; some item needs 2 annotators and some annotator `min_items` items
    shared with another, or there is nothing to test."""
    rows, n_classes, skipped = read_annotator_labels(annotations)
    predicted, renormalised = read_chaos_predictions(predictions, n_classes, model, renormalise)
    missing = rows[~rows["id"].isin(list(predicted))]
    if len(missing):
        first = missing.iloc[0]
        raise RowError(
            "id",
            f"no prediction for id {first['id']!r} in {source_name(predictions)}"
            f" ({missing['id'].nunique()} items missing)",
            file=source_name(annotations),
            line=int(first["line"]),
        )
    items, item_ids = pd.factorize(rows["id"])
    annotators, annotator_ids = pd.factorize(rows["annotator"])
    usable, shared = items_with_others(items, annotators)
    if not usable.any():
        raise RowError(
            "id",
            "no item has 2 or more annotators: each annotator is compared with the others",
            file=source_name(annotations),
        )
    if shared.max() < min_items:
        raise RowError(
            "annotator",
            f"no annotator has {min_items} items shared with another annotator (most: {shared.max()},"
            f" {annotator_ids[int(shared.argmax())]!r}); lower min_items only knowingly: the paper's t-test needs 30",
            file=source_name(annotations),
        )
    names = list(chaos_label_names(n_classes))
    entries = [predicted[item_id] for item_id in item_ids]
    probabilities = np.array([entry["probabilities"] for entry in entries])
    return AltTestInputs(
        annotator_ids=np.asarray(annotator_ids, dtype=object),
        items=items,
        annotators=annotators,
        labels=np.array([names.index(label) for label in rows["label"]]),
        model=probabilities,
        model_label=np.array(
            [
                names.index(entry["label"]) if entry["label"] is not None else int(np.argmax(entry["probabilities"]))
                for entry in entries
            ]
        ),
        renormalised_rows=renormalised,
        skipped_rows=skipped,
    )


def score_alt_test(
    inputs: AltTestInputs,
    epsilon: float = CROWD_EPSILON,
    alpha: float = 0.05,
    min_items: int = MIN_ITEMS,
    alignment: str = "label",
) -> dict:
    """metrics.alt_test.alt_test with annotator ids in its tables. `alignment`: "label" scores the model's
    label as the paper does (accuracy against the other annotators); "distribution" scores its probabilities
    (1 - total variation distance to the others' label distribution)."""
    if alignment not in ("label", "distribution"):
        raise ValueError(f"alignment must be label or distribution, not {alignment!r}")
    rows = np.eye(inputs.model.shape[1])[inputs.model_label] if alignment == "label" else inputs.model
    result = alt_test(inputs.items, inputs.annotators, inputs.labels, rows, epsilon, alpha, min_items)
    for table in ("annotators", "too_few_items"):
        result[table] = [{"annotator": inputs.annotator_ids[row.pop("index")], **row} for row in result[table]]
    result["alignment"] = alignment
    result["renormalised_rows"] = inputs.renormalised_rows
    result["skipped_rows"] = inputs.skipped_rows
    return json_ready(result)


def run_alt_test(
    annotations,
    predictions,
    model: str | None = None,
    renormalise: bool = False,
    epsilon: float = CROWD_EPSILON,
    alpha: float = 0.05,
    min_items: int = MIN_ITEMS,
    alignment: str = "label",
) -> dict:
    inputs = load_alt_test(annotations, predictions, model, renormalise, min_items)
    return score_alt_test(inputs, epsilon, alpha, min_items, alignment)


# Atomic NLI, defeasible atoms, transitivity ------------------------------------------------------------


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
    if atom_labels not in ("auto", "binary", "ternary"):
        raise ValueError(f"atom_labels must be auto, binary or ternary, not {atom_labels!r}")
    examples, atoms = read_defeasible(path)
    if embed is not None and entails is not None:
        ids = bucket_ids(equivalent_atom_groups(list(atoms["text"]), embed, entails))
        atoms["buckets"] = [tuple(ids[text]) for text in atoms["text"]]
    if atom_labels == "auto":
        valid = atoms[atoms["valid"].astype(bool)]
        binary = not (valid["predicted"] == NEUTRAL).any()
    else:
        binary = atom_labels == "binary"
    return json_ready(defeasible_scores(examples, atoms, binary_atoms=binary, weighted=weighted))


def run_transitivity(path) -> dict:
    """Transitivity JSONL -> mutual entailment / contradiction rates and the four rules' inconsistency."""
    rows = read_transitivity(path)
    return json_ready(transitivity_scores(rows["label_p_h"], rows["label_h_m"], rows["label_m_h"], rows["label_p_m"]))


# Epistemic closure -------------------------------------------------------------------------------------


def run_epistemic_generate(snli, per_template: int, seed: int, output) -> dict:
    """Write the epistemic closure data set (JSONL) built from SNLI pairs; returns counts per cell."""
    pairs = read_snli_pairs(snli)
    try:
        rows = generate_epistemic(pairs, per_template, seed)
    except ValueError as error:  # too few full-sentence pairs for a label
        raise RowError(None, str(error), file=source_name(snli)) from None
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
        "cells": [
            {"template": template, "original_label": original, "label": label, "n": n}
            for (template, original, label), n in cells.items()
        ],
    }


class EpistemicInputs(NamedTuple):
    rows: pd.DataFrame  # read_epistemic_rows
    predicted: list  # (n,) predicted labels, in row order


def load_epistemic(path, predictions) -> EpistemicInputs:
    """Generated epistemic rows + predicted labels, matched by "id" or by "index" (0-based row)."""
    rows = read_epistemic_rows(path)
    predicted = read_label_predictions(predictions)
    labels = []
    for row in rows.itertuples():
        key = row.id if row.id in predicted else row.index
        if key not in predicted:
            raise RowError(
                "id",
                f"no prediction for id {row.id!r} (index {row.index}) in {source_name(predictions)}",
                file=source_name(path),
                line=row.line,
            )
        labels.append(predicted[key])
    return EpistemicInputs(rows, labels)


def score_epistemic(inputs: EpistemicInputs) -> dict:
    """Accuracy overall, per template and per cell (template x original label)."""
    rows, labels = inputs
    return json_ready(
        {
            "n": len(rows),
            "accuracy": accuracy(rows["label"].to_numpy(dtype=object), np.array(labels, dtype=object)),
            "by_template": accuracy_by_group(rows["label"], labels, {"template": rows["template"].tolist()}),
            "cells": accuracy_by_group(
                rows["label"],
                labels,
                {"template": rows["template"].tolist(), "original_label": rows["original_label"].tolist()},
            ),
        }
    )


def run_epistemic_score(path, predictions) -> dict:
    return score_epistemic(load_epistemic(path, predictions))
