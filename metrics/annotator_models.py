"""Annotator models: labels of nominal items aggregated with each worker's estimated reliability.

Majority vote weighs every answer alike. Wawa weighs each worker by how often they agree with the majority;
Dawid-Skene (1979) learns a confusion matrix per worker, MACE (Hovy et al., 2013) the probability that a
worker answers the true label rather than spamming, GLAD (Whitehill et al., 2009) a worker expertise and an
item difficulty. MACE and GLAD are crowd-kit's implementations (imported inside the functions: crowd-kit loads
scikit-learn and nltk); majority vote, Wawa and Dawid-Skene are computed here, ties kept as ties. Dawid-Skene
repeats crowd-kit's EM step for step (same start, smoothing and stopping rule; a test holds the two equal)
in numpy: crowd-kit's pandas version takes about 5 s on 1,000 answers, this one milliseconds, so the report
page can afford it.

Shapes: one row per answer in three integer arrays of length n: `items` in [0, n_items), `workers` in
[0, n_workers), `labels` (category codes) in [0, n_categories). Every item and every worker has at least one
answer; a worker answers an item at most once.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

METHODS = ("majority_vote", "wawa", "dawid_skene", "mace", "glad")
# The methods computed here, in milliseconds even on many answers (MACE and GLAD take seconds).
FAST_METHODS = ("majority_vote", "wawa", "dawid_skene")

# crowd-kit's smallest probability (its _EPS): Dawid-Skene clips with it as crowd-kit does.
PROBABILITY_FLOOR = 1e-10
DAWID_SKENE_ITERATIONS = 100
DAWID_SKENE_TOLERANCE = 1e-5

# crowd-kit's default is 10: each restart costs about a second of pandas work even on a few hundred
# answers, and the report page fits models while the author waits.
MACE_RESTARTS = 3

# How Wawa scores a worker's answer on an item whose majority vote ties. "share": an answer on one of k tied
# labels counts 1/k (the expected agreement if the tie were broken at random). "first_seen": the tie goes to
# the tied label that occurs first in the answers, as crowd-kit 1.4.2's MajorityVote breaks it (pandas
# idxmax over label columns in order of first appearance), so its Wawa skills are reproduced exactly when it
# is given the answers in the same order.
WAWA_TIES = ("share", "first_seen")

# What each method's per-worker figure is; majority vote estimates none.
RELIABILITY = {
    "wawa": "skill: share of the worker's answers that agree with the majority vote",
    "dawid_skene": "accuracy: the diagonal of the worker's confusion matrix weighted by the class priors",
    "mace": "competence: probability that the worker answers the true label instead of guessing",
    "glad": "alpha: the worker's expertise (0: guessing, negative: adversarial, higher: better)",
}


@dataclass(frozen=True)
class AnnotatorModels:
    """What fit_annotator_models returns.

    scores: method -> (n_items, n_categories): vote counts (majority vote), reliability-weighted votes
        (Wawa) or posterior probabilities of the true label (Dawid-Skene, MACE, GLAD).
    reliability: method -> (n_workers,) the worker figures of RELIABILITY (no entry for majority vote).
    """

    scores: dict[str, np.ndarray]
    reliability: dict[str, np.ndarray]
    # method -> the convention it followed where references differ (Wawa's ties: WAWA_TIES)
    conventions: dict[str, str] = field(default_factory=dict)

    def labels(self, method: str) -> np.ndarray:
        """(n_items,) the code of each item's highest score, -1 where two or more tie."""
        return decided_labels(self.scores[method])


def check_answers(items, workers, labels, n_items: int, n_workers: int, n_categories: int):
    """The three answer arrays as int64 arrays; ValueError naming the first problem.

    Annotator models learn a worker's reliability from items other workers also answered, so they need two
    or more workers and at least one item answered by two of them.
    """
    arrays = [np.asarray(values) for values in (items, workers, labels)]
    if len({len(values) for values in arrays}) != 1 or any(values.ndim != 1 for values in arrays):
        raise ValueError(f"items, workers and labels must have the same shape (n,), got {[a.shape for a in arrays]}")
    for name, values, bound in zip(("items", "workers", "labels"), arrays, (n_items, n_workers, n_categories)):
        if values.size and not np.issubdtype(values.dtype, np.integer):
            raise ValueError(f"{name} must be integer codes, got dtype {values.dtype}")
        bad = (values < 0) | (values >= bound)
        if bad.any():
            at = int(np.argmax(bad))
            raise ValueError(f"answer {at}: {name} code {int(values[at])} is not in [0, {bound})")
    items, workers, labels = (values.astype(np.int64) for values in arrays)
    if n_categories < 2:
        raise ValueError(f"annotator models need two or more categories, got {n_categories}")
    if len(np.unique(items)) != n_items or len(np.unique(workers)) != n_workers:
        raise ValueError("every item and every worker must have at least one answer")
    pairs = items * n_workers + workers
    if len(np.unique(pairs)) != len(pairs):
        raise ValueError("a worker answered the same item twice; keep one answer per worker and item")
    if n_workers < 2:
        raise ValueError(f"annotator models need answers from two or more workers, got {n_workers}")
    if np.bincount(items, minlength=n_items).max() < 2:
        raise ValueError("annotator models need at least one item answered by two or more workers")
    return items, workers, labels


