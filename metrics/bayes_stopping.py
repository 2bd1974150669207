"""Bayes-optimal stopping for label distributions: when to stop collecting an item's labels, given a prior
population of label distributions (items like it), exactly over label counts.

The problem: an item's labels arrive one at a time; after each the rule either stops, paying the error of
the distribution collected so far (the JS distance, natural log, to the item's full distribution:
`metrics.distributions.js_distance`, the error the app reports), or buys one more label at `price` in error
units. The item is unknown, but it is one of a population of items (`Population`): the posterior over the
population after counts c weighs item i by its prior weight times the chance of drawing c from it. The best
rule follows from a backward induction over every count vector up to `maximum` labels (`policy`); it is the
Bayes-optimal rule for that population: no rule that does not know the item does better on average.

Two uses:
- the limit of any stopping rule on a data set (benchmarks/redundancy.py): the population is the data set's
  own items with their exact label pools (draws without replacement), and the price is chosen so that the
  mean error equals a target;
- a rule the app can run: the population is a calibration set's label distributions (draws with
  replacement), the price is chosen so that the expected error under that population equals the target,
  and the rule is the table of count vectors at which to stop (`StoppingRule.stops`).

Count vectors are indexed level by level (level n: every vector of n labels), each level's vectors sorted
by their code sum_k c_k (maximum + 1)^k, so that the vector one label further on is found by a search.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from metrics.distributions import js_distance

# A population item's class probability used in the posterior weights is at least this (before the rows
# are renormalised): a count vector that no item of the population could produce still gets a posterior.
LIKELIHOOD_FLOOR = 1e-12
MOST_LABELS = 100


def count_vectors(n: int, n_classes: int) -> np.ndarray:
    """Every vector of `n_classes` whole counts >= 0 summing to n, shape (m, n_classes)."""
    if n_classes == 1:
        return np.array([[n]], dtype=np.int64)
    rows = [
        np.column_stack([np.full(len(rest), first), rest])
        for first in range(n, -1, -1)
        for rest in [count_vectors(n - first, n_classes - 1)]
    ]
    return np.vstack(rows).astype(np.int64)


@dataclass(frozen=True)
class Population:
    """The items a rule may face: `distributions` (m, k) their full label distributions, `weights` (m,)
    their prior weights (summing to 1) and, for exact draws without replacement, `pools` (m, k) each item's
    whole label counts; without pools, labels are drawn with replacement from the distributions."""

    distributions: np.ndarray
    weights: np.ndarray
    pools: np.ndarray | None = None

    @classmethod
    def of_counts(cls, counts, without_replacement: bool) -> Population:
        """Equal weights over items given as (m, k) label counts; ValueError naming a bad row."""
        counts = np.asarray(counts, dtype=float)
        if counts.ndim != 2 or counts.shape[1] < 2 or len(counts) == 0:
            raise ValueError(f"counts must have shape (n_items, n_classes >= 2), got {counts.shape}")
        bad = ~np.isfinite(counts).all(axis=1) | (counts < 0).any(axis=1) | (counts.sum(axis=1) == 0)
        if bad.any():
            raise ValueError(f"counts row {int(np.argmax(bad))}: needs whole label counts >= 0, not all 0")
        distributions = counts / counts.sum(axis=1, keepdims=True)
        pools = np.round(counts).astype(np.int64) if without_replacement else None
        return cls(distributions, np.full(len(counts), 1 / len(counts)), pools)

    def posterior(self, vectors: np.ndarray) -> np.ndarray:
        """(len(vectors), m) posterior weights of the items after each count vector."""
        if self.pools is not None:
            pools = self.pools[None, :, :]
            grown = vectors[:, None, :]
            with np.errstate(invalid="ignore"):
                log = (gammaln(pools + 1) - gammaln(pools - grown + 1)).sum(axis=2)
            log = np.where((grown <= pools).all(axis=2), log, -np.inf)
            log -= gammaln(self.pools.sum(axis=1) + 1)[None, :] - gammaln(
                self.pools.sum(axis=1) - vectors.sum(axis=1)[:, None] + 1
            )
        else:
            floored = np.maximum(self.distributions, LIKELIHOOD_FLOOR)
            log = vectors @ np.log(floored / floored.sum(axis=1, keepdims=True)).T
        log = log + np.log(self.weights)[None, :]
        top = log.max(axis=1, keepdims=True)
        # A vector no item can produce (only with pools): fall back to the prior.
        weights = np.where(np.isfinite(top), np.exp(log - np.where(np.isfinite(top), top, 0)), self.weights[None, :])
        return weights / weights.sum(axis=1, keepdims=True)

    def next_label(self, vectors: np.ndarray, posterior: np.ndarray) -> np.ndarray:
        """(len(vectors), k) probability that the next label is of each class."""
        if self.pools is not None:
            left = np.maximum(self.pools[None, :, :] - vectors[:, None, :], 0)
            remaining = left.sum(axis=2, keepdims=True)
            per_item = np.divide(left, remaining, out=np.zeros(left.shape), where=remaining > 0)
            return np.einsum("sm,smk->sk", posterior, per_item)
        return posterior @ self.distributions


@dataclass(frozen=True)
class Tables:
    """Per level n = 0..maximum: the count vectors, the expected error of stopping there, the next label's
    probabilities and each vector's successors (index in level n + 1 per class)."""

    vectors: list[np.ndarray]
    stop_error: list[np.ndarray]
    next_label: list[np.ndarray]
    successors: list[np.ndarray]


