"""Agreement between every two annotators on the units both labelled: the mean over annotator pairs of
Cohen's kappa, Kendall's tau-b, Pearson's r or Spearman's rho.

The pairs are built from annotations in long form (one row per annotation: unit, annotator, value), never
from the (annotators, units) reliability matrix, whose size is the crowd times the units: 8 GB for 5,000
workers over 200,000 items. Each pair keeps the rows of its shared values (12 bytes a shared value), and
every statistic is computed for all pairs at once, block by block of pairs, from weighted sums: a
bootstrap resample is a weight per unit (how often it was drawn), so no resampled copy is ever made.
Every statistic equals scipy's (or scikit-learn's kappa) on the pair's shared values, repeated as often as
their unit was drawn, to floating-point rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
from scipy import sparse

from metrics.checks import check_reliability_data

STATISTICS = ("cohen_kappa", "kendall_tau", "pearson", "spearman")

# Shared values handled at once: bounds the temporaries (a few arrays of this many floats, and for kappa and
# tau a levels x levels table per pair of the block) however many pairs and units there are.
BLOCK_ROWS = 1 << 16

# Kendall's tau and kappa count the pairs' values in levels x levels tables: ordinal and nominal scales.
MAX_LEVELS = 100


class PairwiseCorrelation(NamedTuple):
    """Mean Pearson r and Spearman rho over annotator pairs, and how many pairs were averaged."""

    pearson: float
    spearman: float
    pairs: int


@dataclass
class AnnotatorPairs:
    """The annotator pairs that labelled enough units in common, and where each pair's values sit.

    values, units: (annotations,) the long-form values and unit codes the pairs were built from.
    pairs: (n_pairs, 2) annotator codes (a, b), a < b, ascending: a reliability matrix's pairs in its order.
    bounds: (n_pairs + 1,) pair p's shared values are rows bounds[p]:bounds[p + 1] of `first` and `second`.
    first, second: (shared values,) the rows of `values` holding a's and b's value on each shared unit;
        within a pair ascending by a's value (then by unit).
    by_second: (shared values,) positions in `first` / `second` that list each pair's rows ascending by b's
        value (then by unit).
    """

    values: np.ndarray
    units: np.ndarray
    pairs: np.ndarray
    bounds: np.ndarray
    first: np.ndarray
    second: np.ndarray
    by_second: np.ndarray

    @cached_property
    def level_codes(self) -> np.ndarray:
        """Each value's place among the distinct values, for the tables of kappa and tau."""
        levels, codes = np.unique(self.values, return_inverse=True)
        if len(levels) > MAX_LEVELS:
            raise ValueError(
                f"kappa and Kendall's tau take a scale of at most {MAX_LEVELS} levels; these annotations hold "
                f"{len(levels)} distinct values"
            )
        return codes.astype(np.int8)  # at most MAX_LEVELS levels


