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
- a rule the app can run: the population is a calibration set's label distributions (or their pools), the
  price is chosen so that the error equals the target with each calibration item judged under the rule built
  from the other items (`leave_one_out_tables`: judged on its own population, a rule looks better than it is
  on new items), and the rule is the table of count vectors at which to stop (`StoppingRule.stops`).

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

    def log_likelihood(self, vectors: np.ndarray) -> np.ndarray:
        """(len(vectors), m) log chance of each count vector (in some order of its labels) from each item, up to
        a term that is the same for every item; -inf where an item's pool cannot give it."""
        if self.pools is not None:
            pools = self.pools[None, :, :]
            grown = vectors[:, None, :]
            with np.errstate(invalid="ignore"):
                log = (gammaln(pools + 1) - gammaln(pools - grown + 1)).sum(axis=2)
            log = np.where((grown <= pools).all(axis=2), log, -np.inf)
            return log - (
                gammaln(self.pools.sum(axis=1) + 1)[None, :]
                - gammaln(self.pools.sum(axis=1) - vectors.sum(axis=1)[:, None] + 1)
            )
        floored = np.maximum(self.distributions, LIKELIHOOD_FLOOR)
        return vectors @ np.log(floored / floored.sum(axis=1, keepdims=True)).T

    def posterior(self, vectors: np.ndarray) -> np.ndarray:
        """(len(vectors), m) posterior weights of the items after each count vector."""
        log = self.log_likelihood(vectors) + np.log(self.weights)[None, :]
        top = log.max(axis=1, keepdims=True)
        # A vector no item can produce (only with pools): fall back to the prior.
        weights = np.where(np.isfinite(top), np.exp(log - np.where(np.isfinite(top), top, 0)), self.weights[None, :])
        return weights / weights.sum(axis=1, keepdims=True)

    def item_next_label(self, vectors: np.ndarray) -> np.ndarray:
        """(len(vectors), m, k) each item's chance that the next label is of each class, after each vector."""
        if self.pools is not None:
            left = np.maximum(self.pools[None, :, :] - vectors[:, None, :], 0)
            remaining = left.sum(axis=2, keepdims=True)
            return np.divide(left, remaining, out=np.zeros(left.shape), where=remaining > 0)
        return np.broadcast_to(self.distributions[None, :, :], (len(vectors), *self.distributions.shape))

    def next_label(self, vectors: np.ndarray, posterior: np.ndarray) -> np.ndarray:
        """(len(vectors), k) probability that the next label is of each class."""
        return np.einsum("sm,smk->sk", posterior, self.item_next_label(vectors))


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
    return _bisect_price(
        lambda price: outcome(policy(rule_tables, price, minimum), world), target_error, len(world.vectors) - 1, steps
    )


def _bisect_price(outcome_at, target_error: float, maximum: int, steps: int):
    """price_for's bisection over any (price -> (labels, error)) whose error grows with the price."""
    low, high = 1e-7, 1.0  # price 1 stops at once (errors are below 1); price 1e-7 collects nearly all
    at_low = outcome_at(low)
    if at_low[1] > target_error:
        raise ValueError(f"no rule up to {maximum} labels reaches a mean error of {target_error}")
    at_high = outcome_at(high)
    for _ in range(steps):
        middle = float(np.sqrt(low * high))
        result = outcome_at(middle)
        if result[1] <= target_error:
            low, at_low = middle, result
        else:
            high, at_high = middle, result
    return low, at_low, at_high


@dataclass(frozen=True)
class LeaveOneOutTables:
    """Per level n = 0..maximum, for every item j of a population and every count vector of n labels: the
    rule built from the other items (its expected error of stopping, (m, vectors), and its chances for the
    next label, (m, vectors, k)), and item j's own: the error of stopping there, (m, vectors), and its next
    label's chances, (m, vectors, k). `weights` are the items' prior weights."""

    stop_error: list[np.ndarray]
    next_label: list[np.ndarray]
    own_error: list[np.ndarray]
    own_next_label: list[np.ndarray]
    successors: list[np.ndarray]
    weights: np.ndarray


def leave_one_out_tables(population: Population, maximum: int) -> LeaveOneOutTables:
    """What each item's rule would be without that item in the population (exact, all items at once).

    Why: a rule judged on the items that make up its own population is judged in-sample. Each item's own
    labels are among the candidates its posterior weighs, so the rule looks more accurate than it is on new
    items, and a price set there is too lenient (on ChaosNLI SNLI its error on the other half was 0.8% above
    the target). Judging each item under the rule built from the others is a leave-one-out estimate of how the
    rule does on items it has not seen."""
    if len(population.weights) < 2:
        raise ValueError("leaving one item out needs a population of at least 2 items")
    k = population.distributions.shape[1]
    base = (maximum + 1) ** np.arange(k)
    stop_error, next_label, own_error, own_next, codes = [], [], [], [], []
    for n in range(maximum + 1):
        level = count_vectors(n, k)
        level = level[np.argsort(level @ base)]
        stop, following, item_error, item_next = _without_each_item(population, level, n)
        stop_error.append(stop)
        next_label.append(following)
        own_error.append(item_error)
        own_next.append(item_next)
        codes.append(level @ base)
    successors = [np.searchsorted(codes[n + 1], codes[n][:, None] + base[None, :]) for n in range(maximum)]
    return LeaveOneOutTables(stop_error, next_label, own_error, own_next, successors, population.weights)


