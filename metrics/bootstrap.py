"""Bootstrap intervals over units (items): a percentile interval of one statistic (`bootstrap_ci`, or
`bootstrap_ci_of_counts` for a statistic of how often each unit is drawn), and of many per-unit figures from
the same resamples at once (`bootstrap_figures`, weighted sums instead of resampled copies).

Every function here draws its resamples from np.random.default_rng(seed) in the same order, so one seed
gives the same resamples to all of them, and their intervals agree (tests).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from metrics.distance_correlation import distance_correlation


class ConfidenceInterval(NamedTuple):
    """A statistic on the full data with its bootstrap percentile interval."""

    estimate: float
    low: float
    high: float


def bootstrap_ci(
    statistic_fn: Callable[..., float],
    data: Any,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    axis: int = 0,
) -> ConfidenceInterval:
    """Percentile bootstrap interval of a statistic, resampling units with replacement.

    Args:
        statistic_fn: called as statistic_fn(sample), or statistic_fn(*samples) when `data` is a tuple.
        data: one array, or a tuple of arrays resampled with the same unit indices (e.g. (y_true, y_pred)).
        n_boot: number of bootstrap resamples.
        alpha: 1 - coverage; 0.05 gives the 2.5th and 97.5th percentiles.
        seed: seeds the resampling.
        axis: the units axis of every array: 0 for value counts (units, categories) or vectors, 1 for
            reliability data (annotators, units).

    Returns:
        ConfidenceInterval(estimate on the full data, low, high). Resamples on which the statistic is NaN
        (e.g. alpha undefined) are left out of the percentiles.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    arrays = tuple(np.asarray(array) for array in (data if isinstance(data, tuple) else (data,)))
    n_units = arrays[0].shape[axis]
    if any(array.shape[axis] != n_units for array in arrays):
        raise ValueError("every array in data must have the same number of units along axis")

    estimate = float(statistic_fn(*arrays))
    replicates = np.array(
        [
            statistic_fn(*(np.take(array, sample, axis=axis) for array in arrays))
            for sample in resamples(n_units, n_boot, seed)
        ],
        dtype=float,
    )
    return _percentile_interval(estimate, replicates, alpha)