def annotator_pairs(units: Any, annotators: Any, values: Any, min_shared_units: int = 2) -> AnnotatorPairs:
    """The pairs of annotators sharing at least `min_shared_units` units, from annotations in long form: row i
    says that annotator annotators[i] gave unit units[i] the value values[i] (codes are whole numbers from 0,
    one row per annotator and unit)."""
    units, annotators = np.asarray(units, dtype=np.int64), np.asarray(annotators, dtype=np.int64)
    values = np.asarray(values, dtype=float)
    row_type = np.int32 if len(values) < 2**31 else np.int64
    if len(values) == 0:
        empty = np.empty(0, dtype=row_type)
        return AnnotatorPairs(
            values, units, np.empty((0, 2), dtype=np.int64), np.zeros(1, np.int64), empty, empty, empty
        )
    n_annotators = int(annotators.max()) + 1
    presence = sparse.csr_matrix((np.ones(len(units)), (annotators, units)), shape=(n_annotators, units.max() + 1))
    shared = sparse.triu(presence @ presence.T, k=1).tocoo()  # float64 counts: exact below 2**53 units
    enough = shared.data >= min_shared_units
    order = np.lexsort((shared.col[enough], shared.row[enough]))
    pairs = np.column_stack([shared.row[enough][order], shared.col[enough][order]]).astype(np.int64)
    bounds = np.r_[0, np.cumsum(shared.data[enough][order].astype(np.int64))]

    first, second, by_second = (np.empty(bounds[-1], dtype=row_type) for _ in range(3))
    by_annotator = np.lexsort((units, annotators)).astype(row_type)
    annotator_bounds = np.searchsorted(annotators[by_annotator], np.arange(n_annotators + 1))
    for index, (a, b) in enumerate(pairs):
        rows_a = by_annotator[annotator_bounds[a] : annotator_bounds[a + 1]]
        rows_b = by_annotator[annotator_bounds[b] : annotator_bounds[b + 1]]
        at = np.minimum(np.searchsorted(units[rows_b], units[rows_a]), len(rows_b) - 1)
        both = units[rows_b][at] == units[rows_a]
        rows_a, rows_b = rows_a[both], rows_b[at[both]]
        by_a = np.argsort(values[rows_a], kind="stable")  # rows come by unit: ties stay by unit
        start, stop = bounds[index], bounds[index + 1]
        first[start:stop], second[start:stop] = rows_a[by_a], rows_b[by_a]
        by_second[start:stop] = start + np.argsort(values[second[start:stop]], kind="stable")
    return AnnotatorPairs(values, units, pairs, bounds, first, second, by_second)


def pairs_of_matrix(reliability_data: Any, min_shared_units: int = 2) -> AnnotatorPairs:
    """`annotator_pairs` of a reliability matrix: shape (annotators, units), NaN for missing."""
    matrix = check_reliability_data(reliability_data)
    annotators, units = np.nonzero(~np.isnan(matrix))
    return annotator_pairs(units, annotators, matrix[annotators, units], min_shared_units)