def tables(population: Population, maximum: int) -> Tables:
    """The expected stopping error and next-label probabilities of every count vector up to `maximum`."""
    k = population.distributions.shape[1]
    base = (maximum + 1) ** np.arange(k)
    vectors, stop_error, next_label, codes = [], [], [], []
    for n in range(maximum + 1):
        level = count_vectors(n, k)
        order = np.argsort(level @ base)
        level = level[order]
        posterior = population.posterior(level)
        if n == 0:
            error = np.full(1, np.inf)
        else:
            collected = np.repeat(level / n, len(population.distributions), axis=0)
            truth = np.tile(population.distributions, (len(level), 1))
            error = (posterior * js_distance(collected, truth).reshape(len(level), -1)).sum(axis=1)
        vectors.append(level)
        stop_error.append(error)
        next_label.append(population.next_label(level, posterior))
        codes.append(level @ base)
    successors = [np.searchsorted(codes[n + 1], codes[n][:, None] + base[None, :]) for n in range(maximum)]
    return Tables(vectors, stop_error, next_label, successors)


def policy(rule_tables: Tables, price: float, minimum: int) -> list[np.ndarray]:
    """Per level, which count vectors stop (bools): the backward induction for a label costing `price`; the
    rule never stops before `minimum` labels and always at the last level."""
    maximum = len(rule_tables.vectors) - 1
    value = rule_tables.stop_error[maximum]
    stops = [np.ones(len(value), dtype=bool)]
    for n in range(maximum - 1, -1, -1):
        go_on = price + (rule_tables.next_label[n] * value[rule_tables.successors[n]]).sum(axis=1)
        stop = (rule_tables.stop_error[n] <= go_on) if n >= minimum else np.zeros(len(go_on), dtype=bool)
        value = np.where(stop, rule_tables.stop_error[n], go_on)
        stops.insert(0, stop)
    return stops


def outcome(stops: list[np.ndarray], world: Tables) -> tuple[float, float]:
    """(mean labels, mean error) of a stopping table when items come from `world`'s population (exact: the
    chance of reaching every count vector, no simulation)."""
    reach: np.ndarray = np.ones(1)
    labels = error = 0.0
    for n, stop in enumerate(stops):
        labels += n * reach[stop].sum()
        error += (reach[stop] * world.stop_error[n][stop]).sum() if n else 0.0
        if n == len(stops) - 1:
            break
        flow = np.where(stop, 0.0, reach)[:, None] * world.next_label[n]
        reach = np.bincount(world.successors[n].ravel(), weights=flow.ravel(), minlength=len(stops[n + 1]))
    return float(labels), float(error)


def fixed_outcome(world: Tables, labels: int) -> float:
    """Mean error of collecting exactly `labels` labels an item."""
    stops = [np.full(len(level), n == labels) for n, level in enumerate(world.vectors[: labels + 1])]
    return outcome(stops, world)[1]


