"""Inter-annotator agreement metrics.

Two input layouts are used, the same as the `krippendorff` package:

* reliability data: array of shape (annotators, units); entry [a, u] is the value annotator `a` gave to
  unit `u`, NaN where `a` did not annotate `u`. Values are numbers (encode category labels as codes, e.g.
  with `reliability_matrix(rows, categories=...)`).
* value counts: array of shape (units, categories); entry [u, c] is how many annotators gave unit `u` the
  value of column `c` (e.g. ChaosNLI's `label_count`, ordered [e, n, c]).

Krippendorff's alpha here never builds a (units x values x values) array: interval alpha uses per-unit sums
of squares, ordinal alpha is interval alpha on mid-ranks of the pooled values, nominal alpha counts equal
pairs; all three run in O(N log N) for N annotations. Ratio alpha needs the pairwise ratio distance, so its
expected disagreement costs O(V^2) time (in row chunks, O(V) memory) for V distinct values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from metrics.checks import check_reliability_data, check_value_counts
from metrics.distributions import js_distance

LEVELS = ("nominal", "ordinal", "interval", "ratio")

# Rows of the ratio metric's (values x values) block computed at once; bounds memory to this many floats.
_RATIO_BLOCK_ELEMENTS = 4_000_000


# --------------------------------------------------------------------------------------------------------
# Layout helpers
# --------------------------------------------------------------------------------------------------------


def reliability_matrix(rows: Iterable[Sequence[Any]], categories: Sequence[Any] | None = None) -> pd.DataFrame:
    """Pivot long crowdworker rows into a reliability matrix.

    Args:
        rows: iterable of (item_id, worker_id, value) triples, one per annotation.
        categories: if given, each value must be one of these and is replaced by its index (for category
            labels such as "e"/"n"/"c"); otherwise values must be numbers.

    Returns:
        DataFrame of shape (workers, items), float, NaN where a worker did not annotate an item. The index
        holds worker ids and the columns item ids, both in order of first appearance.
        `np.asarray(result)` is the reliability data the other functions take.

    Raises:
        ValueError: a row that is not a triple, a worker who annotated the same item twice, a value not in
            `categories`, or a non-numeric value; the message names the row number (0-based).
    """
    items, workers, values = [], [], []
    for row_number, row in enumerate(rows):
        if len(row) != 3:
            raise ValueError(f"row {row_number}: expected (item_id, worker_id, value), got {len(row)} fields")
        items.append(row[0])
        workers.append(row[1])
        values.append(row[2])
    item_codes, item_ids = pd.factorize(pd.Series(items, dtype=object))
    worker_codes, worker_ids = pd.factorize(pd.Series(workers, dtype=object))
    return reliability_matrix_from_codes(
        item_codes, worker_codes, value_codes(values, categories), item_ids, worker_ids
    )


def value_codes(values: Sequence[Any], categories: Sequence[Any] | None = None, first_row: int = 0) -> np.ndarray:
    """Annotation values as the floats reliability data holds: a category's index in `categories`, or the
    value as a number when there are no categories.

    Raises:
        ValueError: a value not in `categories`, or not a number; the message names its row, counted from
            `first_row` (for values read in chunks).
    """
    codes = np.empty(len(values))
    category_index = {category: index for index, category in enumerate(categories or ())}
    for position, value in enumerate(values):
        if categories is not None:
            if value not in category_index:
                raise ValueError(f"row {first_row + position}: value {value!r} is not one of {list(categories)!r}")
            codes[position] = category_index[value]
        else:
            try:
                codes[position] = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"row {first_row + position}: value {value!r} is not a number") from None
    return codes


def reliability_matrix_from_codes(
    item_codes: np.ndarray,
    worker_codes: np.ndarray,
    values: np.ndarray,
    item_ids: Sequence | pd.Index,
    worker_ids: Sequence | pd.Index,
) -> pd.DataFrame:
    """The pivot of reliability_matrix, from annotations already coded: row i puts values[i] (a number,
    `value_codes`) at (worker_codes[i], item_codes[i]); item_ids[c] and worker_ids[c] name code c. Coded
    columns hold a million annotations in 16 MB (int32 codes) where rows of Python tuples take ten times that.

    Raises:
        ValueError: a worker who annotated the same item twice, naming the row (0-based).
    """
    check_one_value_each(item_codes, worker_codes, item_ids, worker_ids)
    matrix = np.full((len(worker_ids), len(item_ids)), np.nan)
    matrix[worker_codes, item_codes] = values
    return pd.DataFrame(matrix, index=pd.Index(worker_ids, name="worker"), columns=pd.Index(item_ids, name="item"))


def check_one_value_each(
    item_codes: np.ndarray, worker_codes: np.ndarray, item_ids: Sequence | pd.Index, worker_ids: Sequence | pd.Index
) -> None:
    """ValueError naming the first row (0-based) at which a worker gives an item a second value; the codes
    are those of `reliability_matrix_from_codes`."""
    cells = np.asarray(worker_codes, dtype=np.int64) * len(item_ids) + item_codes
    in_order = np.sort(cells)  # a sorted copy and a comparison: a hash table of a million cells takes ~40 MB
    if (in_order[1:] == in_order[:-1]).any():
        del in_order
        by_cell = np.argsort(cells, kind="stable")  # a cell's rows in row order: all but the first repeat it
        repeats = by_cell[1:][cells[by_cell[1:]] == cells[by_cell[:-1]]]
        row_number = int(repeats.min())
        raise ValueError(
            f"row {row_number}: worker {worker_ids[worker_codes[row_number]]!r} already annotated item "
            f"{item_ids[item_codes[row_number]]!r}"
        )


def _annotations_by_unit(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Non-missing entries of an (annotators, units) matrix as (unit index, value), grouped by unit.

    Returns (units, values, n_units); `units` is non-decreasing.
    """
    by_unit = matrix.T
    present = ~np.isnan(by_unit)
    units = np.repeat(np.arange(by_unit.shape[0]), present.sum(axis=1))
    return units, by_unit[present], by_unit.shape[0]


