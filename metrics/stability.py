"""Is an item's label distribution known well enough to stop collecting? (stability-based redundancy)

Shapes: `counts` is an (n_items, n_classes) array of whole, non-negative label counts, columns in the label
order of the study. The error measured is the one the app reports for distributions: the Jensen-Shannon
distance (natural log) of `metrics.distributions.js_distance`.

The statistic, `expected_error`, is the posterior expected JS distance between the distribution collected so
far (counts / n) and the item's unknown population distribution, under a Dirichlet(counts + prior) posterior.
It is estimated from `draws` posterior samples drawn from a generator seeded by the seed and the item's
counts, so the same counts always give the same figure, whichever items share the call (the web flow settles
one item at a time, the simulation thousands at once, and both must agree). Why the posterior rather than a
plain bootstrap (resampling the collected labels): a bootstrap of 3 identical labels has spread 0 and would
call the item settled, while the posterior with a Jeffreys prior (0.5 per class) still gives unseen labels
some mass, so unanimity among a few votes is stable only when the threshold allows for that uncertainty.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metrics.distributions import js_distance

JEFFREYS_PRIOR = 0.5
POSTERIOR_DRAWS = 2000


def check_counts(counts: Any, name: str = "counts") -> np.ndarray:
    """`counts` as an int array of shape (n_items, n_classes), n_classes >= 2; ValueError otherwise."""
    array = np.asarray(counts, dtype=float)
    if array.ndim != 2 or array.shape[1] < 2:
        raise ValueError(f"{name} must have shape (n_items, n_classes) with n_classes >= 2, got shape {array.shape}")
    bad = ~np.isfinite(array) | (array < 0) | (array != np.round(array))
    if bad.any():
        row, column = np.argwhere(bad)[0]
        raise ValueError(f"{name} row {row}: {float(array[row, column])!r} is not a whole number of labels >= 0")
    return array.astype(np.int64)


def expected_error(
    counts: Any, prior: float = JEFFREYS_PRIOR, draws: int = POSTERIOR_DRAWS, seed: int = 0
) -> np.ndarray:
    """Posterior expected JS distance between each item's collected distribution and its population one,
    shape (n_items,); an item with no labels yet gets inf (nothing is known about it)."""
    counts = check_counts(counts)
    if not prior > 0:
        raise ValueError(f"prior must be > 0 (pseudo-labels per class), got {prior}")
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    unique, inverse = np.unique(counts, axis=0, return_inverse=True)
    errors = np.full(len(unique), np.inf)
    for index, row in enumerate(unique):
        total = row.sum()
        if total == 0:
            continue
        rng = np.random.default_rng([seed, *row.tolist()])
        samples = rng.standard_gamma(row + prior, size=(draws, len(row)))
        samples /= samples.sum(axis=1, keepdims=True)
        collected = np.broadcast_to(row / total, samples.shape)
        errors[index] = js_distance(collected, samples).mean()
    return errors[inverse.reshape(-1)]


def is_stable(
    counts: Any, threshold: float, minimum: int, maximum: int, prior: float = JEFFREYS_PRIOR, seed: int = 0
) -> np.ndarray:
    """(n_items,) bools: an item is settled once it has `maximum` labels, or at least `minimum` and an
    expected error (see `expected_error`) at most `threshold`."""
    counts = check_counts(counts)
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    if not 1 <= minimum <= maximum:
        raise ValueError(f"need 1 <= minimum ({minimum}) <= maximum ({maximum})")
    labels = counts.sum(axis=1)
    stable = labels >= maximum
    candidates = ~stable & (labels >= minimum)
    if candidates.any():
        stable[candidates] = expected_error(counts[candidates], prior=prior, seed=seed) <= threshold
    return stable


def counts_like(distributions: np.ndarray, labels: Any) -> np.ndarray:
    """Whole counts, shape (n_items, n_classes), each row summing to its number of `labels` (one int, or one
    per item: shape (n_items,)) in the proportions of that row of `distributions` (n_items, n_classes), by
    largest remainder: what a collection of that size looks like if its distribution is the given one."""
    totals = np.broadcast_to(np.asarray(labels, dtype=np.int64), (len(distributions),))
    exact = np.asarray(distributions, dtype=float) * totals[:, None]
    counts = np.floor(exact).astype(np.int64)
    short = totals[:, None] - counts.sum(axis=1, keepdims=True)
    # rank of each class by remainder within its row, largest first (ties to the earlier class)
    ranks = np.argsort(np.argsort(counts - exact, axis=1, kind="stable"), axis=1, kind="stable")
    return counts + (ranks < short)


def labels_to_settle(
    distributions: Any, threshold: float, minimum: int, maximum: int, prior: float = JEFFREYS_PRIOR, seed: int = 0
) -> np.ndarray:
    """For each item of a pilot, (n_items, n_classes) distributions (rows of finite values >= 0, rescaled to
    sum to 1): the fewest labels, from `minimum` to `maximum`, at which a collection with that distribution
    is stable (`is_stable`), shape (n_items,).

    A galloping search over the number of labels (the expected error shrinks as labels grow in fixed
    proportions): sizes minimum, 2 x minimum, 4 x minimum... until one is stable, then a bisection below it.
    Small sizes come first, where many items share their counts (and so their evaluation), and an item
    costs about 2 log2(maximum / minimum) evaluations rather than one per size."""
    rows = np.asarray(distributions, dtype=float)
    if rows.ndim != 2 or rows.shape[1] < 2 or not np.isfinite(rows).all() or (rows < 0).any():
        raise ValueError("distributions must be an (n_items, n_classes) array of finite values >= 0")
    totals = rows.sum(axis=1, keepdims=True)
    if (totals == 0).any():
        raise ValueError(f"distributions row {int(np.argmax(totals == 0))} is all zeros")
    rows = rows / totals
    low = np.full(len(rows), minimum, dtype=np.int64)
    high = np.full(len(rows), maximum, dtype=np.int64)  # stable at `maximum` by definition
    probe = low.copy()
    galloping = np.ones(len(rows), dtype=bool)
    while (searching := low < high).any():
        size = np.where(galloping, probe, (low + high) // 2)[searching]
        stable = is_stable(counts_like(rows[searching], size), threshold, minimum, maximum, prior, seed)
        high[searching] = np.where(stable, size, high[searching])
        low[searching] = np.where(stable, low[searching], size + 1)
        galloping[searching] &= ~stable
        probe[searching] = np.minimum(size * 2, maximum)
    return low


def majority_decided(counts: Any, budget: int) -> np.ndarray:
    """(n_items,) bools: the item's majority label can no longer change within `budget` labels, because the
    leader's lead over the runner-up exceeds the labels still to come (budget - collected). Then stopping
    gives the label that all `budget` labels would give; an item at `budget` labels is decided whatever its
    votes (a tie stays a tie)."""
    counts = check_counts(counts)
    if budget < 1:
        raise ValueError(f"budget must be at least 1 label, got {budget}")
    ordered = np.sort(counts, axis=1)
    lead = ordered[:, -1] - ordered[:, -2]
    collected = counts.sum(axis=1)
    return (lead > budget - collected) | (collected >= budget)


def labels_to_decide_majority(distributions: Any, budget: int) -> np.ndarray:
    """Expected labels an item needs under majority-decided stopping (`majority_decided` within `budget`),
    for each (n_items, n_classes) label distribution (rows rescaled to sum to 1), labels drawn with
    replacement: exact, over every count vector up to `budget` labels, shape (n_items,)."""
    rows = np.asarray(distributions, dtype=float)
    if (
        rows.ndim != 2
        or rows.shape[1] < 2
        or not np.isfinite(rows).all()
        or (rows < 0).any()
        or (rows.sum(axis=1) == 0).any()
    ):
        raise ValueError("distributions must be an (n_items, n_classes) array of finite values >= 0, no row all 0")
    if budget < 1:
        raise ValueError(f"budget must be at least 1 label, got {budget}")
    rows = rows / rows.sum(axis=1, keepdims=True)
    n_classes = rows.shape[1]
    # reach[vector] = probability of collecting exactly that count vector without having stopped before
    reach = {(0,) * n_classes: np.ones(len(rows))}
    expected = np.zeros(len(rows))
    for collected in range(budget + 1):
        following: dict[tuple, np.ndarray] = {}
        for vector, chance in reach.items():
            if collected and majority_decided([vector], budget)[0]:
                expected += collected * chance
                continue
            for label in range(n_classes):
                grown = tuple(count + (index == label) for index, count in enumerate(vector))
                following[grown] = following.get(grown, 0.0) + chance * rows[:, label]
        reach = following
    return expected
