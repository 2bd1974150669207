"""metrics.bayes_stopping (the limit of stopping rules, and the Bayes rule the app can run) and
metrics.stability.majority_decided, on hand-worked cases and on ChaosNLI / SNLI's original labels."""

import itertools
import json

import numpy as np
import pytest

from metrics import bayes_stopping
from metrics.distributions import js_distance
from metrics.stability import expected_error, is_stable, labels_to_decide_majority, majority_decided

# Two kinds of item: unanimous ones and evenly split ones (between the first two classes).
TWO_KINDS = np.array([[10, 0, 0], [5, 5, 0]])


def test_count_vectors_cover_every_split_once():
    vectors = bayes_stopping.count_vectors(4, 3)
    assert len(vectors) == 15 and (vectors.sum(axis=1) == 4).all()
    assert len({tuple(row) for row in vectors}) == 15


def test_fixed_outcome_is_the_exact_mean_error_of_k_labels():
    world = bayes_stopping.tables(bayes_stopping.Population.of_counts(TWO_KINDS, without_replacement=False), 4)
    # By hand for 2 labels drawn with replacement: the unanimous item always gives (1, 0, 0), error 0; the
    # split one gives (1, 0, 0) or (0, 1, 0) with chance 1/2 (error JS((1,0,0), (.5,.5,0))) or (.5, .5, 0).
    one_sided = js_distance(np.array([[1.0, 0, 0]]), np.array([[0.5, 0.5, 0]]))[0]
    assert bayes_stopping.fixed_outcome(world, 2) == pytest.approx(0.5 * 0.5 * one_sided)


def test_the_bayes_rule_stops_once_the_kind_is_known_and_never_loses_to_fixed_k():
    world = bayes_stopping.tables(bayes_stopping.Population.of_counts(TWO_KINDS, without_replacement=False), 12)
    target = bayes_stopping.fixed_outcome(world, 8)
    price, reaching, _ = bayes_stopping.price_for(world, world, target, minimum=1)
    labels, error = reaching
    assert error <= target and labels < 8
    rule = bayes_stopping.rule_from(world, price, 1)
    # One label could come from either kind: go on. Both classes seen: the item is a split one, and its
    # collected distribution is already exact.
    assert not rule.stops([1, 0, 0])
    assert rule.stops([1, 1, 0])
    assert rule.stops([0, 0, 12])  # the maximum always stops


def test_the_limit_on_chaosnli_is_no_worse_than_the_rule_fitted_on_the_other_half(shared_data):
    counts = np.array(
        [json.loads(line)["label_count"] for line in open(shared_data / "chaosnli" / "chaosNLI_snli.jsonl")]
    )[:200]
    first, second = counts[:100], counts[100:]
    world = bayes_stopping.tables(bayes_stopping.Population.of_counts(second, without_replacement=True), 15)
    target = bayes_stopping.fixed_outcome(world, 10)
    _, reaching, missing = bayes_stopping.price_for(world, world, target, minimum=1)
    bound = bayes_stopping.labels_at(target, reaching, missing)
    other = bayes_stopping.tables(bayes_stopping.Population.of_counts(first, without_replacement=True), 15)
    price, _, _ = bayes_stopping.price_for(other, other, bayes_stopping.fixed_outcome(other, 10), minimum=1)
    labels, error = bayes_stopping.outcome(bayes_stopping.policy(other, price, 1), world)
    # Any rule with at most the target error spends at least the bound: the fitted one is no exception.
    assert bound < 10 and (error > target or labels >= bound - 1e-9)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"target_error": 0.0}, "target_error must be in"),
        ({"target_error": 1.5}, "target_error must be in"),
        ({"minimum": 0}, "need 1 <= minimum"),
        ({"minimum": 5, "maximum": 3}, "need 1 <= minimum"),
        ({"calibration_counts": [[1, -1, 0]]}, "counts row 0"),
        ({"calibration_counts": [[0, 0, 0]]}, "counts row 0"),
        ({"target_error": 0.001, "maximum": 2}, "no rule up to 2 labels"),
    ],
)
def test_fit_rule_refuses_bad_input_naming_it(kwargs, message):
    arguments = {"calibration_counts": TWO_KINDS, "target_error": 0.1, "minimum": 1, "maximum": 6} | kwargs
    with pytest.raises(ValueError, match=message):
        bayes_stopping.fit_rule(**arguments)