# --------------------------------------------------------------------------------------------------------
# Krippendorff's alpha
# --------------------------------------------------------------------------------------------------------


def krippendorff_alpha(
    reliability_data: Any = None,
    value_counts: Any = None,
    level: str = "interval",
    value_domain: Sequence[float] | None = None,
) -> float:
    """Krippendorff's alpha, exact, without the (units x values x values) array.

    Give exactly one of:
        reliability_data: shape (annotators, units), numbers, NaN for missing.
        value_counts: shape (units, categories), non-negative whole numbers.

    Args:
        level: "nominal", "ordinal", "interval" or "ratio". With reliability data the ordinal order is the
            numeric order of the values; with value counts it is the column order.
        value_domain: only with value_counts; the value of each column, shape (categories,), used by the
            interval and ratio metrics. Defaults to 0, 1, ..., categories - 1 (as the `krippendorff`
            package does).

    Returns:
        alpha = 1 - D_o / D_e over pairable values (units with at least two values); NaN when D_e is 0,
        i.e. every pairable value is the same.

    Raises:
        ValueError: bad shapes or values, an unknown level, or no unit with two or more values.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    if (reliability_data is None) == (value_counts is None):
        raise ValueError("give exactly one of reliability_data and value_counts")

    if reliability_data is not None:
        if value_domain is not None:
            raise ValueError("value_domain applies to value_counts only; reliability data carries its values")
        matrix = check_reliability_data(reliability_data)
        if level == "interval":
            observed, expected = _interval_disagreements_of_matrix(matrix)
            return float("nan") if expected == 0 else float(1.0 - observed / expected)
        units, values, n_units = _annotations_by_unit(matrix)
        weights = np.ones(len(values))
        domain, codes = np.unique(values, return_inverse=True)
    else:
        counts = check_value_counts(value_counts)
        n_units, n_categories = counts.shape
        domain = np.arange(n_categories, dtype=float) if value_domain is None else np.asarray(value_domain, float)
        if domain.shape != (n_categories,):
            raise ValueError(f"value_domain must have {n_categories} entries, one per column of value_counts")
        units, codes = np.nonzero(counts)
        weights = counts[units, codes]

    unit_sizes = np.bincount(units, weights=weights, minlength=n_units)
    pairable = unit_sizes[units] >= 2
    if not pairable.any():
        raise ValueError("alpha needs at least one unit with values from two or more annotators")
    units, codes, weights = units[pairable], codes[pairable], weights[pairable]
    unit_sizes = np.bincount(units, weights=weights, minlength=n_units)

    if level == "nominal":
        observed, expected = _nominal_disagreements(units, codes, weights, unit_sizes, len(domain))
    elif level == "interval":
        observed, expected = _interval_disagreements(units, domain[codes], weights, unit_sizes)
    elif level == "ordinal":
        observed, expected = _interval_disagreements(
            units, _ordinal_positions(codes, weights, len(domain))[codes], weights, unit_sizes
        )
    else:
        observed, expected = _ratio_disagreements(units, codes, weights, unit_sizes, domain)

    if expected == 0:
        return float("nan")
    return float(1.0 - observed / expected)


# Each *_disagreements function returns (observed, expected), both scaled by the number of pairable values,
# so alpha = 1 - observed / expected. With n_u values in unit u and n pairable values in all:
#   observed = sum_u 1/(n_u - 1) * sum over ordered pairs i != j within u of d(v_i, v_j)
#   expected = 1/(n - 1) * sum over ordered pairs i != j of all pairable values of d(v_i, v_j)


def _nominal_disagreements(units, codes, weights, unit_sizes, n_categories):
    """Nominal metric: ordered pairs that differ = size^2 - sum of squared counts of each value."""
    cell_keys, cell_index = np.unique(units * n_categories + codes, return_inverse=True)
    cell_counts = np.bincount(cell_index, weights=weights)
    equal_pairs_by_unit = np.bincount(cell_keys // n_categories, weights=cell_counts**2, minlength=len(unit_sizes))
    in_use = unit_sizes >= 2
    observed = np.sum((unit_sizes[in_use] ** 2 - equal_pairs_by_unit[in_use]) / (unit_sizes[in_use] - 1))
    category_totals = np.bincount(codes, weights=weights, minlength=n_categories)
    total = category_totals.sum()
    expected = (total**2 - np.sum(category_totals**2)) / (total - 1)
    return observed, expected


def _interval_disagreements(units, values, weights, unit_sizes):
    """Interval metric: ordered pairs' squared differences = 2 * size * sum of squared deviations."""
    n_units = len(unit_sizes)
    in_use = unit_sizes >= 2
    unit_sums = np.bincount(units, weights=weights * values, minlength=n_units)
    unit_means = np.divide(unit_sums, unit_sizes, out=np.zeros(n_units), where=in_use)
    # Deviations from the unit mean rather than raw sums of squares, to avoid cancellation.
    unit_squares = np.bincount(units, weights=weights * (values - unit_means[units]) ** 2, minlength=n_units)
    observed = np.sum(2 * unit_sizes[in_use] * unit_squares[in_use] / (unit_sizes[in_use] - 1))

    total = weights.sum()
    pooled_mean = np.sum(weights * values) / total
    pooled_squares = np.sum(weights * (values - pooled_mean) ** 2)
    expected = 2 * total * pooled_squares / (total - 1)
    return observed, expected


