"""The model as an annotator (issue 52, item 3): metrics of evaluation.study_evaluation.as_annotator on
hand-made answers."""

import numpy as np
import pytest

from evaluation.study_evaluation.as_annotator import model_among_annotators


def test_a_small_case_scored_by_hand():
    # item 0: annotators 0 and 1 say label 0, annotator 2 says 1; item 1: all three say 1.
    items, annotators, values = [0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [0, 0, 1, 1, 1, 1]
    place = model_among_annotators(items, annotators, values, np.array([0.0, 1.0]), "nominal")
    assert [a["score"] for a in place["annotators"]] == pytest.approx([0.75, 0.75, 0.5])  # (1/2 + 1) / 2, (0 + 1) / 2
    assert place["model"] == {"items": 2, "score": pytest.approx((2 / 3 + 1) / 2)}
    assert (place["better_than"], place["ranked"], place["rank"]) == (3, 3, 1)

    wrong = model_among_annotators(items, annotators, values, np.array([1.0, 0.0]), "nominal")
    assert wrong["model"]["score"] == pytest.approx((1 / 3 + 0) / 2)
    assert (wrong["better_than"], wrong["rank"]) == (0, 4)


def crowd(seed=0, n_items=80, n_annotators=12, per_item=5, n_classes=3):
    """Annotators right with probabilities from 0.9 down to 0.45, five of them on each item."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(n_classes, size=n_items)
    skill = np.linspace(0.9, 0.45, n_annotators)
    items, annotators, values = [], [], []
    for item in range(n_items):
        for annotator in rng.choice(n_annotators, per_item, replace=False):
            right = rng.random() < skill[annotator]
            items.append(item)
            annotators.append(annotator)
            values.append(truth[item] if right else (truth[item] + rng.integers(1, n_classes)) % n_classes)
    return np.array(items), np.array(annotators), np.array(values), truth


def majority(items, values, n_items, n_classes=3):
    counts = np.zeros((n_items, n_classes))
    np.add.at(counts, (items, values), 1)
    return counts.argmax(axis=1).astype(float)


def test_a_model_that_copies_the_majority_ranks_first_and_a_random_one_low():
    items, annotators, values, _ = crowd()
    copier = model_among_annotators(items, annotators, values, majority(items, values, 80), "nominal")
    assert copier["rank"] == 1 and copier["better_than"] == copier["ranked"] == 12

    guesser = np.random.default_rng(1).integers(3, size=80).astype(float)
    random_place = model_among_annotators(items, annotators, values, guesser, "nominal")
    assert random_place["better_than"] <= 2 and random_place["rank"] >= 11


def test_numbers_are_scored_by_their_distance_to_the_others_median():
    rng = np.random.default_rng(2)
    truth = rng.random(60)
    items = np.repeat(np.arange(60), 4)
    annotators = np.concatenate([rng.choice(8, 4, replace=False) for _ in range(60)])
    noise = np.linspace(0.02, 0.3, 8)[annotators]
    values = np.clip(truth[items] + rng.normal(0, noise), 0, 1)
    medians = np.array([np.median(values[items == i]) for i in range(60)])
    close = model_among_annotators(items, annotators, values, medians, "interval")
    assert close["higher_is_better"] is False and close["rank"] == 1
    far = model_among_annotators(items, annotators, values, 1 - truth, "interval")
    assert far["better_than"] == 0


def test_items_with_one_answer_or_no_model_answer_are_not_scored_and_few_items_are_not_ranked():
    items, annotators, values = [0, 0, 1, 2, 2], [0, 1, 0, 0, 2], [1, 1, 0, 0, 1]
    place = model_among_annotators(items, annotators, values, np.array([1.0, 0.0, np.nan]), "nominal", min_items=2)
    assert place["model"]["items"] == 1  # item 1 has one answer, item 2 no model answer
    assert place["ranked"] == 0 and {a["index"] for a in place["too_few_items"]} == {0, 1}
    with pytest.raises(ValueError, match="no item has two or more answers"):
        model_among_annotators([0, 1], [0, 0], [1, 1], np.array([1.0, 1.0]), "nominal")
    with pytest.raises(ValueError, match="level must be one of"):
        model_among_annotators(items, annotators, values, np.zeros(3), "ratio")


def test_numbers_equal_a_plain_loop_over_answers_in_any_order():
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 6, size=40)  # items of 1 to 5 answers
    items = np.repeat(np.arange(40), sizes)
    annotators = np.concatenate([rng.choice(9, k, replace=False) for k in sizes])
    values = rng.integers(-2, 3, size=len(items)).astype(float)  # an ordinal -2..+2 scale
    model = rng.integers(-2, 3, size=40).astype(float)
    shuffled = rng.permutation(len(items))
    place = model_among_annotators(items[shuffled], annotators[shuffled], values[shuffled], model, "ordinal")

    scores: dict[int, list[float]] = {}
    model_scores = []
    for item in np.flatnonzero(sizes >= 2):
        on_item = np.flatnonzero(items == item)
        for answer in on_item:
            others = values[on_item[on_item != answer]]
            scores.setdefault(int(annotators[answer]), []).append(abs(values[answer] - np.median(others)))
        model_scores.append(abs(model[item] - np.median(values[on_item])))
    assert place["model"]["score"] == pytest.approx(np.mean(model_scores), abs=1e-12)
    assert {a["index"]: a["score"] for a in place["annotators"]} == pytest.approx(
        {index: float(np.mean(s)) for index, s in scores.items()}, abs=1e-12
    )