def pair_statistics(
    pairs: AnnotatorPairs, statistic: str, unit_counts: np.ndarray | None = None, min_shared_units: int = 2
) -> np.ndarray:
    """(n_pairs,) the statistic of each annotator pair on the units both labelled.

    statistic: "cohen_kappa" (unweighted; NaN where chance agreement is 1), "kendall_tau" (tau-b),
        "pearson" or "spearman" (NaN for the three where either annotator gives one value throughout).
    unit_counts: (units,) how often a bootstrap resample drew each unit: each shared value counts that many
        times, as in the resampled reliability matrix; None counts each once.
    min_shared_units: NaN for a pair whose (counted) shared values are fewer.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    scores = np.full(len(pairs.pairs), np.nan)
    for start, stop in _blocks(pairs.bounds):
        block = _Block(pairs, start, stop, unit_counts)
        scores[start:stop] = np.where(block.counted >= min_shared_units, block.statistic(statistic), np.nan)
    return scores


def mean_pair_statistic(
    pairs: AnnotatorPairs, statistic: str, unit_counts: np.ndarray | None = None, min_shared_units: int = 2
) -> float:
    """The mean of `pair_statistics` over the pairs where it is defined; NaN when there are none."""
    scores = pair_statistics(pairs, statistic, unit_counts, min_shared_units)
    scores = scores[~np.isnan(scores)]
    return float(np.mean(scores)) if len(scores) else float("nan")


def cohen_kappa_pairwise(reliability_data: Any, min_shared_units: int = 2) -> float:
    """Mean unweighted Cohen's kappa over annotator pairs, each on the units both labelled.

    Args:
        reliability_data: shape (annotators, units), category codes, NaN for missing.
        min_shared_units: pairs sharing fewer units are skipped.

    Returns:
        The mean over pairs where kappa is defined (pairs where both used one and the same label are
        skipped); NaN when no pair qualifies.
    """
    return mean_pair_statistic(pairs_of_matrix(reliability_data, min_shared_units), "cohen_kappa")


def kendall_tau_pairwise(reliability_data: Any, min_shared_units: int = 2) -> float:
    """Mean Kendall's tau-b (scipy.stats.kendalltau) over annotator pairs, each on the units both labelled.

    Args:
        reliability_data: shape (annotators, units), NaN for missing; an ordinal scale of at most
            MAX_LEVELS distinct values.
        min_shared_units: pairs sharing fewer units are skipped.

    Returns:
        The mean over pairs where neither annotator is constant on the shared units; NaN when none.
    """
    return mean_pair_statistic(pairs_of_matrix(reliability_data, min_shared_units), "kendall_tau")


def pearson_spearman_pairwise(reliability_data: Any, min_shared_units: int = 2) -> PairwiseCorrelation:
    """Mean Pearson r and Spearman rho (scipy.stats) over annotator pairs, each on the units both labelled.

    Args:
        reliability_data: shape (annotators, units), NaN for missing.
        min_shared_units: pairs sharing fewer units are skipped.

    Returns:
        PairwiseCorrelation over the pairs where neither annotator is constant on the shared units (NaN
        means when there are none).
    """
    pairs = pairs_of_matrix(reliability_data, max(min_shared_units, 2))
    defined = int((~np.isnan(pair_statistics(pairs, "pearson"))).sum())  # spearman is defined on the same pairs
    return PairwiseCorrelation(mean_pair_statistic(pairs, "pearson"), mean_pair_statistic(pairs, "spearman"), defined)


def _blocks(bounds: np.ndarray):
    """(first pair, end pair) of consecutive pairs holding about BLOCK_ROWS shared values (or one pair)."""
    start, n_pairs = 0, len(bounds) - 1
    while start < n_pairs:
        stop = max(start + 1, int(np.searchsorted(bounds, bounds[start] + BLOCK_ROWS, side="right")) - 1)
        yield start, min(stop, n_pairs)
        start = stop


class _Block:
    """The shared values of pairs start:stop with their weights, and the statistics computed from them."""

    def __init__(self, pairs: AnnotatorPairs, start: int, stop: int, unit_counts: np.ndarray | None):
        self.pairs, self.size = pairs, stop - start
        low, high = pairs.bounds[start], pairs.bounds[stop]
        self.first, self.second = pairs.first[low:high], pairs.second[low:high]
        self.by_second = pairs.by_second[low:high] - low
        self.shared = np.diff(pairs.bounds[start : stop + 1])
        self.pair = np.repeat(np.arange(self.size), self.shared)
        if unit_counts is None:
            self.weights = np.ones(high - low)
        else:
            self.weights = np.asarray(unit_counts, dtype=float)[pairs.units[self.first]]
        self.counted = self.sum(self.weights)

    def sum(self, per_value: np.ndarray) -> np.ndarray:
        return np.bincount(self.pair, weights=per_value, minlength=self.size)

    def statistic(self, name: str) -> np.ndarray:
        if name in ("cohen_kappa", "kendall_tau"):
            return _kappa(self.table()) if name == "cohen_kappa" else _tau_b(self.table())
        values_a, values_b = self.pairs.values[self.first], self.pairs.values[self.second]
        varies = self.varies(values_a, None) & self.varies(values_b, self.by_second)
        if name == "spearman":
            values_a, values_b = self.ranks(values_a, None), self.ranks(values_b, self.by_second)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = self.pearson(values_a, values_b)
        return np.where(varies, np.clip(r, -1, 1), np.nan)

    def table(self) -> np.ndarray:
        """(pairs, levels, levels) counted values: a's level by b's."""
        codes = self.pairs.level_codes
        levels = int(codes.max()) + 1
        cells = (self.pair * levels + codes[self.first]) * levels + codes[self.second]
        return np.bincount(cells, weights=self.weights, minlength=self.size * levels * levels).reshape(
            self.size, levels, levels
        )

    def pearson(self, values_a: np.ndarray, values_b: np.ndarray) -> np.ndarray:
        """Weighted Pearson r per pair, from moments taken about each pair's unweighted means so that they
        do not cancel."""
        centred_a = values_a - (self.sum(values_a) / self.shared)[self.pair]
        centred_b = values_b - (self.sum(values_b) / self.shared)[self.pair]
        weighted_a, weighted_b = self.weights * centred_a, self.weights * centred_b
        total, sum_a, sum_b = self.counted, self.sum(weighted_a), self.sum(weighted_b)
        cross = self.sum(weighted_a * centred_b) - sum_a * sum_b / total
        spread_a = self.sum(weighted_a * centred_a) - sum_a**2 / total
        spread_b = self.sum(weighted_b * centred_b) - sum_b**2 / total
        return cross / np.sqrt(spread_a * spread_b)

    def varies(self, values: np.ndarray, order: np.ndarray | None) -> np.ndarray:
        """(pairs,) whether the counted values differ: `values` ascending within each pair in `order`."""
        weights, pair = self.weights, self.pair
        if order is not None:
            values, weights = values[order], weights[order]
        counted = np.flatnonzero(weights > 0)
        pair, values = pair[counted], values[counted]
        change = (pair[1:] == pair[:-1]) & (values[1:] != values[:-1])
        varies = np.zeros(self.size, dtype=bool)
        varies[pair[1:][change]] = True
        return varies

    def ranks(self, values: np.ndarray, order: np.ndarray | None) -> np.ndarray:
        """Average ranks within each pair, a value counted w times taking w tied places (its ranks are
        those of the resampled values); `values` ascending within each pair in `order`."""
        weights = self.weights
        if order is not None:
            values, weights = values[order], weights[order]
        new_run = np.r_[True, (self.pair[1:] != self.pair[:-1]) | (values[1:] != values[:-1])]
        run = np.cumsum(new_run) - 1
        run_weight = np.bincount(run, weights=weights)
        earlier = np.cumsum(run_weight) - run_weight  # counted values in earlier runs, of every pair
        pair_start = (np.cumsum(self.counted) - self.counted)[self.pair[new_run]]
        ranks = (earlier - pair_start + (run_weight + 1) / 2)[run]
        if order is None:
            return ranks
        in_block_order = np.empty_like(ranks)
        in_block_order[order] = ranks
        return in_block_order


def _kappa(table: np.ndarray) -> np.ndarray:
    """Cohen's kappa per (levels, levels) table; NaN where chance agreement is 1."""
    total = table.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.trace(table, axis1=1, axis2=2) / total
        chance = np.einsum("pi,pi->p", table.sum(axis=2) / total[:, None], table.sum(axis=1) / total[:, None])
        return np.where(chance == 1.0, np.nan, (observed - chance) / (1.0 - chance))


