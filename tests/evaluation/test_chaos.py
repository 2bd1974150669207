"""`evaluate chaos` against an independent per-item scipy computation on the real ChaosNLI files."""

import json
import re

import numpy as np
import pytest
from django.core.management.base import CommandError
from scipy.spatial import distance
from scipy.stats import entropy, spearmanr

from metrics.agreement import split_half_counts
from metrics.distributions import floor_probabilities, quantile_bins
from tests.evaluation.helpers import evaluate, evaluate_text, write_jsonl

SUBSETS = [
    # human file, prediction sample, share of items whose original label is not the 100-vote majority
    ("chaosNLI_snli.jsonl", "snli_random_baseline.json", 0.250),
    ("chaosNLI_mnli_m.jsonl", "mnli_random_baseline.json", 0.318),
    ("chaosNLI_alphanli.jsonl", "abdnli_random_baseline.json", 0.106),
]
NLI_LETTER = {"entailment": "e", "neutral": "n", "contradiction": "c"}
# A small human file: item a split 90/10, item b unanimous.
TWO_ITEMS = [
    {
        "uid": "a",
        "label_count": [90, 10, 0],
        "label_dist": [0.9, 0.1, 0.0],
        "entropy": 0.469,
        "majority_label": "e",
        "old_label": "n",
    },
    {
        "uid": "b",
        "label_count": [0, 0, 100],
        "label_dist": [0.0, 0.0, 1.0],
        "entropy": 0.0,
        "majority_label": "c",
        "old_label": "c",
    },
]


def reference_scores(human_path, prediction_path):
    """Item by item, as the ChaosNLI scorer does it."""
    items = [json.loads(line) for line in open(human_path)]
    predictions = next(iter(json.load(open(prediction_path)).values()))
    jsd, kl, old, majority = [], [], [], []
    for item in items:
        prediction = predictions[item["uid"]]
        model = np.array(prediction["predicted_probabilities"], dtype=float)
        model[model < 1e-15] = 1e-15
        model = model / model.sum()
        human = np.array(item["label_dist"])
        value = distance.jensenshannon(human, model)
        jsd.append(0.0 if np.isnan(value) else value)
        kl.append(entropy(human, model))
        label = prediction["predicted_label"]
        label = NLI_LETTER.get(label, label)
        old.append(label == item["old_label"])
        majority.append(label == item["majority_label"])
    return {
        "jsd": np.mean(jsd),
        "kl": np.mean(kl),
        "old_acc": np.mean(old),
        "majority_acc": np.mean(majority),
        "jsd_items": np.array(jsd),
        "items": items,
    }


@pytest.mark.parametrize("human_file, prediction_file, relabelled", SUBSETS)
def test_chaos_matches_scipy_item_by_item(shared_data, human_file, prediction_file, relabelled):
    human = shared_data / "chaosnli" / human_file
    predictions = shared_data / "chaosnli" / "prediction_samples" / prediction_file
    result = evaluate("chaos", "--human", human, "--predictions", predictions)
    expected = reference_scores(human, predictions)

    assert result["n"] == len(expected["items"])
    for key in ("jsd", "kl", "old_acc", "majority_acc"):
        assert result[key] == pytest.approx(expected[key], rel=1e-12), key
    assert round(result["old_label_differs_from_majority"], 3) == relabelled
    assert result["jsd_measure"] == "distance"

    # Bins: 5 quantile bins of the dataset's entropy covering every item once, per-bin JSD as the reference.
    bins = result["bins"]
    assert len(bins) == 5 and sum(b["n"] for b in bins) == result["n"]
    entropies = np.array([item["entropy"] for item in expected["items"]])
    assert bins[0]["entropy_range"][0] == pytest.approx(entropies.min())
    assert bins[-1]["entropy_range"][1] == pytest.approx(entropies.max())
    for b, (_low, _high, mask) in zip(bins, quantile_bins(entropies)):
        assert b["n"] == mask.sum()
        assert b["jsd"] == pytest.approx(expected["jsd_items"][mask].mean(), rel=1e-12)

    # The human split-half baseline is far below a random model.
    assert 0 < result["human_split_jsd"] < result["jsd"] / 2


def test_divergence_is_the_mean_squared_distance(shared_data):
    human = shared_data / "chaosnli" / "chaosNLI_snli.jsonl"
    predictions = shared_data / "chaosnli" / "prediction_samples" / "snli_random_baseline.json"
    result = evaluate("chaos", "--human", human, "--predictions", predictions, "--divergence")
    expected = reference_scores(human, predictions)
    assert result["jsd"] == pytest.approx(np.mean(expected["jsd_items"] ** 2), rel=1e-12)
    assert result["jsd_measure"] == "divergence"