def price_for(rule_tables: Tables, world: Tables, target_error: float, minimum: int, steps: int = 40):
    """The largest price (fewest labels) whose rule, judged in `world`, has mean error <= target_error,
    with its (labels, error), and the rule just cheaper than it (labels, error): a bisection on log price.
    Returns (price, (labels, error), (labels, error) of the next cheaper rule found)."""
    low, high = 1e-7, 1.0  # price 1 stops at once (errors are below 1); price 1e-7 collects nearly all
    at_low = outcome(policy(rule_tables, low, minimum), world)
    if at_low[1] > target_error:
        raise ValueError(f"no rule up to {len(world.vectors) - 1} labels reaches a mean error of {target_error}")
    at_high = outcome(policy(rule_tables, high, minimum), world)
    for _ in range(steps):
        middle = float(np.sqrt(low * high))
        result = outcome(policy(rule_tables, middle, minimum), world)
        if result[1] <= target_error:
            low, at_low = middle, result
        else:
            high, at_high = middle, result
    return low, at_low, at_high


def labels_at(target_error: float, reaching: tuple[float, float], missing: tuple[float, float]) -> float:
    """Mean labels of the mix of two rules (each item given to one at random) whose mean error is exactly
    target_error: the line between (labels, error) points `reaching` (error <= target) and `missing`."""
    (labels_in, error_in), (labels_out, error_out) = reaching, missing
    if error_out == error_in:
        return labels_in
    share_out = (target_error - error_in) / (error_out - error_in)
    return labels_in + min(max(share_out, 0.0), 1.0) * (labels_out - labels_in)


@dataclass(frozen=True)
class StoppingRule:
    """A Bayes rule the app can run: the count vectors at which to stop, from `minimum` to `maximum` labels."""

    minimum: int
    maximum: int
    price: float
    stop_codes: frozenset[int]

    def stops(self, counts) -> bool:
        """Whether an item with these label counts (k,) is done."""
        counts = np.asarray(counts, dtype=np.int64)
        total = int(counts.sum())
        if total >= self.maximum:
            return True
        if total < self.minimum:
            return False
        return int(counts @ (self.maximum + 1) ** np.arange(len(counts))) in self.stop_codes


def fit_rule(
    calibration_counts, target_error: float, minimum: int, maximum: int, without_replacement: bool = False
) -> StoppingRule:
    """The Bayes stopping rule for a population of calibration items ((m, k) label counts, equal weights)
    with the fewest labels whose expected error over that population is at most `target_error`.

    without_replacement: the calibration items' counts are the whole pools the labels come from (a data set
    with a fixed number of labels per item, as ChaosNLI's 100); otherwise each item's distribution is taken
    as it is and labels are drawn from it with replacement. ValueError, naming the value, for a target out of
    (0, 1), bounds out of 1 <= minimum <= maximum <= MOST_LABELS, bad counts, or a target no rule reaches
    within `maximum` labels."""
    if not 0 < target_error < 1:
        raise ValueError(f"target_error must be in (0, 1), got {target_error}")
    if not 1 <= minimum <= maximum <= MOST_LABELS:
        raise ValueError(f"need 1 <= minimum ({minimum}) <= maximum ({maximum}) <= {MOST_LABELS}")
    population = Population.of_counts(calibration_counts, without_replacement)
    rule_tables = tables(population, maximum)
    price, _, _ = price_for(rule_tables, rule_tables, target_error, minimum)
    return rule_from(rule_tables, price, minimum)


def rule_from(rule_tables: Tables, price: float, minimum: int) -> StoppingRule:
    """The stopping table of `policy(rule_tables, price, minimum)` as a StoppingRule."""
    stops = policy(rule_tables, price, minimum)
    maximum = len(rule_tables.vectors) - 1
    base = (maximum + 1) ** np.arange(rule_tables.vectors[0].shape[1])
    codes = frozenset(int(code) for n in range(minimum, maximum) for code in rule_tables.vectors[n][stops[n]] @ base)
    return StoppingRule(minimum, maximum, price, codes)
