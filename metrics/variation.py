"""Human label variation with explanations (VariErr NLI, LiveNLI): which labels of an item are supported
variation and which are errors, label distributions before and after validation, the validators' agreement
and peer judgments as an error detector.

Shapes: the input is a sequence of `Explanation`s, one per (item, label, author) explanation, each carrying
the "makes sense" judgments it received. Per-item results are dicts keyed by `item_key` in order of first
appearance; per-label results are dicts keyed by label. Labels are whatever strings the caller uses (the
app uses "e", "n", "c"); a distribution is a tuple in the order of the `labels` argument.

References: docs/variation.md states the rule, the figures it reproduces on the released VariErr file and
what each score computes.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

SUPPORTED, ERROR, UNDECIDED, PENDING = "supported", "error", "undecided", "pending"
VERDICTS = (SUPPORTED, ERROR, UNDECIDED, PENDING)


@dataclass(frozen=True)
class Explanation:
    """One explanation of one label of one item, with the judgments "makes sense" (True) or not it got.

    Spans are [start, end) character offsets into the item's premise and hypothesis. `self_judgment` is the
    author's own judgment of their explanation (VariErr's round 2); None where the author gave none.
    `peer_judges`, where the caller knows them, names who gave each of `peer_judgments` (parallel to it; None
    for a judge the source does not name); the metrics do not read it. `self_check_pending`: the author has
    not judged it yet and still can (a collected study's self-check is open), so its label waits.
    """

    item_key: str
    label: str
    author: str
    text: str
    premise_spans: tuple[tuple[int, int], ...] = ()
    hypothesis_spans: tuple[tuple[int, int], ...] = ()
    peer_judgments: tuple[bool, ...] = ()
    self_judgment: bool | None = None
    peer_judges: tuple[str | None, ...] = ()
    self_check_pending: bool = False


def by_item(explanations: Iterable[Explanation]) -> dict[str, dict[str, list[Explanation]]]:
    """{item_key: {label: [explanation, ...]}}, items and labels in order of first appearance."""
    items: dict[str, dict[str, list[Explanation]]] = {}
    for explanation in explanations:
        items.setdefault(explanation.item_key, {}).setdefault(explanation.label, []).append(explanation)
    return items


def _peer_majority(explanation: Explanation) -> bool:
    judgments = explanation.peer_judgments
    return 2 * sum(judgments) > len(judgments)


def _peer_verdict(explanations: Sequence[Explanation]) -> str:
    if any(_peer_majority(explanation) for explanation in explanations):
        return SUPPORTED
    if all(explanation.peer_judgments for explanation in explanations):
        return ERROR
    return UNDECIDED  # some explanation still waits for its judgments


def classify_item(labels: Mapping[str, Sequence[Explanation]], peer_majority: bool = False) -> dict[str, str]:
    """{label: "supported" | "error" | "undecided" | "pending"} for one item's explanations grouped by label.

    VariErr's rule: where the item's authors judged their own explanations (any self-judgment in the item),
    a label is an error unless one of its explanations was judged "makes sense" by its own author; a missing
    self-judgment does not confirm (in the released file those are the explanations their authors withdrew).
    A label not confirmed while one of its explanations' authors can still self-check is pending, never an
    error. Where nobody judged their own, VariErr's rule cannot decide: the label is undecided, unless the
    caller picks `peer_majority`, this app's own rule (not VariErr's): supported when one of its
    explanations has a strict majority of peer judgments "makes sense", else an error once every
    explanation has peer judgments and none waits for its author, else pending or undecided.
    """
    self_judged = any(e.self_judgment is not None for explanations in labels.values() for e in explanations)
    verdicts = {}
    for label, explanations in labels.items():
        waits = any(e.self_check_pending for e in explanations)
        if self_judged:
            confirmed = any(e.self_judgment for e in explanations)
            verdicts[label] = SUPPORTED if confirmed else PENDING if waits else ERROR
        elif peer_majority:
            verdict = _peer_verdict(explanations)
            verdicts[label] = PENDING if verdict == ERROR and waits else verdict
        else:
            verdicts[label] = PENDING if waits else UNDECIDED
    return verdicts


def classify_labels(explanations: Iterable[Explanation], peer_majority: bool = False) -> dict[str, dict[str, str]]:
    """{item_key: {label: verdict}} for every item (see `classify_item`)."""
    return {item_key: classify_item(labels, peer_majority) for item_key, labels in by_item(explanations).items()}


def has_variation(verdicts: Mapping[str, str]) -> bool:
    """An item shows variation when it keeps two or more supported labels."""
    return sum(verdict == SUPPORTED for verdict in verdicts.values()) >= 2


def variation_split(verdicts: Mapping[str, Mapping[str, str]]) -> dict[str, int]:
    """Counts over items: "items"; "variation" (two or more supported labels); "error" (an error label);
    "both"; "undecided" (a label still undecided); "pending" (a label waiting for its author's self-check)."""
    variation = {key for key, labels in verdicts.items() if has_variation(labels)}
    error = {key for key, labels in verdicts.items() if ERROR in labels.values()}
    return {
        "items": len(verdicts),
        "variation": len(variation),
        "error": len(error),
        "both": len(variation & error),
        "undecided": sum(UNDECIDED in labels.values() for labels in verdicts.values()),
        "pending": sum(PENDING in labels.values() for labels in verdicts.values()),
    }


def _normalised(counts: Sequence[float]) -> tuple[float, ...] | None:
    total = sum(counts)
    return tuple(count / total for count in counts) if total else None


def distributions(
    explanations: Iterable[Explanation], labels: Sequence[str], peer_majority: bool = False
) -> dict[str, dict[str, tuple[float, ...] | None]]:
    """Per item {"round_one", "validated"}: distributions over `labels` (tuples in that order).

    round_one: each label's share of the item's (author, label) pairs: an author counts once per label they
    gave, however many explanations they wrote for it, so an author of two labels counts once for each and
    the shares sum to 1. validated: the same counts with the labels judged errors removed, renormalised;
    None when every label of the item is an error. Labels outside `labels` are a ValueError.
    """
    result = {}
    for item_key, by_label in by_item(explanations).items():
        unknown = set(by_label) - set(labels)
        if unknown:
            raise ValueError(f"item {item_key!r}: labels {sorted(unknown)} are not among {list(labels)}")
        counts = [len({e.author for e in by_label.get(label, ())}) for label in labels]
        verdicts = classify_item(by_label, peer_majority)
        kept = [count if verdicts.get(label) != ERROR else 0 for label, count in zip(labels, counts)]
        result[item_key] = {"round_one": _normalised(counts), "validated": _normalised(kept)}
    return result


def judgment_counts(explanations: Iterable[Explanation], include_self: bool = True) -> np.ndarray:
    """Value counts of shape (n_explanations, 2): [judgments "does not make sense", judgments "makes sense"]
    per explanation, the author's own judgment included when `include_self`."""
    import numpy as np  # here: the reader of explanations is loaded at start-up, numpy need not be

    rows = []
    for explanation in explanations:
        judgments = list(explanation.peer_judgments)
        if include_self and explanation.self_judgment is not None:
            judgments.append(explanation.self_judgment)
        rows.append((len(judgments) - sum(judgments), sum(judgments)))
    return np.array(rows, dtype=float).reshape(-1, 2)


def judgment_alpha(explanations: Iterable[Explanation], include_self: bool = True) -> float:
    """Krippendorff's alpha (nominal) of the "makes sense" judgments, units = explanations, coders = judges.
    NaN when no explanation has two judgments, or when every judgment is the same."""
    counts = judgment_counts(explanations, include_self)
    if not (counts.sum(axis=1) >= 2).any():
        return math.nan
    # Here, past the early return: pandas and scipy load neither at start-up nor for a study's report page
    # when it has no judgments to agree on.
    from metrics.agreement import krippendorff_alpha

    return krippendorff_alpha(value_counts=counts, level="nominal")


def explanation_lengths(explanations: Iterable[Explanation]) -> dict[str, float | int | None]:
    """Words per explanation (whitespace-separated): {"explanations", "mean", "median", "min", "max"}.
    An explanation given for several labels at once (a LiveNLI row) counts once: distinct (item, author,
    text). Figures are None when there is no explanation."""
    texts = {(e.item_key, e.author, e.text) for e in explanations}
    words = [len(text.split()) for _, _, text in texts]
    if not words:
        return {"explanations": 0, "mean": None, "median": None, "min": None, "max": None}
    return {
        "explanations": len(words),
        "mean": statistics.fmean(words),
        "median": statistics.median(words),
        "min": min(words),
        "max": max(words),
    }


def peer_error_scores(explanations: Iterable[Explanation], pooled: bool = False) -> dict[tuple[str, str], float]:
    """{(item_key, label): score in [0, 1]}, higher = more likely an error: 1 minus the share of peer
    judgments "makes sense".

    pooled=False: the share is the mean over the label's explanations of each one's share (VariErr's
    `peer_heuristic_ratio_per_exp`); pooled=True: all the label's peer judgments taken together
    (`peer_heuristic_ratio_all_exp`). Explanations without peer judgments are left out; a label with none at
    all scores 1 (nothing speaks for it), as the release's prediction files rank such labels first.
    """
    scores = {}
    for item_key, by_label in by_item(explanations).items():
        for label, group in by_label.items():
            judged = [e.peer_judgments for e in group if e.peer_judgments]
            if not judged:
                share = 0.0
            elif pooled:
                share = sum(map(sum, judged)) / sum(map(len, judged))
            else:
                share = statistics.fmean(sum(judgments) / len(judgments) for judgments in judged)
            scores[item_key, label] = 1.0 - share
    return scores


def detection_scores(truth: Sequence[bool], scores: Sequence[float], ks: Sequence[int] = (50, 100)) -> dict:
    """How well `scores` rank the true errors first: {"ap", "precision_at": {k: P@k}, "recall_at": {k: R@k}}.

    truth: (n,) True where the label is an error; scores: (n,) higher = more likely an error. AP is
    scikit-learn's average_precision_score (tied scores form one threshold); for P@k and R@k the top k are
    taken by descending score, ties in the given order. Needs at least one true error.
    """
    import numpy as np  # not at start-up (see judgment_counts)

    truth_array = np.asarray(truth, dtype=bool)
    score_array = np.asarray(scores, dtype=float)
    if truth_array.shape != score_array.shape or truth_array.ndim != 1:
        raise ValueError(f"truth has shape {truth_array.shape} but scores has shape {score_array.shape}")
    positives = int(truth_array.sum())
    if positives == 0:
        raise ValueError("detection scores need at least one true error")
    order = np.argsort(-score_array, kind="stable")
    hits = np.cumsum(truth_array[order])
    # Last position of each run of tied scores: the thresholds.
    last_of_tie = np.r_[np.diff(score_array[order]) != 0, True]
    tp = hits[last_of_tie]
    precision = tp / (np.flatnonzero(last_of_tie) + 1)
    recall_gain = np.diff(np.r_[0, tp]) / positives
    return {
        "ap": float((recall_gain * precision).sum()),
        "precision_at": {k: float(hits[min(k, len(hits)) - 1] / min(k, len(hits))) for k in ks},
        "recall_at": {k: float(hits[min(k, len(hits)) - 1] / positives) for k in ks},
    }