def _interval_disagreements_of_matrix(matrix):
    """_interval_disagreements on reliability data as it is, (annotators, units): the same sums in the same
    order (each unit's values in annotator order, then the pairable values unit by unit), so the same floats,
    without the per-value unit, weight and code arrays (a few times the data's size at its peak, not ten)."""
    present = ~np.isnan(matrix)
    unit_sizes = present.sum(axis=0)
    pairable = unit_sizes >= 2
    if not pairable.any():
        raise ValueError("alpha needs at least one unit with values from two or more annotators")
    if not pairable.all():
        matrix, present, unit_sizes = matrix[:, pairable], present[:, pairable], unit_sizes[pairable]
    _, unit_squares = _unit_means_and_squares(matrix, unit_sizes)
    observed = np.sum(2 * unit_sizes * unit_squares / (unit_sizes - 1))

    values = matrix.T[present.T]  # the pairable values, unit by unit
    total = float(len(values))
    pooled_mean = np.sum(values) / total
    values -= pooled_mean
    np.square(values, out=values)
    expected = 2 * total * np.sum(values) / (total - 1)
    return observed, expected


def _unit_means_and_squares(matrix: np.ndarray, unit_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's mean and sum of squared deviations from it, (units,) each, for (annotators, units) data."""
    unit_means = np.nansum(matrix, axis=0) / unit_sizes
    deviations = matrix - unit_means
    np.square(deviations, out=deviations)
    return unit_means, np.nansum(deviations, axis=0)


def interval_alpha_of_counts(reliability_data: Any) -> Callable[[np.ndarray], float]:
    """Interval alpha as a function of how often each unit is drawn, for `metrics.bootstrap.bootstrap_ci_of_counts`.

    reliability_data: shape (annotators, units), NaN for missing, every unit with two or more values. The
    sums of `_interval_disagreements` are kept per unit (its values' count, mean and squared deviations), so
    a resample's alpha is a few dot products over the units, not a copy of the data: with all counts 1 it
    is `krippendorff_alpha(reliability_data=..., level="interval")` to floating-point rounding.
    """
    matrix = check_reliability_data(reliability_data)
    sizes = (~np.isnan(matrix)).sum(axis=0)
    if len(sizes) == 0 or sizes.min() < 2:
        raise ValueError("interval_alpha_of_counts needs units with two or more values each")
    means, squares = _unit_means_and_squares(matrix, sizes)
    within = 2 * sizes * squares / (sizes - 1)

    def alpha(counts: np.ndarray) -> float:
        counts = np.asarray(counts, dtype=float)
        total = counts @ sizes
        pooled_mean = counts @ (sizes * means) / total
        pooled_squares = counts @ (squares + sizes * np.square(means - pooled_mean))
        expected = 2 * total * pooled_squares / (total - 1)
        return float("nan") if expected == 0 else float(1.0 - (counts @ within) / expected)

    return alpha


def _ordinal_positions(codes, weights, n_categories):
    """Mid-rank of each category among the pairable values.

    Krippendorff's ordinal distance between categories c <= k is
    (n_c + ... + n_k - (n_c + n_k) / 2)^2, which equals (position_k - position_c)^2 for
    position_g = n_1 + ... + n_g - n_g / 2. Ordinal alpha is therefore interval alpha on these positions.
    """
    category_totals = np.bincount(codes, weights=weights, minlength=n_categories)
    return np.cumsum(category_totals) - category_totals / 2


def _ratio_distance(first, second):
    """((a - b) / (a + b))^2, taken as 0 where a + b = 0 (as the `krippendorff` package does)."""
    sums = first + second
    ratio = np.divide(first - second, sums, out=np.zeros(np.broadcast(first, second).shape), where=sums != 0)
    return ratio**2


def _ratio_disagreements(units, codes, weights, unit_sizes, domain):
    """Ratio metric: explicit pairs within units, and a chunked pass over pairs of distinct values."""
    n_categories = len(domain)
    cell_keys, cell_index = np.unique(units * n_categories + codes, return_inverse=True)
    cell_counts = np.bincount(cell_index, weights=weights)
    cell_units, cell_codes = cell_keys // n_categories, cell_keys % n_categories

    # Pair every distinct value of a unit with every distinct value of the same unit.
    cells_per_unit = np.bincount(cell_units, minlength=len(unit_sizes))
    first_cell_of_unit = np.cumsum(cells_per_unit) - cells_per_unit
    partners = cells_per_unit[cell_units]
    left = np.repeat(np.arange(len(cell_keys)), partners)
    offset = np.arange(len(left)) - np.repeat(np.cumsum(partners) - partners, partners)
    right = np.repeat(first_cell_of_unit[cell_units], partners) + offset
    pair_distances = _ratio_distance(domain[cell_codes[left]], domain[cell_codes[right]])
    observed = np.sum(cell_counts[left] * cell_counts[right] * pair_distances / (unit_sizes[cell_units[left]] - 1))

    category_totals = np.bincount(codes, weights=weights, minlength=n_categories)
    used = category_totals > 0
    used_values, used_totals = domain[used], category_totals[used]
    block = max(1, _RATIO_BLOCK_ELEMENTS // len(used_values))
    pair_sum = 0.0
    for start in range(0, len(used_values), block):
        rows = slice(start, start + block)
        distances = _ratio_distance(used_values[rows, np.newaxis], used_values[np.newaxis, :])
        pair_sum += used_totals[rows] @ distances @ used_totals
    expected = pair_sum / (used_totals.sum() - 1)
    return observed, expected


def masi_distance(first: frozenset, second: frozenset) -> float:
    """MASI distance between two label sets (Passonneau 2006, as nltk.metrics.distance computes it):
    1 - Jaccard x monotonicity, where monotonicity is 1 for equal sets, 2/3 when one holds the other,
    1/3 when they share some labels and 0 when they share none. Two empty sets are at distance 0."""
    if first == second:
        return 0.0
    shared = len(first & second)
    if not shared:
        return 1.0
    monotonicity = 2 / 3 if first <= second or second <= first else 1 / 3
    return 1.0 - shared / len(first | second) * monotonicity


def krippendorff_alpha_sets(
    units: Iterable[Iterable[Iterable[Any]]], distance: Callable[[frozenset, frozenset], float] = masi_distance
) -> float:
    """Krippendorff's alpha over set-valued annotations (several labels per annotator), with a distance
    between label sets (MASI by default).

    units: per unit (item), the label set of each annotator who answered it; units with fewer than two
        sets carry no pairs and are left out.

    Returns:
        alpha = 1 - D_o / D_e, as krippendorff_alpha defines them with `distance` as the metric; NaN when
        D_e is 0 (every pairable set is the same).

    Raises:
        ValueError: no unit with label sets from two or more annotators.
    """
    pairable = [[frozenset(labels) for labels in unit] for unit in units]
    pairable = [unit for unit in pairable if len(unit) >= 2]
    if not pairable:
        raise ValueError("alpha needs at least one unit with label sets from two or more annotators")
    values = sorted({labels for unit in pairable for labels in unit}, key=lambda labels: sorted(map(str, labels)))
    column = {labels: index for index, labels in enumerate(values)}
    counts = np.zeros((len(pairable), len(values)))
    for row, unit in enumerate(pairable):
        for labels in unit:
            counts[row, column[labels]] += 1
    # The distances between the distinct sets only: a few labels give at most 2^labels of them.
    metric = np.array([[distance(first, second) for second in values] for first in values])
    observed = np.sum(np.einsum("uc,ck,uk->u", counts, metric, counts) / (counts.sum(axis=1) - 1))
    totals = counts.sum(axis=0)
    expected = totals @ metric @ totals / (totals.sum() - 1)
    if expected == 0:
        return float("nan")
    return float(1.0 - observed / expected)


# --------------------------------------------------------------------------------------------------------
# Agreement per unit (between annotators: metrics.pairwise)
# --------------------------------------------------------------------------------------------------------


def item_pair_agreement(value_counts: Any) -> np.ndarray:
    """Share of agreeing annotator pairs on each unit with two or more values.

    value_counts: shape (units, categories). Returns shape (pairable units,), values in [0, 1]:
    sum_c n_c (n_c - 1) / (n (n - 1)) for a unit with n values, n_c of them in category c.
    """
    counts = check_value_counts(value_counts)
    counts = counts[pairable_units(counts)]
    sizes = counts.sum(axis=1)
    return (counts * (counts - 1)).sum(axis=1) / (sizes * (sizes - 1))


def fleiss_kappa(value_counts: Any) -> float:
    """Fleiss' kappa (Fleiss 1971) of units that were each rated by the same number of annotators.

    Args:
        value_counts: shape (units, categories), every row summing to the same n >= 2.

    Returns:
        (P - P_e) / (1 - P_e), where P is the mean over units of `item_pair_agreement` and P_e the sum over
        categories of the squared share of all ratings; NaN when P_e is 1 (one category used throughout).
        Equals statsmodels.stats.inter_rater.fleiss_kappa(value_counts).

    Raises:
        ValueError: bad counts, no unit, or units rated by different numbers of annotators (or fewer than 2).
    """
    counts = check_value_counts(value_counts)
    sizes = counts.sum(axis=1)
    if len(counts) == 0 or sizes.min() != sizes.max() or sizes[0] < 2:
        raise ValueError("fleiss_kappa needs units that were each rated by the same number (2 or more) of annotators")
    chance = float(np.sum((counts.sum(axis=0) / sizes.sum()) ** 2))
    if chance == 1.0:
        return float("nan")
    return (float(item_pair_agreement(counts).mean()) - chance) / (1.0 - chance)


def item_mean_abs_difference(values: Any) -> np.ndarray:
    """Mean absolute difference between the values of each unit with two or more.

    values: shape (annotators, units), NaN for missing (e.g. values packed per unit, NaN-padded). Returns
    shape (units with >= 2 values,), the mean over all pairs of the unit's values.
    """
    values = check_reliability_data(values)
    values = values[:, (~np.isnan(values)).sum(axis=0) >= 2]
    if len(values) < 2:
        return np.empty(0)
    differences = np.stack([np.abs(values[a] - values[b]) for a, b in combinations(range(len(values)), 2)])
    return np.nanmean(differences, axis=0)


def _varies(values: np.ndarray) -> bool:
    return bool(np.ptp(values) > 0)


# --------------------------------------------------------------------------------------------------------
# Human baselines
# --------------------------------------------------------------------------------------------------------


def _majority_by_group(groups, values, n_groups, rng):
    """Most frequent value of each group (groups non-decreasing); ties broken at random."""
    order = np.lexsort((values, groups))
    groups, values = groups[order], values[order]
    run_starts = np.flatnonzero(np.r_[True, (groups[1:] != groups[:-1]) | (values[1:] != values[:-1])])
    run_lengths = np.diff(np.r_[run_starts, len(values)])
    run_groups, run_values = groups[run_starts], values[run_starts]
    # A random fraction below 1 only reorders runs of equal length.
    score = run_lengths + rng.random(len(run_lengths))
    best = np.lexsort((score, run_groups))
    last_of_group = np.r_[run_groups[best][1:] != run_groups[best][:-1], True]
    majority = np.full(n_groups, np.nan)
    majority[run_groups[best][last_of_group]] = run_values[best][last_of_group]
    return majority


def human_baseline(reliability_data: Any, aggregate: str = "median", seed: int = 0) -> dict[str, float]:
    """Score one held-out annotation per unit against the aggregate of the unit's other annotations.

    For every unit with at least two values, one annotation (uniformly at random) plays the model's
    prediction and the aggregate of the remaining ones plays the gold label; the result is scored like a
    model with Pearson r, Spearman rho and mean squared error over units.

    Args:
        reliability_data: shape (annotators, units), NaN for missing.
        aggregate: "median", "mean" or "majority" (most frequent value, ties broken at random).
        seed: seeds the choice of held-out annotations and tie-breaking.

    Returns:
        {"pearson", "spearman", "mse", "units"}; correlations are NaN when either side is constant.
    """
    if aggregate not in ("median", "mean", "majority"):
        raise ValueError(f"aggregate must be 'median', 'mean' or 'majority', got {aggregate!r}")
    matrix = check_reliability_data(reliability_data)
    present = ~np.isnan(matrix)
    sizes = present.sum(axis=0)
    scored = sizes >= 2
    if not scored.any():
        raise ValueError("human_baseline needs at least one unit with two or more values")
    if not scored.all():
        matrix, present, sizes = matrix[:, scored], present[:, scored], sizes[scored]
    n_scored = len(sizes)
    columns = np.arange(n_scored)

    # The held-out value of each unit: one of its values in annotator order, drawn uniformly.
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, sizes)
    ranks = np.cumsum(present, axis=0, dtype=np.int32) - 1  # each value's place among its unit's values
    rows = np.argmax(present & (ranks == picks), axis=0)
    del ranks
    held_out = matrix[rows, columns]
    rest = matrix.copy()
    rest[rows, columns] = np.nan

    if aggregate == "mean":
        reference = np.nansum(rest, axis=0) / (sizes - 1)
    elif aggregate == "median":
        rest.sort(axis=0)  # NaN last: each unit's remaining values first, ascending
        reference = (rest[(sizes - 2) // 2, columns] + rest[(sizes - 1) // 2, columns]) / 2
    else:
        rest_units, rest_values, _ = _annotations_by_unit(rest)
        reference = _majority_by_group(rest_units, rest_values, n_scored, rng)
    del rest

    pearson = spearman = float("nan")
    if _varies(reference) and _varies(held_out):
        pearson = float(stats.pearsonr(reference, held_out).statistic)
        spearman = float(stats.spearmanr(reference, held_out).statistic)
    return {
        "pearson": pearson,
        "spearman": spearman,
        "mse": float(np.mean((held_out - reference) ** 2)),
        "units": int(n_scored),
    }


def pairable_units(value_counts: Any) -> np.ndarray:
    """(units,) mask of the units of a (units, categories) value-count array with two or more values."""
    return check_value_counts(value_counts).sum(axis=1) >= 2


def split_half_counts(label_counts: Any, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Vote counts of two random halves of each pairable unit's annotators.

    Args:
        label_counts: shape (units, categories), non-negative whole numbers.
        seed: seeds np.random.default_rng, the one source of randomness.

    Returns:
        (first, second), both int arrays of shape (pairable units, categories), in the order of the units
        with two or more votes (the others are dropped before anything is drawn, so they do not shift the
        random stream). A unit of n votes gives floor(n/2) votes to the first half, drawn without
        replacement (a multivariate hypergeometric draw, made category by category for all units at once),
        and the other ceil(n/2) to the second.
    """
    counts = check_value_counts(label_counts).astype(np.int64)
    counts = counts[counts.sum(axis=1) >= 2]
    rng = np.random.default_rng(seed)
    first_half = np.zeros_like(counts)
    remaining = counts.sum(axis=1)
    still_needed = remaining // 2
    for category in range(counts.shape[1] - 1):
        in_category = counts[:, category]
        drawn = rng.hypergeometric(in_category, remaining - in_category, still_needed)
        first_half[:, category] = drawn
        still_needed -= drawn
        remaining -= in_category
    first_half[:, -1] = still_needed
    return first_half, counts - first_half


def split_half_jsd(label_counts: Any, seed: int = 0, squared: bool = False) -> float:
    """Human-vs-human baseline: mean Jensen-Shannon distance between two random halves of each unit's votes.

    The halves are those of `split_half_counts(label_counts, seed)`; each half's label distribution is
    compared with scipy.spatial.distance.jensenshannon (natural log, so a distance in [0, sqrt(ln 2)]).
    This is the human counterpart of the model-vs-human JSD; the ChaosNLI suite and the agreement report
    both call it, with the same seed semantics, so one file gives one number.

    Args:
        label_counts: shape (units, categories), non-negative whole numbers (e.g. ChaosNLI `label_count`,
            columns in the data set's label order).
        seed: seeds the split.
        squared: the mean JS divergence (the squared distance) instead.

    Returns:
        The mean over the units with two or more votes (`pairable_units`); units with fewer are left out.

    Raises:
        ValueError: bad counts, or no unit with two or more votes.
    """
    per_unit = split_half_jsd_per_unit(label_counts, seed, squared)
    if len(per_unit) == 0:
        raise ValueError("split_half_jsd needs at least one unit with two or more annotators")
    return float(np.mean(per_unit))


def split_half_jsd_per_unit(label_counts: Any, seed: int = 0, squared: bool = False) -> np.ndarray:
    """The JS distance (or divergence) between the two halves of each pairable unit, shape (pairable units,),
    in the order of `pairable_units`; `split_half_jsd` is its mean (the suites bootstrap it over units)."""
    first, second = split_half_counts(label_counts, seed)
    if len(first) == 0:
        return np.empty(0)
    first_dist = first / first.sum(axis=1, keepdims=True)
    second_dist = second / second.sum(axis=1, keepdims=True)
    return js_distance(first_dist, second_dist, squared=squared)