def test_jsonl_rows_from_the_predict_command_score_the_same(shared_data, tmp_path):
    human = shared_data / "chaosnli" / "chaosNLI_snli.jsonl"
    sample = shared_data / "chaosnli" / "prediction_samples" / "snli_random_baseline.json"
    rows = []
    for uid, entry in json.load(open(sample))["random_baseline"].items():
        e, n, c = entry["predicted_probabilities"]
        rows.append(
            {
                "id": uid,
                "probabilities": {"entailment": e, "neutral": n, "contradiction": c},
                "label": entry["predicted_label"],
            }
        )
    as_rows = evaluate("chaos", "--human", human, "--predictions", write_jsonl(tmp_path / "p.jsonl", rows))
    original = evaluate("chaos", "--human", human, "--predictions", sample)
    assert as_rows == original


def test_argmax_is_used_without_a_predicted_label(tmp_path):
    human = write_jsonl(tmp_path / "h.jsonl", TWO_ITEMS)
    predictions = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"id": "a", "probabilities": {"e": 0.7, "n": 0.3, "c": 0.0}},
            {"id": "b", "probabilities": {"e": 0.0, "n": 0.0, "c": 1.0}},
        ],
    )
    result = evaluate("chaos", "--human", human, "--predictions", predictions)
    assert result["majority_acc"] == 1.0 and result["old_acc"] == 0.5
    # Item b: identical distributions; item a: floored model [0.7, 0.3, 1e-15] against [0.9, 0.1, 0].
    model_a = floor_probabilities(np.array([[0.7, 0.3, 0.0]]))[0]
    expected_kl = 0.9 * np.log(0.9 / model_a[0]) + 0.1 * np.log(0.1 / model_a[1])
    assert result["kl"] == pytest.approx(expected_kl / 2)
    assert result["jsd"] == pytest.approx(distance.jensenshannon([0.9, 0.1, 0.0], model_a) / 2)


def test_split_halves_rebuild_the_votes():
    counts = np.array([[30, 70, 0], [1, 2, 97], [100, 0, 0], [1, 0, 0], [0, 2, 1]])
    first, second = split_half_counts(counts, seed=3)
    # Units with fewer than two votes are dropped; the others split into floor(n/2) and ceil(n/2) votes.
    kept = counts[[0, 1, 2, 4]]
    np.testing.assert_array_equal(first + second, kept)
    np.testing.assert_array_equal(first.sum(axis=1), [50, 50, 50, 1])
    np.testing.assert_array_equal(first[2], [50, 0, 0])
    assert (first >= 0).all() and (second >= 0).all()


def test_split_baseline_is_seeded(shared_data):
    human = shared_data / "chaosnli" / "chaosNLI_alphanli.jsonl"
    predictions = shared_data / "chaosnli" / "prediction_samples" / "abdnli_random_baseline.json"
    first = evaluate("chaos", "--human", human, "--predictions", predictions, "--seed", 7)
    again = evaluate("chaos", "--human", human, "--predictions", predictions, "--seed", 7)
    other = evaluate("chaos", "--human", human, "--predictions", predictions, "--seed", 8)
    assert first["human_split_jsd"] == again["human_split_jsd"] != other["human_split_jsd"]


def test_missing_uid_is_named(shared_data):
    human = shared_data / "chaosnli" / "chaosNLI_snli.jsonl"
    predictions = shared_data / "chaosnli" / "prediction_samples" / "mnli_random_baseline.json"
    with pytest.raises(CommandError, match=r"no prediction for uid '2407214681\.jpg#0r1n'"):
        evaluate("chaos", "--human", human, "--predictions", predictions)


def test_several_models_need_a_choice(shared_data, tmp_path):
    human = shared_data / "chaosnli" / "chaosNLI_snli.jsonl"
    sample = json.load(open(shared_data / "chaosnli" / "prediction_samples" / "snli_random_baseline.json"))
    both = tmp_path / "both.json"
    both.write_text(json.dumps({"first": sample["random_baseline"], "second": sample["random_baseline"]}))
    with pytest.raises(CommandError, match="choose one with --model"):
        evaluate("chaos", "--human", human, "--predictions", both)
    assert evaluate("chaos", "--human", human, "--predictions", both, "--model", "second")["n"] == 1514