def bootstrap_ci_of_counts(
    statistic_of_counts: Callable[[np.ndarray], float],
    n_units: int,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> ConfidenceInterval:
    """`bootstrap_ci` for a statistic computed from how often each unit is drawn, (n_units,) whole numbers
    (all ones give the estimate), rather than from copies of the resampled data: the same resamples as
    `bootstrap_ci` with the same seed, without a copy of every array per resample."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    estimate = float(statistic_of_counts(np.ones(n_units, dtype=np.int64)))
    replicates = np.array(
        [statistic_of_counts(np.bincount(sample, minlength=n_units)) for sample in resamples(n_units, n_boot, seed)],
        dtype=float,
    )
    return _percentile_interval(estimate, replicates, alpha)


def resamples(n_units: int, n_boot: int, seed: int):
    """The units each of `n_boot` resamples draws, (n_units,) indices with replacement: every bootstrap here
    draws these, so one seed gives all of them the same resamples."""
    rng = np.random.default_rng(seed)
    for _ in range(n_boot):
        yield rng.integers(0, n_units, n_units)


def _percentile_interval(estimate: float, replicates: np.ndarray, alpha: float) -> ConfidenceInterval:
    """The estimate with the alpha/2 and 1 - alpha/2 percentiles of its replicates, NaN ones left out."""
    replicates = replicates[~np.isnan(replicates)]
    if len(replicates) == 0:
        return ConfidenceInterval(estimate, float("nan"), float("nan"))
    low, high = np.percentile(replicates, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return ConfidenceInterval(estimate, float(low), float(high))


# Bootstrap replicates drawn per block: a (block, units) array of resample counts stays near 40 MB at 100,000
# units. Fixed, so the figures of a seed do not depend on the machine.
_BOOTSTRAP_BLOCK = 50


def bootstrap_weights(n_units: int, n_boot: int, seed: int = 0):
    """Resamples of `n_units` units with replacement, as counts: yields float arrays of shape (block, n_units)
    whose rows sum to n_units, `n_boot` rows in all. Drawing the same indices as `bootstrap_ci` would
    (`resamples`), each row weighs unit u by how often the resample drew it, so a mean
    over a resample is one matrix product instead of a Python loop. float32 holds the counts exactly and
    halves the memory traffic of the rank correlations, which dominate the time."""
    drawn = resamples(n_units, n_boot, seed)
    for start in range(0, n_boot, _BOOTSTRAP_BLOCK):
        block = np.empty((min(_BOOTSTRAP_BLOCK, n_boot - start), n_units), dtype=np.float32)
        for row, sample in zip(block, drawn):
            row[:] = np.bincount(sample, minlength=n_units)
        yield block


def _pearson_from_moments(total, sx, sy, sxx, syy, sxy) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sxy - sx * sy / total) / np.sqrt((sxx - sx**2 / total) * (syy - sy**2 / total))


def _weighted_pearson(weights: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r per row of `weights` (block, n) for (n,) x and y: one matrix product of raw moments, taken
    about the full-sample means so that they do not cancel."""
    x, y = x - x.mean(), y - y.mean()
    sx, sy, sxx, syy, sxy = (weights @ np.column_stack([x, y, x * x, y * y, x * y])).T
    return _pearson_from_moments(weights.sum(axis=1), sx, sy, sxx, syy, sxy)


def _weighted_rank_correlation(weights: np.ndarray, x_ranker, y_ranker) -> np.ndarray:
    """Spearman's rho per row of `weights`: Pearson r of the resample's average ranks (`_ranker`).

    Works in the order that sorts y, where y's ranks are a running sum, and looks x's ranks up per run of
    tied x values. Computed in the dtype of `weights`: float32 for resamples (ranks stay exact; the sums
    lose about 1e-5 of rho, far below the bootstrap's spread), float64 for the estimate on all units.
    """
    x_run_ranks, _ = _run_ranks(weights, x_ranker)
    y_run_ranks, y_sorted_weights = _run_ranks(weights, y_ranker)
    y_order, y_starts, _ = y_ranker
    centre = (weights.shape[1] + 1) / 2  # the mean rank of any resample: centring keeps the moments small
    y_ranks = (
        y_run_ranks
        if len(y_starts) == len(y_order)
        else np.repeat(y_run_ranks, np.diff(np.r_[y_starts, len(y_order)]), axis=1)
    )
    y_ranks -= centre
    x_ranks = np.take(x_run_ranks - centre, x_ranker[2][y_order], axis=1)
    weighted_x, weighted_y = y_sorted_weights * x_ranks, y_sorted_weights * y_ranks
    return _pearson_from_moments(
        weights.sum(axis=1),
        weighted_x.sum(axis=1),
        weighted_y.sum(axis=1),
        np.einsum("ij,ij->i", weighted_x, x_ranks),
        np.einsum("ij,ij->i", weighted_y, y_ranks),
        np.einsum("ij,ij->i", weighted_x, y_ranks),
    )


def _ranker(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sort order, start of each run of equal values in it, each unit's run), computed once per variable."""
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    new_run = np.r_[True, sorted_values[1:] != sorted_values[:-1]]
    run = np.empty(len(values), dtype=np.intp)
    run[order] = np.cumsum(new_run) - 1
    return order, np.flatnonzero(new_run), run


def _run_ranks(weights: np.ndarray, ranker) -> tuple[np.ndarray, np.ndarray]:
    """(average rank of each run of tied values in each resample, (block, runs); the weights in sorted
    order). A unit drawn w times occupies w tied places, as it would in the resampled array."""
    order, starts, _ = ranker
    sorted_weights = np.take(weights, order, axis=1)
    run_weight = sorted_weights if len(starts) == len(order) else np.add.reduceat(sorted_weights, starts, axis=1)
    ranks = np.cumsum(run_weight, axis=1)
    ranks -= (run_weight - 1) / 2
    return ranks, sorted_weights


def _centred_for_resampling(points: np.ndarray) -> np.ndarray:
    """Euclidean distance matrix of (n, dims) points, double-centred on all points.

    Weighted double centring ignores row and column constants, so centring once on all points leaves every
    resample's distance covariance unchanged while it keeps the entries near 0: the resampling's float32
    matrix products (half the time of float64) then lose about 1e-6 of each figure, far below the
    bootstrap's own spread.
    """
    distances = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(axis=2))
    return distances - distances.mean(axis=0) - distances.mean(axis=1)[:, None] + distances.mean()


def _distance_products(x_distances: np.ndarray, y_distances: np.ndarray) -> np.ndarray:
    """[A | B | A∘B | A∘A | B∘B] side by side, (n, 5n) float32: one matrix product per block of resamples
    then gives every weighted sum `_weighted_distance_correlation` needs."""
    return np.hstack([x_distances, y_distances, x_distances * y_distances, x_distances**2, y_distances**2]).astype(
        np.float32
    )


def _weighted_distance_correlation(weights: np.ndarray, products: np.ndarray) -> np.ndarray:
    """Distance correlation (V-statistic) of each resample, from `_distance_products`.

    With weights w, n^2 times a squared distance covariance is w'(A∘B)w - 2 sum_i w_i (Aw)_i (Bw)_i / n
    + (w'Aw)(w'Bw) / n^2: the weighted double centring of A sums to 0 against w along each row, so B need
    not be centred again.
    """
    n = weights.shape[1]
    weights = weights.astype(np.float32, copy=False)
    a_w, b_w, ab_w, aa_w, bb_w = np.split(weights @ products, 5, axis=1)

    def covariance(first_w, second_w, both_w):
        both = (weights * both_w).sum(axis=1, dtype=float)
        cross = (weights * first_w * second_w).sum(axis=1, dtype=float) / n
        first, second = (weights * first_w).sum(axis=1, dtype=float), (weights * second_w).sum(axis=1, dtype=float)
        return both - 2 * cross + first * second / n**2

    variances = covariance(a_w, a_w, aa_w) * covariance(b_w, b_w, bb_w)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = covariance(a_w, b_w, ab_w) / np.sqrt(variances)
    # A resample on which either side is constant: 0 by definition, as `distance_correlation` gives.
    return np.where(variances > 0, np.sqrt(np.clip(ratio, 0, None)), 0.0)


def bootstrap_figures(
    n_units: int,
    means: dict[str, np.ndarray] | None = None,
    correlations: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
    distance_correlations: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> dict[str, ConfidenceInterval]:
    """Percentile bootstrap intervals of many per-unit figures from the same resamples of the units.

    Args:
        n_units: how many units (items) are resampled.
        means: name -> (n_units,) per-unit values; the figure is their mean. NaN marks a unit the figure does
            not cover (e.g. an item with one vote in a split-half baseline): the mean is over the resample's
            covered units.
        correlations: name -> (x, y), both (n_units,); gives `name.pearson` and `name.spearman`.
        distance_correlations: name -> (x, y), (n_units,) or (n_units, dims), at most a few thousand units
            (it builds (n, n) distance matrices): distance correlation (metrics.soft_labels).
        n_boot: resamples; 0 gives the estimates with NaN bounds.
        alpha: 1 - coverage.
        seed: seeds `bootstrap_weights`, so one seed gives the same intervals every time.

    Returns:
        name -> ConfidenceInterval(estimate on all units, low, high); resamples on which a figure is
        undefined (NaN or infinite) are left out of its percentiles. Means and correlations get the
        percentile interval. Distance correlations get `bias_shifted_interval`: resampling repeats units,
        which sit at distance 0 from each other, so resampled distance correlations run above the estimate
        and the plain percentile interval can lie wholly above it.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be 0 or more, got {n_boot}")
    means, correlations, distance_correlations = means or {}, correlations or {}, distance_correlations or {}
    for name, values in [*means.items(), *((n, v) for n, pair in correlations.items() for v in pair)]:
        if np.shape(values) != (n_units,):
            raise ValueError(f"{name} must have shape ({n_units},), got {np.shape(values)}")

    names = list(means)
    covered = np.column_stack([~np.isnan(means[name]) for name in names]) if names else np.zeros((n_units, 0))
    values = np.column_stack([np.nan_to_num(means[name]) for name in names]) if names else covered
    pairs = {name: tuple(np.asarray(v, dtype=float) for v in pair) for name, pair in correlations.items()}
    rankers = {name: (_ranker(x), _ranker(y)) for name, (x, y) in pairs.items()}
    distances, exact = {}, {}
    for name, (x, y) in distance_correlations.items():
        x, y = (np.asarray(v, dtype=float).reshape(n_units, -1) for v in (x, y))
        exact[name] = distance_correlation(x, y)
        distances[name] = _distance_products(*(_centred_for_resampling(v) for v in (x, y)))

    def figures(weights: np.ndarray) -> dict[str, np.ndarray]:
        weights_64 = weights.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            results = dict(zip(names, ((weights_64 @ values) / (weights_64 @ covered)).T, strict=True))
        for name, (x, y) in pairs.items():
            results[f"{name}.pearson"] = _weighted_pearson(weights_64, x, y)
            results[f"{name}.spearman"] = _weighted_rank_correlation(weights, *rankers[name])
        for name, products in distances.items():
            results[name] = _weighted_distance_correlation(weights, products)
        return results

    # The resamples' distance correlations run in float32; the estimate is the exact float64 one.
    estimates = {name: float(value[0]) for name, value in figures(np.ones((1, n_units))).items()} | exact
    blocks = [figures(weights) for weights in bootstrap_weights(n_units, n_boot, seed)]
    intervals = {}
    for name, estimate in estimates.items():
        replicates = np.concatenate([block[name] for block in blocks]) if blocks else np.empty(0)
        # A correlation on a resample whose values are all tied divides ~0 by 0: left out, like NaN.
        replicates = replicates[np.isfinite(replicates)]
        if len(replicates) == 0:
            intervals[name] = ConfidenceInterval(estimate, float("nan"), float("nan"))
            continue
        if name in distances:
            low, high = bias_shifted_interval(replicates, estimate, alpha)
        else:
            low, high = np.percentile(replicates, [100 * alpha / 2, 100 * (1 - alpha / 2)])
        intervals[name] = ConfidenceInterval(estimate, float(low), float(high))
    return intervals


def bias_shifted_interval(replicates: np.ndarray, estimate: float, alpha: float) -> tuple[float, float]:
    """The percentile interval of `replicates` moved down by the resampling's bias (mean of the replicates
    minus the estimate), clipped to [0, 1] (a distance correlation's range).

    It contains the estimate whenever the replicates' mean lies within their own alpha/2 and 1 - alpha/2
    percentiles, which fails only for replicates so skewed that more than alpha/2 of them sit on one side
    of all the others' mean. Efron's bias-corrected (BC) percentile interval was tried first and does not
    serve: on an independent pair (a random model against humans) every resample lies above the estimate,
    so its correction is unbounded."""
    bias = float(np.mean(replicates)) - estimate
    low, high = np.percentile(replicates, [100 * alpha / 2, 100 * (1 - alpha / 2)]) - bias
    return float(np.clip(low, 0, 1)), float(np.clip(high, 0, 1))