def _without_each_item(population: Population, level: np.ndarray, n: int):
    """One level of leave_one_out_tables: for each item j and count vector, the expected error of stopping and
    the next label's chances under the posterior over the other items, and j's own error and next label."""
    weights = population.weights
    k = level.shape[1]
    columns = np.arange(len(level))
    log = population.log_likelihood(level).T + np.log(weights)[:, None]  # (m, vectors)
    item_next = np.ascontiguousarray(population.item_next_label(level).transpose(1, 0, 2))
    if n == 0:
        item_error = np.zeros((len(weights), 1))
    else:
        collected = np.repeat(level[None, :, :] / n, len(weights), axis=0).reshape(-1, k)
        truth = np.repeat(population.distributions, len(level), axis=0)
        item_error = js_distance(collected, truth).reshape(len(weights), len(level))
    order = np.argsort(-log, axis=0)
    first, second = order[0], order[min(1, len(weights) - 1)]
    terms, total, error_sum, next_sum = _scaled_sums(log, log[first, columns], item_error, item_next)
    # The item with the largest term: its sums are scaled by the second largest, without it (taking its term
    # of 1 away from the full sums would leave only rounding).
    _, top_total, top_error, top_next = _scaled_sums(
        log, log[second, columns], item_error, item_next, left_out=(first, columns)
    )
    is_top = np.arange(len(weights))[:, None] == first[None, :]
    without_total = np.where(is_top, top_total[None, :], total[None, :] - terms)
    without_error = np.where(is_top, top_error[None, :], error_sum[None, :] - terms * item_error)
    without_next = np.where(is_top[..., None], top_next[None], next_sum[None] - terms[..., None] * item_next)
    # A vector none of the other items could give: their prior, as Population.posterior falls back to it.
    prior = weights[:, None]
    prior_total = weights.sum() - prior
    prior_error = (prior * item_error).sum(axis=0)[None, :] - prior * item_error
    prior_next = np.einsum("j,jmk->mk", weights, item_next)[None] - prior[..., None] * item_next
    possible = without_total > 1e-300
    total_used = np.where(possible, without_total, prior_total)
    stop = np.where(possible, without_error, prior_error) / total_used
    following = np.where(possible[..., None], without_next, prior_next) / total_used[..., None]
    return (np.full(stop.shape, np.inf) if n == 0 else stop), following, item_error, item_next


def _scaled_sums(log, scale, item_error, item_next, left_out=None):
    """Each item's posterior term exp(log - scale) (the largest is 1, so nothing overflows), with the sums of
    the terms, of the terms times the items' errors and times their next-label chances; `left_out` (rows,
    columns) terms set to 0 first."""
    terms = np.exp(log - np.where(np.isfinite(scale), scale, 0.0)[None, :])
    if left_out is not None:
        terms[left_out] = 0.0
    return terms, terms.sum(axis=0), (terms * item_error).sum(axis=0), np.einsum("jm,jmk->mk", terms, item_next)


def leave_one_out_outcome(loo: LeaveOneOutTables, price: float, minimum: int) -> tuple[float, float]:
    """(mean labels, mean error) over the population's items (prior weights) when each item meets the rule
    built from the other items at this price: exact, no simulation."""
    maximum = len(loo.stop_error) - 1
    value = loo.stop_error[maximum]
    error = loo.own_error[maximum]
    labels = np.full(error.shape, float(maximum))
    for n in range(maximum - 1, -1, -1):
        after = loo.successors[n]
        go_on = price + (loo.next_label[n] * value[:, after]).sum(axis=2)
        stop = loo.stop_error[n] <= go_on if n >= minimum else np.zeros(go_on.shape, dtype=bool)
        value = np.where(stop, loo.stop_error[n], go_on)
        error = np.where(stop, loo.own_error[n], (loo.own_next_label[n] * error[:, after]).sum(axis=2))
        labels = np.where(stop, float(n), (loo.own_next_label[n] * labels[:, after]).sum(axis=2))
    return float(loo.weights @ labels[:, 0]), float(loo.weights @ error[:, 0])


def leave_one_out_price(loo: LeaveOneOutTables, target_error: float, minimum: int, steps: int = 40):
    """price_for with each item judged under the rule built without it: (price, (labels, error) there, the
    next cheaper rule's (labels, error))."""
    return _bisect_price(
        lambda price: leave_one_out_outcome(loo, price, minimum), target_error, len(loo.stop_error) - 1, steps
    )


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
    with the fewest labels whose error is at most `target_error`, each calibration item judged under the rule
    built from the others (leave_one_out_tables: judged on its own population, a rule overstates how well it
    does on new items).

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
    price, _, _ = leave_one_out_price(leave_one_out_tables(population, maximum), target_error, minimum)
    return rule_from(tables(population, maximum), price, minimum)


def rule_from(rule_tables: Tables, price: float, minimum: int) -> StoppingRule:
    """The stopping table of `policy(rule_tables, price, minimum)` as a StoppingRule."""
    stops = policy(rule_tables, price, minimum)
    maximum = len(rule_tables.vectors) - 1
    base = (maximum + 1) ** np.arange(rule_tables.vectors[0].shape[1])
    codes = frozenset(int(code) for n in range(minimum, maximum) for code in rule_tables.vectors[n][stops[n]] @ base)
    return StoppingRule(minimum, maximum, price, codes)