def test_bad_label_names_the_line_and_field(tmp_path):
    human = write_jsonl(tmp_path / "h.jsonl", [TWO_ITEMS[0], {**TWO_ITEMS[1], "majority_label": "x"}])
    with pytest.raises(CommandError, match=r"h\.jsonl:2 field 'majority_label'"):
        evaluate("chaos", "--human", human, "--predictions", human)


def test_table_output(shared_data):
    text = evaluate_text(
        "chaos",
        "--human",
        shared_data / "chaosnli" / "chaosNLI_snli.jsonl",
        "--predictions",
        shared_data / "chaosnli" / "prediction_samples" / "snli_random_baseline.json",
    )
    assert "majority_acc" in text and "bins:" in text and "{" not in text


@pytest.mark.django_db
def test_agreement_report_and_chaos_suite_print_the_same_split_half_jsd(shared_data, make_project):
    from annotation.services.analysis.agreement import project_agreement
    from dataset_io.services.importers import import_file

    human = shared_data / "chaosnli" / "chaosNLI_snli.jsonl"
    predictions = shared_data / "chaosnli" / "prediction_samples" / "snli_random_baseline.json"
    project = make_project("nli_label", slug="chaos-snli")
    import_file(project, human, "chaosnli")

    report = project_agreement(project, bootstrap=0)
    suite = evaluate("chaos", "--human", human, "--predictions", predictions)
    assert report["split_half_jsd"] == suite["human_split_jsd"]
    assert round(suite["human_split_jsd"], 4) == 0.0843
    # Same seed, same number; another seed, another draw, in both.
    assert (
        project_agreement(project, bootstrap=0, seed=5)["split_half_jsd"]
        == evaluate("chaos", "--human", human, "--predictions", predictions, "--seed", 5)["human_split_jsd"]
        != report["split_half_jsd"]
    )
    assert re.search(
        r"^human_split_jsd +0\.0843$", evaluate_text("chaos", "--human", human, "--predictions", predictions), re.M
    )


