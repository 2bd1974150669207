"""Agreement between every two annotators on the units both labelled: the mean over annotator pairs of
Cohen's kappa, Kendall's tau-b, Pearson's r or Spearman's rho.

The pairs are built from annotations in long form (one row per annotation: unit, annotator, value), never
from the (annotators, units) reliability matrix, whose size is the crowd times the units: 8 GB for 5,000
workers over 200,000 items. Each pair keeps the rows of its shared values (8 bytes a shared value), and
every statistic is computed for all pairs at once, block by block of shared values, from weighted sums: a
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

from metrics.agreement import check_one_value_each
from metrics.checks import check_reliability_data

STATISTICS = ("cohen_kappa", "kendall_tau", "pearson", "spearman")

# Shared values handled at once: bounds the temporaries (a few arrays of this many floats, and for kappa and
# tau a levels x levels table per pair of the block) however many pairs and units there are.
BLOCK_ROWS = 1 << 16

# Annotators whose shared-unit counts are multiplied at once: bounds the product (this many rows of counts
# with every other annotator) however large the crowd.
ANNOTATOR_BLOCK = 256

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
    first, second: (shared values,) the rows of `values` holding a's and b's value on each shared unit, by unit.
    centres: (n_pairs, 2) the mean of a's and of b's shared values: Pearson's moments are taken about them so
        that they do not cancel.
    """

    values: np.ndarray
    units: np.ndarray
    pairs: np.ndarray
    bounds: np.ndarray
    first: np.ndarray
    second: np.ndarray
    centres: np.ndarray

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
    says that annotator annotators[i] gave unit units[i] the value values[i] (codes are whole numbers from 0;
    a second row for one annotator and unit is refused, as metrics.agreement.check_one_value_each refuses it)."""
    units, annotators, values = np.asarray(units), np.asarray(annotators), np.asarray(values, dtype=float)
    row_type = np.int32 if len(values) < 2**31 else np.int64
    if len(values) == 0:
        empty = np.empty(0, dtype=row_type)
        return AnnotatorPairs(
            values, units, np.empty((0, 2), np.int64), np.zeros(1, np.int64), empty, empty, np.empty((0, 2))
        )
    n_annotators = int(annotators.max()) + 1
    check_one_value_each(units, annotators, range(int(units.max()) + 1), range(n_annotators))
    pairs, shared_counts = _sharing_pairs(units, annotators, n_annotators, min_shared_units)
    bounds = np.r_[0, np.cumsum(shared_counts, dtype=np.int64)]

    first, second = np.empty(bounds[-1], dtype=row_type), np.empty(bounds[-1], dtype=row_type)
    by_annotator = np.lexsort((units, annotators)).astype(row_type)
    annotator_bounds = np.searchsorted(annotators[by_annotator], np.arange(n_annotators + 1))
    for index, (a, b) in enumerate(pairs):
        rows_a = by_annotator[annotator_bounds[a] : annotator_bounds[a + 1]]
        rows_b = by_annotator[annotator_bounds[b] : annotator_bounds[b + 1]]
        units_b = units[rows_b]
        at = np.minimum(np.searchsorted(units_b, units[rows_a]), len(rows_b) - 1)
        both = units_b[at] == units[rows_a]
        first[bounds[index] : bounds[index + 1]], second[bounds[index] : bounds[index + 1]] = (
            rows_a[both],
            rows_b[at[both]],
        )
    centres = np.empty((len(pairs), 2))
    for side, rows in enumerate((first, second)):
        sums = np.zeros(len(pairs))
        for start, stop, pair, _ in _blocks(bounds):
            sums[pair[0] : pair[-1] + 1] += np.bincount(pair - pair[0], weights=values[rows[start:stop]])
        centres[:, side] = sums / np.diff(bounds)
    return AnnotatorPairs(values, units, pairs, bounds, first, second, centres)


def _sharing_pairs(units, annotators, n_annotators: int, min_shared_units: int) -> tuple[np.ndarray, np.ndarray]:
    """((pairs, 2) annotator codes a < b sharing at least `min_shared_units` units, ascending; (pairs,) how
    many units each shares), from a sparse presence matrix multiplied block by block of annotators."""
    presence = sparse.csr_matrix(
        (np.ones(len(units), dtype=np.int32), (annotators, units)), shape=(n_annotators, int(units.max()) + 1)
    )
    by_unit = presence.T.tocsr()
    found_pairs, found_counts = [], []
    for start in range(0, n_annotators, ANNOTATOR_BLOCK):
        shared = (presence[start : start + ANNOTATOR_BLOCK] @ by_unit).tocoo()
        keep = (shared.col > shared.row + start) & (shared.data >= min_shared_units)
        order = np.lexsort((shared.col[keep], shared.row[keep]))
        found_pairs.append(np.column_stack([shared.row[keep][order] + start, shared.col[keep][order]]))
        found_counts.append(shared.data[keep][order])
    return np.concatenate(found_pairs).astype(np.int64), np.concatenate(found_counts)


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
    sums = _Sums(pairs, statistic)
    for start, stop, pair, segments in _blocks(pairs.bounds, whole_pairs=statistic == "spearman"):
        first, second = pairs.first[start:stop], pairs.second[start:stop]
        weights = np.ones(stop - start) if unit_counts is None else np.asarray(unit_counts, float)[pairs.units[first]]
        sums.add(pair, segments, weights, first, second)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = sums.statistic()
    return np.where(sums.counted >= min_shared_units, scores, np.nan)


def mean_pair_statistic(
    pairs: AnnotatorPairs, statistic: str, unit_counts: np.ndarray | None = None, min_shared_units: int = 2
) -> float:
    """The mean of `pair_statistics` over the pairs where it is defined; NaN when there are none."""
    return _mean_of_defined(pair_statistics(pairs, statistic, unit_counts, min_shared_units))


def _mean_of_defined(scores: np.ndarray) -> float:
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
    pearson = pair_statistics(pairs, "pearson")  # rho is defined on the same pairs
    return PairwiseCorrelation(
        _mean_of_defined(pearson), _mean_of_defined(pair_statistics(pairs, "spearman")), int((~np.isnan(pearson)).sum())
    )


def _blocks(bounds: np.ndarray, whole_pairs: bool = False):
    """The shared values in blocks of BLOCK_ROWS, a pair's values split between blocks unless `whole_pairs`
    (then a block ends with its last pair's values, however many): yields (first row, end row, the pair of
    each row, the start of each pair's run of rows within the block)."""
    start, end = 0, int(bounds[-1])
    while start < end:
        stop = min(start + BLOCK_ROWS, end)
        first_pair, last_pair = np.searchsorted(bounds, [start, stop - 1], side="right") - 1
        if whole_pairs:
            stop = int(bounds[last_pair + 1])
        lengths = np.diff(np.clip(bounds[first_pair : last_pair + 2], start, stop))
        pair = np.repeat(np.arange(first_pair, last_pair + 1), lengths)
        yield start, stop, pair, np.r_[0, np.cumsum(lengths[:-1])]
        start = stop


class _Sums:
    """What a statistic needs of each pair, summed block by block: the counted values, whether each side
    varies among them (its least and greatest counted value), and the statistic's own sums: a levels x
    levels table for kappa and tau, moments for r, and for rho the moments of average ranks (within a pair a
    value counted w times takes w tied places, as in the resampled values; ranks need a pair's values
    whole, so its blocks end with whole pairs)."""

    def __init__(self, pairs: AnnotatorPairs, statistic: str):
        self.pairs, self.statistic_name = pairs, statistic
        n_pairs = len(pairs.pairs)
        self.counted = np.zeros(n_pairs)
        if statistic in ("pearson", "spearman"):
            self.least = np.full((n_pairs, 2), np.inf)
            self.greatest = np.full((n_pairs, 2), -np.inf)
            self.moments = np.zeros((n_pairs, 5))  # sums of w a, w b, w a a, w b b, w a b, about a centre
        else:
            self.levels = int(pairs.level_codes.max()) + 1 if len(pairs.values) else 1
            self.tables = np.zeros((n_pairs, self.levels, self.levels))

    def add(self, pair, segments, weights, first, second):
        low, high = pair[0], pair[-1] + 1
        local = pair - low

        def total(per_value):
            return np.bincount(local, weights=per_value, minlength=high - low)

        self.counted[low:high] += total(weights)
        if self.statistic_name in ("pearson", "spearman"):  # kappa's and tau's tables show constant sides
            drawn = weights > 0
            for side, rows in enumerate((first, second)):
                values = self.pairs.values[rows]
                self.least[low:high, side] = np.fmin(
                    self.least[low:high, side], np.minimum.reduceat(np.where(drawn, values, np.inf), segments)
                )
                self.greatest[low:high, side] = np.fmax(
                    self.greatest[low:high, side], np.maximum.reduceat(np.where(drawn, values, -np.inf), segments)
                )
            if self.statistic_name == "pearson":
                a = self.pairs.values[first] - self.pairs.centres[pair, 0]
                b = self.pairs.values[second] - self.pairs.centres[pair, 1]
            else:  # the block holds its pairs whole: their counts are complete; the mean rank is (count + 1) / 2
                mean_rank = ((self.counted[low:high] + 1) / 2)[local]
                a = _average_ranks(local, self.pairs.values[first], weights) - mean_rank
                b = _average_ranks(local, self.pairs.values[second], weights) - mean_rank
            weighted_a, weighted_b = weights * a, weights * b
            for column, per_value in enumerate(
                (weighted_a, weighted_b, weighted_a * a, weighted_b * b, weighted_a * b)
            ):
                self.moments[low:high, column] += total(per_value)
        else:
            codes, levels = self.pairs.level_codes, self.levels
            cells = (local * levels + codes[first]) * levels + codes[second]
            self.tables[low:high] += np.bincount(cells, weights=weights, minlength=(high - low) * levels**2).reshape(
                high - low, levels, levels
            )

    def statistic(self) -> np.ndarray:
        if self.statistic_name == "cohen_kappa":
            return _kappa(self.tables)
        if self.statistic_name == "kendall_tau":
            return _tau_b(self.tables)
        varies = (self.greatest > self.least).all(axis=1)
        sum_a, sum_b, sum_aa, sum_bb, sum_ab = self.moments.T
        total = self.counted
        r = (sum_ab - sum_a * sum_b / total) / np.sqrt((sum_aa - sum_a**2 / total) * (sum_bb - sum_b**2 / total))
        return np.where(varies, np.clip(r, -1, 1), np.nan)


def _average_ranks(pair: np.ndarray, values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each value's average rank among its pair's values (pairs whole, numbered from 0), a value of weight w
    taking w tied places."""
    order = np.lexsort((values, pair))
    pair, values, weights = pair[order], values[order], weights[order]
    new_run = np.r_[True, (pair[1:] != pair[:-1]) | (values[1:] != values[:-1])]
    run = np.cumsum(new_run) - 1
    run_weight = np.bincount(run, weights=weights)
    pair_weight = np.bincount(pair, weights=weights)
    earlier = np.cumsum(run_weight) - run_weight - (np.cumsum(pair_weight) - pair_weight)[pair[new_run]]
    ranks = np.empty(len(values))
    ranks[order] = (earlier + (run_weight + 1) / 2)[run]
    return ranks


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