def test_fit_rule_gives_a_table_the_app_can_ask():
    # Three items of each kind: each item, left out, still has its kind among the others.
    rule = bayes_stopping.fit_rule(np.repeat(TWO_KINDS, 3, axis=0), target_error=0.05, minimum=2, maximum=10)
    assert not rule.stops([1, 0, 0])  # below the minimum
    assert rule.stops([0, 10, 0])  # at the maximum
    assert rule.stops([3, 0, 0]) or rule.stops([4, 0, 0])  # unanimity ends it early


def test_majority_decided_by_hand():
    # Budget 5: 3-0 leads by 3 > 2 to come; 2-0 leads by 2, not > 3; 3-1 by 2 > 1; 2-1-1 by 1, not > 1.
    counts = [[3, 0, 0], [2, 0, 0], [3, 1, 0], [2, 1, 1], [2, 2, 1]]
    assert majority_decided(counts, 5).tolist() == [True, False, True, False, True]
    with pytest.raises(ValueError, match="budget must be at least 1"):
        majority_decided(counts, 0)


def test_labels_to_decide_majority_matches_enumeration():
    distribution = np.array([0.6, 0.3, 0.1])
    expected = 0.0
    for sequence in itertools.product(range(3), repeat=5):
        chance = np.prod(distribution[list(sequence)])
        for n in range(1, 6):
            if majority_decided([np.bincount(sequence[:n], minlength=3)], 5)[0]:
                expected += chance * n
                break
    assert labels_to_decide_majority([distribution], 5)[0] == pytest.approx(expected)
    assert labels_to_decide_majority([[1.0, 0, 0]], 5)[0] == pytest.approx(3.0)


def test_majority_decided_on_snli_keeps_every_five_label_majority(shared_data):
    from benchmarks.redundancy import majority_decided_on_snli

    result = majority_decided_on_snli(shared_data / "snli" / "partial_original_format" / "snli_1.0_dev.partial.jsonl")
    for order in ("file_order", "shuffled"):
        assert result[order]["agreement_with_five_label_majority"] == 1.0
        assert 0.2 < result[order]["labels_saved"] < 0.4  # most SNLI items are decided after 3 or 4 labels


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: expected_error([[2, 1, 0]], prior=0), "prior must be > 0 .* got 0"),
        (lambda: expected_error([[2, 1, 0]], prior=float("nan")), "prior must be > 0"),
        (
            lambda: is_stable([[2, 1, 0]], threshold=1.5, minimum=2, maximum=5),
            r"threshold must be in \(0, 1\), got 1.5",
        ),
        (lambda: is_stable([[2, 1, 0]], threshold=0.1, minimum=6, maximum=5), r"need 1 <= minimum \(6\)"),
    ],
)
def test_stability_refuses_a_prior_or_threshold_out_of_range_naming_it(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("without_replacement", [True, False])
def test_leave_one_out_equals_each_item_under_the_rule_built_from_the_others(without_replacement):
    """The all-at-once leave-one-out outcome equals building, for each item, the rule of the other items
    and judging it on that item alone (exact both ways)."""
    counts = np.array([[10, 0, 0], [7, 2, 1], [3, 4, 3], [0, 9, 1], [1, 1, 8]])
    population = bayes_stopping.Population.of_counts(counts, without_replacement)
    maximum, minimum = 6, 2
    loo = bayes_stopping.leave_one_out_tables(population, maximum)
    for price in (0.004, 0.02, 0.08):
        expected = np.zeros(2)
        for j in range(len(counts)):
            others = bayes_stopping.Population.of_counts(np.delete(counts, j, axis=0), without_replacement)
            alone = bayes_stopping.Population.of_counts(counts[j : j + 1], without_replacement)
            stops = bayes_stopping.policy(bayes_stopping.tables(others, maximum), price, minimum)
            expected += np.array(bayes_stopping.outcome(stops, bayes_stopping.tables(alone, maximum))) / len(counts)
        assert bayes_stopping.leave_one_out_outcome(loo, price, minimum) == pytest.approx(tuple(expected), rel=1e-12)


def test_leave_one_out_needs_two_items():
    with pytest.raises(ValueError, match="at least 2 items"):
        bayes_stopping.leave_one_out_tables(bayes_stopping.Population.of_counts([[3, 1]], True), 4)