def test_human_vs_model_refuses_what_is_not_a_distribution():
    from metrics.distributions import human_vs_model

    good = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    labels = np.array(["e", "c"], dtype=object)
    assert human_vs_model(good, good, [0.5, 1.2], labels, labels, labels)["jsd"] == pytest.approx(0, abs=1e-7)
    for bad, message in (
        ([[np.nan, 0.5, 0.5], [0.2, 0.3, 0.5]], "human row 0: nan is not a probability"),
        ([[0.5, 0.5, 0.0], [-0.2, 0.7, 0.5]], "human row 1: -0.2 is not a probability"),
        ([[0.5, 0.4, 0.0], [0.2, 0.3, 0.5]], "human row 0: sums to 0.9, not 1"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            human_vs_model(bad, good, [0.5, 1.2], labels, labels, labels)
    with pytest.raises(ValueError, match="model row 1"):
        human_vs_model(good, [[0.5, 0.5, 0.0], [0.0, 0.0, 0.0]], [0.5, 1.2], labels, labels, labels)
    with pytest.raises(ValueError, match="differ in length"):
        human_vs_model(good, good, [0.5], labels, labels, labels)


def test_soft_label_figures_intervals_and_extremes(shared_data):
    human_path = shared_data / "chaosnli" / "chaosNLI_mnli_m.jsonl"
    predictions = shared_data / "chaosnli" / "prediction_samples" / "mnli_random_baseline.json"
    reference = reference_scores(human_path, predictions)
    model_rows = next(iter(json.load(open(predictions)).values()))
    human = np.array([item["label_dist"] for item in reference["items"]])
    model = np.array([model_rows[item["uid"]]["predicted_probabilities"] for item in reference["items"]])
    result = evaluate("chaos", "--human", human_path, "--predictions", predictions, "--bootstrap", 300)

    soft = result["soft_labels"]
    manhattan = [distance.cityblock(h, m) for h, m in zip(human, model, strict=True)]
    assert soft["manhattan"] == pytest.approx(np.mean(manhattan), rel=1e-9)
    assert soft["tvd"] == pytest.approx(np.mean(manhattan) / 2, rel=1e-9)
    assert soft["brier"] == pytest.approx(np.mean(((human - model) ** 2).sum(axis=1)), rel=1e-9)
    entropy_gap = entropy(model, base=2, axis=1) - entropy(human, base=2, axis=1)
    assert soft["entropy_calibration_error"] == pytest.approx(np.mean(np.abs(entropy_gap)), rel=1e-9)
    # Rounded so that permutations of one distribution tie, as they do in the suite.
    human_entropy, model_entropy = (np.round(entropy(rows, axis=1), 12) for rows in (human, model))
    assert soft["entropy_correlation.spearman"] == pytest.approx(spearmanr(human_entropy, model_entropy)[0], rel=1e-9)
    assert soft["distance_correlation_items"] == 1599
    # The cited authors' conventions beside the app's, each named in the result.
    assert soft["entropy_calibration_error_nats"] == pytest.approx(
        np.mean(np.abs(entropy(model, axis=1) - entropy(human, axis=1))), rel=1e-9
    )
    counts = np.array([item["label_count"] for item in reference["items"]])
    assert soft["ranking_calibration_argsort"] == pytest.approx(
        np.all(model.argsort(-1) == counts.argsort(-1), axis=-1).mean()
    )
    conventions = result["soft_label_conventions"]
    assert (
        "nats" in conventions["entropy_calibration_error_nats"] and "bits" in conventions["entropy_calibration_error"]
    )
    assert "argsort" in conventions["ranking_calibration_argsort"]

    # Every figure has an interval; those of means hold their estimate.
    intervals = result["intervals"]
    for name in ("jsd", "kl", "majority_acc", "old_acc", "human_split_jsd"):
        low, high = intervals[name]
        assert low < result[name] < high, name
    for name in ("tvd", "manhattan", "cross_entropy", "brier", "ranking_calibration", "ranking_calibration_argsort"):
        low, high = intervals[f"soft_labels.{name}"]
        assert low < soft[name] < high, name
    # The distance correlation's interval is shifted by the resampling's bias, so it holds its estimate too.
    low, high = intervals["soft_labels.distance_correlation"]
    assert low <= soft["distance_correlation"] <= high
    assert set(soft) - {"distance_correlation_items"} == {
        name.removeprefix("soft_labels.") for name in intervals if name.startswith("soft_labels.")
    }
    assert result["bootstrap"] == {"resamples": 300, "seed": 0, "level": 0.95, "unit": "item"}

    # The most and least human-like items are those of the smallest and largest per-item JSD.
    order = np.argsort(reference["jsd_items"], kind="stable")
    uids = [item["uid"] for item in reference["items"]]
    assert [row["id"] for row in result["most_human_like"]] == [uids[i] for i in order[:10]]
    assert [row["id"] for row in result["least_human_like"]] == [uids[i] for i in order[::-1][:10]]
    assert result["least_human_like"][0]["jsd"] == pytest.approx(reference["jsd_items"].max())


def test_intervals_are_seeded_and_can_be_left_out(tmp_path):
    rows = [
        {**TWO_ITEMS[index % 2], "uid": f"item-{index}", "label_count": counts, "label_dist": [c / 10 for c in counts]}
        for index, counts in enumerate([[6, 3, 1], [0, 2, 8], [5, 5, 0], [1, 8, 1], [3, 3, 4], [9, 1, 0]] * 5)
    ]
    human = write_jsonl(tmp_path / "h.jsonl", rows)
    model = [[0.5, 0.3, 0.2], [0.1, 0.2, 0.7], [0.3, 0.6, 0.1]]
    predictions = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"uid": row["uid"], "probabilities": dict(zip(NLI_LETTER, model[index % 3], strict=True))}
            for index, row in enumerate(rows)
        ],
    )
    first = evaluate("chaos", "--human", human, "--predictions", predictions, "--bootstrap", 200, "--seed", 3)
    again = evaluate("chaos", "--human", human, "--predictions", predictions, "--bootstrap", 200, "--seed", 3)
    other = evaluate("chaos", "--human", human, "--predictions", predictions, "--bootstrap", 200, "--seed", 4)
    assert first == again
    assert first["intervals"]["jsd"] != other["intervals"]["jsd"]
    none = evaluate("chaos", "--human", human, "--predictions", predictions, "--bootstrap", 0)
    assert none["jsd"] == first["jsd"] and none["intervals"]["jsd"] == [None, None]
    text = evaluate_text("chaos", "--human", human, "--predictions", predictions, "--bootstrap", 50)
    assert "intervals.soft_labels.tvd" in text and "most_human_like:" in text
    with pytest.raises(CommandError, match="bootstrap") as error:
        evaluate("chaos", "--human", human, "--predictions", predictions, "--bootstrap", -1)
    assert error.value.returncode == 2