def decided_labels(scores: np.ndarray) -> np.ndarray:
    """(n_items,) the argmax of each row of `scores` (n_items, n_categories), -1 where the maximum ties."""
    scores = np.asarray(scores, dtype=float)
    top = scores.max(axis=1, keepdims=True)
    at_top = np.isclose(scores, top, rtol=1e-9, atol=1e-12)
    return np.where(at_top.sum(axis=1) == 1, scores.argmax(axis=1), -1)


def expected_accuracy(scores: np.ndarray, truth: np.ndarray) -> float:
    """Share of items whose highest-scoring label is `truth` (n_items,); an item where k labels tie counts
    1/k when the true label is among them (the expected accuracy of breaking the tie at random)."""
    scores = np.asarray(scores, dtype=float)
    truth = np.asarray(truth, dtype=np.int64)
    if scores.ndim != 2 or truth.shape != (scores.shape[0],):
        raise ValueError(f"scores must be (n, k) and truth (n,), got {scores.shape} and {truth.shape}")
    if len(truth) == 0:
        raise ValueError("no items to score")
    at_top = np.isclose(scores, scores.max(axis=1, keepdims=True), rtol=1e-9, atol=1e-12)
    hit = at_top[np.arange(len(truth)), truth]
    return float(np.mean(hit / at_top.sum(axis=1)))


def fit_annotator_models(
    items,
    workers,
    labels,
    n_items: int,
    n_workers: int,
    n_categories: int,
    seed: int = 0,
    methods: tuple[str, ...] = METHODS,
    wawa_ties: str = "share",
) -> AnnotatorModels:
    """Fit each of `methods` (names from METHODS) to the answers; see the module docstring for the shapes.

    seed: MACE's random restarts (the only method with randomness). wawa_ties: one of WAWA_TIES.
    """
    unknown = [method for method in methods if method not in METHODS]
    if unknown:
        raise ValueError(f"unknown annotator models {unknown}; known: {list(METHODS)}")
    if wawa_ties not in WAWA_TIES:
        raise ValueError(f"wawa_ties must be one of {list(WAWA_TIES)}, got {wawa_ties!r}")
    items, workers, labels = check_answers(items, workers, labels, n_items, n_workers, n_categories)
    votes = np.zeros((n_items, n_categories))
    np.add.at(votes, (items, labels), 1.0)
    scores: dict[str, np.ndarray] = {}
    reliability: dict[str, np.ndarray] = {}
    for method in methods:
        if method == "majority_vote":
            scores[method] = votes
        elif method == "wawa":
            scores[method], reliability[method] = _wawa(items, workers, labels, votes, n_workers, wawa_ties)
        elif method == "dawid_skene":
            scores[method], reliability[method] = _dawid_skene(items, workers, labels, votes, n_workers)
        else:
            scores[method], reliability[method] = _crowd_kit(
                method, items, workers, labels, n_items, n_workers, n_categories, seed
            )
    conventions = {"wawa": f"ties={wawa_ties}"} if "wawa" in methods else {}
    return AnnotatorModels(scores=scores, reliability=reliability, conventions=conventions)


def _wawa(items, workers, labels, votes, n_workers, ties):
    """Worker skill = agreement with the majority vote, a tie scored as `ties` says (WAWA_TIES); the labels
    are the votes weighted by skill. crowd-kit's Wawa.fit gives the "first_seen" skills (its predict fails
    with scikit-learn 1.9)."""
    if ties == "first_seen":
        seen, first_at = np.unique(labels, return_index=True)
        rank = np.full(votes.shape[1], votes.shape[1])
        rank[seen[np.argsort(first_at)]] = np.arange(len(seen))
        at_top = votes == votes.max(axis=1, keepdims=True)
        majority = np.where(at_top, rank, votes.shape[1] + 1).argmin(axis=1)
        credit = (labels == majority[items]).astype(float)
    else:
        at_top = np.isclose(votes, votes.max(axis=1, keepdims=True))
        credit = at_top[items, labels] / at_top.sum(axis=1)[items]
    skill = np.bincount(workers, weights=credit, minlength=n_workers) / np.bincount(workers, minlength=n_workers)
    weighted = np.zeros_like(votes)
    np.add.at(weighted, (items, labels), skill[workers])
    return weighted, skill


