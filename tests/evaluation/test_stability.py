"""metrics.stability: the stability rule of redundancy, and the simulation of benchmarks/redundancy.py."""

import json

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from benchmarks.redundancy import collected_counts, matching_threshold, read_label_counts, simulate
from metrics.stability import counts_like, expected_error, is_stable, labels_to_settle


def test_expected_error_is_the_posterior_mean_js_distance_worked_by_hand():
    # The same draws as the function's: a generator seeded by (seed, *counts), Dirichlet by normalised gammas.
    counts = np.array([3, 1, 0])
    rng = np.random.default_rng([0, 3, 1, 0])
    draws = rng.standard_gamma(counts + 0.5, size=(2000, 3))
    draws /= draws.sum(axis=1, keepdims=True)
    by_hand = np.mean([jensenshannon([0.75, 0.25, 0.0], draw) for draw in draws])
    assert expected_error([counts])[0] == pytest.approx(by_hand, rel=1e-12)


def test_the_error_shrinks_as_labels_grow_in_the_same_proportions():
    for proportions in ([1, 0, 0], [1, 1, 0], [2, 1, 1], [1, 1, 1]):
        errors = expected_error([np.array(proportions) * scale for scale in (1, 2, 4, 8, 16, 32)])
        assert (np.diff(errors) < 0).all(), proportions


def test_the_same_counts_give_the_same_figure_whatever_else_is_in_the_call():
    alone = expected_error([[4, 1, 0]])[0]
    among_others = expected_error([[1, 1, 1], [4, 1, 0], [0, 9, 2]])[1]
    assert alone == among_others == expected_error([[4, 1, 0]], seed=0)[0]
    assert expected_error([[4, 1, 0]], seed=1)[0] != alone


def test_unanimity_among_few_is_not_certainty():
    assert expected_error([[2, 0, 0]])[0] > 0.25  # a plain bootstrap would say 0
    assert expected_error([[0, 0, 0]])[0] == np.inf


def test_is_stable_honours_the_minimum_and_the_maximum():
    counts = [[1, 0, 0], [40, 0, 0], [3, 3, 3], [0, 0, 0]]
    assert is_stable(counts, 0.12, minimum=2, maximum=100).tolist() == [False, True, False, False]
    assert is_stable(counts, 0.12, minimum=2, maximum=9).tolist() == [False, True, True, False]
    assert is_stable(counts, 0.45, minimum=2, maximum=100).tolist() == [False, True, True, False]
    assert is_stable(counts, 0.45, minimum=1, maximum=100).tolist() == [True, True, True, False]


@pytest.mark.parametrize(
    "counts, message",
    [
        ([[1, -1, 0]], "row 0: -1.0 is not a whole number"),
        ([[1, 0.5, 0]], "row 0: 0.5 is not a whole number"),
        ([[1, 0, 0], [1, np.nan, 0]], "row 1: nan"),
        ([1, 2, 3], "must have shape (n_items, n_classes)"),
        ([[4]], "n_classes >= 2"),
    ],
)
def test_bad_counts_are_refused_naming_the_row(counts, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        expected_error(counts)


def test_counts_like_keeps_proportions_and_the_total():
    counts = counts_like(np.array([[0.3, 0.7, 0.0], [1 / 3, 1 / 3, 1 / 3], [0.5, 0.25, 0.25]]), 10)
    assert counts.tolist() == [[3, 7, 0], [4, 3, 3], [5, 3, 2]]


def test_labels_to_settle_is_the_first_stable_size():
    distributions = np.array([[1.0, 0, 0], [0.5, 0.5, 0], [0.2, 0.5, 0.3]])
    needed = labels_to_settle(distributions, 0.15, minimum=2, maximum=100)
    for row, labels in zip(distributions, needed, strict=True):
        assert is_stable(counts_like(row[None], labels), 0.15, 2, 100)[0]
        assert labels == 2 or not is_stable(counts_like(row[None], labels - 1), 0.15, 2, 100)[0]
    with pytest.raises(ValueError, match="row 1 is all zeros"):
        labels_to_settle([[1, 0], [0, 0]], 0.15, 2, 10)


def test_the_simulation_draws_without_replacement_from_each_items_own_labels(shared_data):
    label_counts = read_label_counts(shared_data / "chaosnli" / "chaosNLI_snli.jsonl")[:40]
    counts = collected_counts(label_counts, 100, seed=3)
    assert (counts[:, 100] == label_counts).all()  # all 100 drawn: exactly the item's own labels
    assert (counts[:, 5].sum(axis=1) == 5).all()
    assert (collected_counts(label_counts, 10, seed=3) == counts[:, :11]).all()


def test_a_small_simulation_on_chaosnli(shared_data):
    label_counts = read_label_counts(shared_data / "chaosnli" / "chaosNLI_mnli_m.jsonl")[:150]
    rules = simulate(label_counts, (0.25, 0.15), minimum=2, maximum=20, seed=0)
    json.dumps(rules)  # the --json line
    fixed = [rules[f"fixed-{k}"]["error"] for k in (3, 5, 10)]
    assert fixed == sorted(fixed, reverse=True)  # more labels, less error
    loose, tight = rules["stability-0.25"], rules["stability-0.15"]
    assert 2 <= loose["labels"] < tight["labels"] <= 20 and tight["error"] < loose["error"]
    threshold = matching_threshold(rules)
    assert threshold is None or 0.15 <= threshold <= 0.25
