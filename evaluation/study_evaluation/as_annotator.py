"""The model as an annotator (issue 52, item 3): a model's per-item answers on a study set beside the study's
annotators, as one more annotator scored the way each of them is, never stored as an answer.

`model_among_annotators` is the pure function: each annotator's agreement with the others on the items they
share (the alt-test's alignment score of a label for nominal scales: the share of the other annotators who gave
the same label; the absolute difference to the median of the others for ordinal and interval scales, as
metrics.agreement.human_baseline holds an answer out against them), the model's agreement with all the
annotators on those same items, and where the model ranks among them. `study_as_annotator` reads a finished
evaluation's prediction files and the study's worker answers (analysis.agreement.load_annotations: answers that
count, gold checks and excluded workers left out) and adds the alt-test verdict the suite computed. Nothing here
writes an Annotation: exports, the gold and the report's human figures never see the model.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

# The study protocols whose model answers sit on the annotators' own scale: one label (ChaosNLI-style label
# studies) or one probability (the UNLI slider) per item. Atom studies' per-atom model outputs are judgments of
# a different question (an atom's label, not its validity or the update's -2..+2 effect on it).
PER_ITEM_SUITES = ("chaos", "unli")
MEASURES = {
    "nominal": ("share of the other annotators who gave the same label", True),
    "ordinal": ("absolute difference to the median of the other annotators", False),
    "interval": ("absolute difference to the median of the other annotators", False),
}


def model_among_annotators(items, annotators, values, model, level: str, min_items: int = 1) -> dict:
    """A model ranked among a study's annotators by the same agreement-with-the-others score.

    items: (m,) item index of each answer in [0, n_items); annotators: (m,) annotator index; values: (m,) the
    answer, a category index for level "nominal", a number for "ordinal" and "interval"; one answer per
    (item, annotator). model: (n_items,) the model's answer per item on the same scale, NaN where it has none.
    min_items: an annotator is ranked only with at least this many scored items.

    An annotator's answer is scored on every item with at least one other answer, against those others; the
    model is scored on the same items against all their answers (it is the extra annotator). Returns
    {measure, higher_is_better, annotators: [{index, items, score}] (those ranked, by index), too_few_items
    (annotators left out), model: {items, score}, better_than (annotators the model beats, ties not counted),
    ranked (annotators ranked), rank (the model's place among them and itself, 1 = best; ties share the
    better place)}. ValueError on malformed input or when no item has two answers and a model answer.
    """
    import numpy as np  # here, not at the top: the report's panel imports this module at start

    if level not in MEASURES:
        raise ValueError(f"level must be one of {', '.join(MEASURES)}, got {level!r}")
    items, annotators = np.asarray(items), np.asarray(annotators)
    values, model = np.asarray(values, dtype=float), np.asarray(model, dtype=float)
    if not (items.shape == annotators.shape == values.shape) or items.ndim != 1:
        raise ValueError("items, annotators and values must be (m,) arrays of the same length")
    if model.ndim != 1 or (len(items) and items.max() >= len(model)):
        raise ValueError("model must have shape (n_items,) with an answer slot for every item index")
    measure, higher_is_better = MEASURES[level]
    sizes = np.bincount(items, minlength=len(model))
    scored = (sizes[items] >= 2) & ~np.isnan(model[items])
    if not scored.any():
        raise ValueError("no item has two or more answers and a model answer: nobody can be compared")
    items, annotators, values = items[scored], annotators[scored], values[scored]
    shared = np.unique(items)
    if level == "nominal":
        codes = values.astype(int)
        n_classes = int(max(codes.max(), np.nanmax(model[shared]))) + 1
        counts = np.bincount(items * n_classes + codes, minlength=len(model) * n_classes).reshape(-1, n_classes)
        human_score = (counts[items, codes] - 1) / (sizes[items] - 1)
        model_score = counts[shared, model[shared].astype(int)] / sizes[shared]
    else:
        # Items of the same number of answers at once, as a (items, answers) matrix: one median per column left out.
        human_score, model_score = np.empty(len(values)), np.empty(len(shared))
        order = np.argsort(items, kind="stable")
        _, starts, per_item = np.unique(items[order], return_index=True, return_counts=True)
        for k in np.unique(per_item):
            group = np.flatnonzero(per_item == k)
            answers = order[starts[group][:, None] + np.arange(k)]
            matrix = values[answers]
            for j in range(k):
                others = np.median(np.delete(matrix, j, axis=1), axis=1)
                human_score[answers[:, j]] = np.abs(matrix[:, j] - others)
            model_score[group] = np.abs(model[shared[group]] - np.median(matrix, axis=1))
    n_annotators = int(annotators.max()) + 1
    counted = np.bincount(annotators, minlength=n_annotators)
    mean = np.bincount(annotators, weights=human_score, minlength=n_annotators) / np.maximum(counted, 1)
    ranked = np.flatnonzero(counted >= max(min_items, 1))
    model_mean = float(model_score.mean())
    sign = 1 if higher_is_better else -1
    better_than = int((sign * (model_mean - mean[ranked]) > 0).sum())
    return {
        "measure": measure,
        "higher_is_better": higher_is_better,
        "annotators": [{"index": int(i), "items": int(counted[i]), "score": float(mean[i])} for i in ranked],
        "too_few_items": [
            {"index": int(i), "items": int(counted[i])} for i in np.flatnonzero((counted > 0) & (counted < min_items))
        ],
        "model": {"items": len(shared), "score": model_mean},
        "better_than": better_than,
        "ranked": len(ranked),
        "rank": 1 + int((sign * (mean[ranked] - model_mean) > 0).sum()),
        "min_items": int(min_items),
    }


# A finished evaluation of a study ------------------------------------------------------------------------


def study_as_annotator(project, result: dict, folder: Path, min_items: int = 1) -> dict:
    """{model name: its place among the study's annotators, or {"unavailable": why}} for an evaluation's result
    and its prediction files in `folder`/<name> (scoring.write_suite_files)."""
    import numpy as np

    from annotation.services.analysis.agreement import load_annotations

    suite = result["suite"]
    if suite not in PER_ITEM_SUITES:
        return _for_each(result, "a per-atom model output answers another question than the annotators' scale")
    table = load_annotations(project)
    if table.n_workers == 0:
        return _for_each(result, "no worker answers: imported votes carry no annotator to compare with")
    code_of_item = {int(item_id): code for code, item_id in enumerate(table.item_ids[: table.n_worker_items])}
    item_of_key = {
        source_id or key: item_id
        for item_id, source_id, key in project.items.filter(is_gold=False, atom__isnull=True).values_list(
            "id", "example__source_id", "example__key"
        )
    }
    answers = table.answers
    figures = {}
    for name, model_figures in result["models"].items():
        try:
            answered = _model_answers(suite, Path(folder) / name, name, table.categories)
        except (OSError, KeyError, ValueError) as error:
            figures[name] = {"unavailable": f"its predictions cannot be read: {error}"}
            continue
        model = np.full(table.n_worker_items, np.nan)
        for key, answer in answered.items():
            code = code_of_item.get(item_of_key.get(key, -1))
            if code is not None:
                model[code] = answer
        try:
            place = model_among_annotators(
                answers.items, answers.workers, answers.values, model, table.level, min_items
            )
        except ValueError as error:
            figures[name] = {"unavailable": str(error)}
            continue
        figures[name] = place | {"alt_test": _alt_test_verdict(suite, model_figures)}
    return figures


def _for_each(result: dict, reason: str) -> dict:
    return {name: {"unavailable": reason} for name in result["models"]}


def _model_answers(suite: str, folder: Path, name: str, categories: list | None) -> dict[str, float]:
    """The model's answer per item key, on the annotators' scale: its most probable label's category index
    (labels the study does not have are left out), or its probability."""
    from common.vocabulary import long_name

    if suite == "chaos":
        predictions = json.loads((folder / "predictions.json").read_text(encoding="utf-8"))[name]
        # The predictions file spells the long names (entailment), the study its own labels (e).
        index = {long_name(label): i for i, label in enumerate(categories or [])}
        return {
            uid: float(index[row["predicted_label"]])
            for uid, row in predictions.items()
            if row["predicted_label"] in index
        }
    with (folder / "predictions.csv").open(encoding="utf-8", newline="") as handle:
        return {row["id"]: float(row["prediction"]) for row in csv.DictReader(handle)}


def _alt_test_verdict(suite: str, figures: dict) -> dict:
    """The alt-test the suite ran for this model (metrics.alt_test through evaluation.suites), in short."""
    if suite != "chaos":
        return {"unavailable": "the alt-test compares labels (metrics.alt_test); a slider study's answers are numbers"}
    alt = figures.get("alt_test") or {"unavailable": "not computed"}
    if "unavailable" in alt:
        return {"unavailable": alt["unavailable"]}
    return {key: alt[key] for key in ("passed", "winning_rate", "epsilon", "advantage_probability") if key in alt} | {
        "annotators_tested": len(alt.get("annotators", [])),
        "annotators_too_few_items": len(alt.get("too_few_items", [])),
    }


# On the pages ----------------------------------------------------------------------------------------------


def as_annotator_rows(result: dict) -> list[dict]:
    """One row per model of an evaluation's result for the pages: its score and the annotators' range, where
    it ranks ("better than k of n annotators") and the alt-test verdict, or why there is none."""
    from evaluation.tables import show

    rows = []
    for name, place in (result.get("as_annotator") or {}).items():
        if "unavailable" in place:
            rows.append({"model": name, "unavailable": place["unavailable"]})
            continue
        scores = [annotator["score"] for annotator in place["annotators"]]
        alt = place["alt_test"]
        rows.append(
            {
                "model": name,
                "measure": place["measure"]
                + (" (higher is better)" if place["higher_is_better"] else " (lower is better)"),
                "score": show(place["model"]["score"]),
                "items": place["model"]["items"],
                "annotators": f"{show(min(scores))} to {show(max(scores))}" if scores else "none ranked",
                "rank": f"better than {place['better_than']} of {place['ranked']} annotators (place {place['rank']})",
                "alt_test": alt.get("unavailable")
                or f"{'passed' if alt['passed'] else 'not passed'}: winning rate {show(alt['winning_rate'])} "
                f"(epsilon {show(alt['epsilon'])}, {alt['annotators_tested']} annotators tested, "
                f"{alt['annotators_too_few_items']} with too few items)",
            }
        )
    return rows


def report_panel(context) -> dict | None:
    """The report page's flagged section: the newest finished evaluation of the study whose models were placed
    among its annotators, for an author who may see the study's evaluations; None otherwise."""
    from core import roles
    from evaluation.study_evaluation.protocols import EVALUATE_STUDY
    from jobs.models import Job

    project, user = context.get("project"), context.get("user")
    if project is None or user is None or not roles.has_role(user, roles.AUTHOR):
        return None
    job = (
        Job.objects.filter(kind=EVALUATE_STUDY, project=project, status=Job.Status.DONE, result__has_key="as_annotator")
        .order_by("-created_at")
        .first()
    )
    if job is None:
        return None
    return {"as_annotator_job": job, "as_annotator_rows": as_annotator_rows(job.result)}