def _dawid_skene(items, workers, labels, votes, n_workers):
    """Dawid-Skene's EM as crowd-kit 1.4.2 runs it: start from the majority vote's shares; the M step sums
    each worker's (given label, true label) weights, floors them at PROBABILITY_FLOOR and normalises over the
    labels the worker gave; the E step multiplies the priors by the worker's P(given | true) per answer; stop
    when the evidence lower bound per answer rises by less than the tolerance. Returns the posteriors and
    each worker's accuracy (P(given = true | true) weighted by the class priors)."""
    n_categories = votes.shape[1]
    gave = np.zeros((n_workers, n_categories), dtype=bool)
    gave[workers, labels] = True

    cell = workers * n_categories + labels  # (worker, given) of each answer, flattened
    cells, n_items = n_workers * n_categories, len(votes)
    # Sums by key with bincount, one true label at a time: many times faster than np.add.at, and no
    # (answers x labels) temporaries, so a million answers fit in tens of MB.

    def confusions(posteriors):  # (worker, given, true) -> P(given | true)
        weights = np.empty((cells, n_categories))
        for true in range(n_categories):
            weights[:, true] = np.bincount(cell, weights=posteriors[items, true], minlength=cells)
        weights = weights.reshape(n_workers, n_categories, n_categories)
        weights = np.where(gave[:, :, None], np.maximum(weights, PROBABILITY_FLOOR), 0.0)
        return weights / weights.sum(axis=1, keepdims=True)

    def logs(errors):  # (worker x given, true); -inf where the worker never gave the label (never read)
        flat = errors.reshape(cells, n_categories)
        return np.log(flat, out=np.full_like(flat, -np.inf), where=flat > 0)

    posteriors = votes / votes.sum(axis=1, keepdims=True)
    priors = posteriors.mean(axis=0)
    errors = confusions(posteriors)
    bound = -np.inf
    for _ in range(DAWID_SKENE_ITERATIONS):
        table = logs(errors)
        log_likelihood = np.empty_like(votes)
        for true in range(n_categories):
            log_likelihood[:, true] = np.bincount(items, weights=table[cell, true], minlength=n_items)
        log_likelihood += np.log(np.maximum(priors, PROBABILITY_FLOOR))
        posteriors = np.exp(log_likelihood - log_likelihood.max(axis=1, keepdims=True))
        posteriors /= posteriors.sum(axis=1, keepdims=True)
        priors = posteriors.mean(axis=0)
        errors = confusions(posteriors)
        table, log_priors = logs(errors), np.log(np.maximum(priors, PROBABILITY_FLOOR))
        expected = sum(
            float(np.dot(posteriors[items, true], table[cell, true] + log_priors[true])) for true in range(n_categories)
        )
        floored = np.maximum(posteriors, PROBABILITY_FLOOR)
        new_bound = (expected - (floored * np.log(floored)).sum()) / len(items)
        if new_bound - bound < DAWID_SKENE_TOLERANCE:
            break
        bound = new_bound
    accuracy = np.einsum("wcc,c->w", errors, priors)
    return posteriors, accuracy


def _crowd_kit(method, items, workers, labels, n_items, n_workers, n_categories, seed):
    with warnings.catch_warnings():
        # crowd-kit 1.4.2 uses pandas keywords pandas 3 deprecates (inplace=, copy=): one warning per iteration.
        warnings.filterwarnings("ignore", module=r"crowdkit\.")
        return _fit_crowd_kit(method, items, workers, labels, n_items, n_workers, n_categories, seed)


def _fit_crowd_kit(method, items, workers, labels, n_items, n_workers, n_categories, seed):
    import pandas as pd
    from crowdkit.aggregation import GLAD, MACE

    data = pd.DataFrame({"task": items, "worker": workers, "label": labels})
    if method == "mace":
        model = MACE(n_restarts=MACE_RESTARTS, random_state=seed).fit(data)
        # spamming_ rows follow the workers' order of first appearance; column 1 is "answers the truth".
        order = pd.factorize(data["worker"])[1]
        skill = np.zeros(n_workers)
        skill[np.asarray(order)] = model.spamming_[:, 1]
        probabilities = model.probas_
    else:
        model = GLAD().fit(data)
        skill = model.alphas_.reindex(range(n_workers)).to_numpy(dtype=float)
        probabilities = model.probas_
    scores = probabilities.reindex(index=range(n_items), columns=range(n_categories), fill_value=0.0)
    return scores.to_numpy(dtype=float), skill