def _tau_b(table: np.ndarray) -> np.ndarray:
    """Kendall's tau-b per (levels, levels) table, as scipy.stats.kendalltau computes it from counts; NaN
    where either side is constant."""
    # above[p, i, j]: values with a's level > i and b's level > j; below: a's level > i and b's level < j.
    after_a = np.flip(np.cumsum(np.flip(table, 1), 1), 1)
    above = np.zeros_like(table)
    above[:, :-1, :-1] = np.flip(np.cumsum(np.flip(after_a, 2), 2), 2)[:, 1:, 1:]
    below = np.zeros_like(table)
    below[:, :-1, 1:] = np.cumsum(after_a, 2)[:, 1:, :-1]
    concordant_minus_discordant = np.einsum("pij,pij->p", table, above - below)
    total = table.sum(axis=(1, 2))
    pairs = total * (total - 1) / 2
    ties_a = (table.sum(axis=2) * (table.sum(axis=2) - 1) / 2).sum(axis=1)
    ties_b = (table.sum(axis=1) * (table.sum(axis=1) - 1) / 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = concordant_minus_discordant / np.sqrt(pairs - ties_a) / np.sqrt(pairs - ties_b)
    return np.where((pairs - ties_a > 0) & (pairs - ties_b > 0), np.clip(tau, -1, 1), np.nan)
