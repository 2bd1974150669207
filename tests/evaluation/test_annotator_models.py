"""metrics.annotator_models: hand-worked cases, crowd-kit as the reference, recovery on known confusions."""

import numpy as np
import pandas as pd
import pytest

from metrics.annotator_models import (
    MACE_RESTARTS,
    METHODS,
    decided_labels,
    expected_accuracy,
    fit_annotator_models,
)


def simulated_crowd(accuracies, n_items=100, per_item=4, n_categories=3, seed=1):
    """Items with a known true label; worker w answers it with probability accuracies[w], otherwise one of
    the other labels uniformly (the confusion matrix of a symmetric-noise Dawid-Skene worker)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_categories, n_items)
    items, workers, labels = [], [], []
    for item in range(n_items):
        for worker in rng.choice(len(accuracies), per_item, replace=False):
            label = truth[item]
            if rng.random() >= accuracies[worker]:
                label = rng.choice([c for c in range(n_categories) if c != truth[item]])
            items.append(item)
            workers.append(worker)
            labels.append(label)
    return (np.array(items), np.array(workers), np.array(labels), n_items, len(accuracies), n_categories), truth


@pytest.fixture(scope="module")
def unequal_crowd():
    # Three careful workers and three who are right barely more often than chance (1/3).
    answers, truth = simulated_crowd([0.9, 0.85, 0.8, 0.4, 0.35, 0.35])
    return answers, truth, fit_annotator_models(*answers)


def test_models_beat_majority_vote_when_workers_differ_in_reliability(unequal_crowd):
    _, truth, models = unequal_crowd
    accuracy = {method: expected_accuracy(models.scores[method], truth) for method in METHODS}
    for method in ("wawa", "dawid_skene", "mace", "glad"):
        assert accuracy[method] > accuracy["majority_vote"] + 0.03, accuracy


def test_reliability_ranks_careful_workers_above_careless_ones(unequal_crowd):
    _, _, models = unequal_crowd
    for method, figures in models.reliability.items():
        assert figures[:3].min() > figures[3:].max(), (method, figures)
    # Dawid-Skene's accuracy estimates the simulated accuracies themselves.
    assert np.allclose(models.reliability["dawid_skene"], [0.9, 0.85, 0.8, 0.4, 0.35, 0.35], atol=0.1)


def test_a_worker_who_always_disagrees_gets_the_lowest_reliability():
    answers, truth = simulated_crowd([0.85, 0.8, 0.8, 0.75], per_item=3, seed=3)
    items, workers, labels, n_items, n_workers, k = answers
    # A fifth worker answers every item, never with its true label.
    contrarian = np.arange(n_items)
    items = np.concatenate([items, contrarian])
    workers = np.concatenate([workers, np.full(n_items, n_workers)])
    labels = np.concatenate([labels, (truth + 1) % k])
    models = fit_annotator_models(items, workers, labels, n_items, n_workers + 1, k)
    for method, figures in models.reliability.items():
        assert figures.argmin() == n_workers, (method, figures)
    assert models.reliability["dawid_skene"][n_workers] < 0.1
    assert models.reliability["glad"][n_workers] < 0  # adversarial on GLAD's scale


@pytest.mark.filterwarnings("ignore:::crowdkit")  # pandas 3 deprecations inside crowd-kit 1.4.2
def test_crowd_kit_is_the_reference_for_dawid_skene_mace_and_glad(unequal_crowd):
    from crowdkit.aggregation import GLAD, MACE, DawidSkene

    (items, workers, labels, *_), _, models = unequal_crowd
    data = pd.DataFrame({"task": items, "worker": workers, "label": labels})
    for method, model in (
        ("dawid_skene", DawidSkene(n_iter=100)),
        ("mace", MACE(n_restarts=MACE_RESTARTS, random_state=0)),
        ("glad", GLAD()),
    ):
        expected = model.fit(data).labels_.sort_index().to_numpy()
        assert (models.labels(method) == expected).all(), method


@pytest.mark.filterwarnings("ignore:::crowdkit")
@pytest.mark.parametrize("seed", [1, 2])
def test_dawid_skene_equals_crowd_kits_step_for_step(seed):
    """The numpy Dawid-Skene gives crowd-kit's posteriors, priors-weighted accuracies and labels; one
    worker never gives the last label (crowd-kit then has no row for it, which the mask must repeat)."""
    from crowdkit.aggregation import DawidSkene

    answers, _ = simulated_crowd([0.9, 0.7, 0.6, 0.5, 0.45], n_items=150, seed=seed)
    items, workers, labels, n_items, n_workers, k = answers
    labels = np.where((workers == 0) & (labels == k - 1), 0, labels)
    models = fit_annotator_models(items, workers, labels, n_items, n_workers, k, methods=("dawid_skene",))
    reference = DawidSkene(n_iter=100).fit(pd.DataFrame({"task": items, "worker": workers, "label": labels}))
    posteriors = reference.probas_.reindex(index=range(n_items), columns=range(k)).to_numpy()
    # crowd-kit floors its returned posteriors at 1e-10 when it computes its last bound
    assert np.abs(models.scores["dawid_skene"] - posteriors).max() <= 1e-9
    errors = reference.errors_.reindex(columns=range(k), fill_value=0.0)
    priors = reference.priors_.reindex(range(k)).to_numpy()
    accuracy = np.zeros(n_workers)
    for (worker, given), row in errors.iterrows():
        accuracy[worker] += priors[given] * row[given]
    assert np.allclose(models.reliability["dawid_skene"], accuracy, atol=1e-9)
    assert (models.labels("dawid_skene") == reference.labels_.sort_index().to_numpy()).all()


def test_wawa_by_hand():
    # Two items. Item 0: workers 0, 1 say 0, worker 2 says 1 -> majority 0. Item 1: workers 0, 2 say 1,
    # worker 1 says 2 -> majority 1. Skills: w0 2/2, w1 1/2, w2 1/2.
    models = fit_annotator_models([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [0, 0, 1, 1, 2, 1], 2, 3, 3)
    assert models.reliability["wawa"] == pytest.approx([1.0, 0.5, 0.5])
    assert models.scores["wawa"][1] == pytest.approx([0.0, 1.5, 0.5])
    assert models.labels("majority_vote").tolist() == [0, 1]


def test_ties_stay_ties_and_count_one_over_k():
    scores = np.array([[2.0, 2.0, 0.0], [0.1, 0.7, 0.2], [1.0, 1.0, 1.0]])
    assert decided_labels(scores).tolist() == [-1, 1, -1]
    # item 0: truth 0 among two tied -> 1/2; item 1: right -> 1; item 2: one of three tied -> 1/3
    assert expected_accuracy(scores, np.array([0, 1, 2])) == pytest.approx((0.5 + 1 + 1 / 3) / 3)


def test_mace_is_reproducible_with_its_seed(unequal_crowd):
    answers, _, models = unequal_crowd
    again = fit_annotator_models(*answers, methods=("mace",), seed=0)
    assert np.array_equal(again.scores["mace"], models.scores["mace"])


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        (([0, 1], [0, 0], [0, 1], 2, 1, 3), "two or more workers, got 1"),
        (([0, 1], [0, 1], [0, 1], 2, 2, 3), "at least one item answered by two or more workers"),
        (([0, 0, 0], [0, 1, 1], [0, 1, 2], 1, 2, 3), "answered the same item twice"),
        (([0, 0], [0, 1], [0, 3], 1, 2, 3), "answer 1: labels code 3 is not in [0, 3)"),
        (([0, 0], [0, 1], [0.0, 1.0], 1, 2, 3), "labels must be integer codes"),
        (([0, 0], [0, 1], [0], 1, 2, 3), "same shape"),
        (([0, 0], [0, 1], [0, 0], 2, 2, 3), "every item and every worker must have at least one answer"),
    ],
)
def test_bad_answers_are_refused_with_a_reason(answers, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace(")", r"\)").replace("(", r"\(")):
        fit_annotator_models(*answers)


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="unknown annotator models"):
        fit_annotator_models([0, 0], [0, 1], [0, 1], 1, 2, 2, methods=("zero_shot",))


def test_wawa_first_seen_ties_equal_crowd_kit_skills():
    """crowd-kit 1.4.2's Wawa.fit breaks majority-vote ties to the label seen first in the answers; with wawa_ties="first_seen"
    the skills are crowd-kit's exactly, on a crowd of 4 workers per item where ties are common."""
    from crowdkit.aggregation import Wawa

    answers, _ = simulated_crowd([0.7, 0.6, 0.5, 0.45, 0.4], n_items=150, per_item=4, seed=7)
    items, workers, labels, n_items, _, k = answers
    votes = np.zeros((n_items, k))
    np.add.at(votes, (items, labels), 1)
    tied = (votes == votes.max(axis=1, keepdims=True)).sum(axis=1) > 1
    assert tied.sum() >= 20  # the case under test occurs often
    reference = Wawa().fit(pd.DataFrame({"task": items, "worker": workers, "label": labels})).skills_
    ours = fit_annotator_models(*answers, methods=("wawa",), wawa_ties="first_seen")
    np.testing.assert_allclose(ours.reliability["wawa"], reference.sort_index().to_numpy(), atol=1e-12)
    assert ours.conventions == {"wawa": "ties=first_seen"}
    # The default scores a tie 1/k and so differs from crowd-kit where workers answered tied items.
    shared = fit_annotator_models(*answers, methods=("wawa",))
    assert shared.conventions == {"wawa": "ties=share"}
    assert np.abs(shared.reliability["wawa"] - ours.reliability["wawa"]).max() > 1e-3


def test_wawa_ties_option_is_checked():
    with pytest.raises(ValueError, match="wawa_ties must be one of"):
        fit_annotator_models([0, 0], [0, 1], [0, 1], 1, 2, 2, methods=("wawa",), wawa_ties="random")
