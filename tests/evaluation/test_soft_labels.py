"""metrics.soft_labels and the vectorised bootstrap, each against an independent reference."""

import json

import numpy as np
import pytest
from scipy import stats
from scipy.spatial import distance
from sklearn.metrics import brier_score_loss, log_loss

from metrics import soft_labels
from metrics.bootstrap import bootstrap_ci, bootstrap_figures
from metrics.distance_correlation import distance_correlation

PAIRWISE = [
    soft_labels.manhattan_distance,
    soft_labels.total_variation_distance,
    soft_labels.wasserstein_ordinal,
    soft_labels.cross_entropy,
    soft_labels.brier_score,
    soft_labels.entropy_calibration_error,
    soft_labels.ranking_calibration,
]


@pytest.fixture
def chaos_mnli(shared_data):
    """Real human distributions of ChaosNLI MNLI and the random-baseline model's, in the same item order."""
    items = [json.loads(line) for line in open(shared_data / "chaosnli" / "chaosNLI_mnli_m.jsonl")]
    predictions = json.load(open(shared_data / "chaosnli" / "prediction_samples" / "mnli_random_baseline.json"))
    model = next(iter(predictions.values()))
    human = np.array([item["label_dist"] for item in items], dtype=float)
    predicted = np.array([model[item["uid"]]["predicted_probabilities"] for item in items], dtype=float)
    return human, predicted / predicted.sum(axis=1, keepdims=True)


def test_manhattan_and_total_variation_match_scipy_cityblock(chaos_mnli):
    human, model = chaos_mnli
    reference = np.array([distance.cityblock(h, m) for h, m in zip(human, model, strict=True)])
    np.testing.assert_allclose(soft_labels.manhattan_distance(human, model), reference, rtol=1e-12)
    np.testing.assert_allclose(soft_labels.total_variation_distance(human, model), reference / 2, rtol=1e-12)


def test_wasserstein_matches_scipy_on_default_and_uneven_positions(chaos_mnli):
    human, model = chaos_mnli
    for positions in ([0, 1, 2], [-2.0, 0.5, 3.0]):
        reference = [stats.wasserstein_distance(positions, positions, h, m) for h, m in zip(human, model, strict=True)]
        np.testing.assert_allclose(soft_labels.wasserstein_ordinal(human, model, positions), reference, atol=1e-12)


def test_wasserstein_respects_the_order_of_bins():
    # All mass moved one bin costs 1, two bins 2; TVD cannot tell them apart.
    start = [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    moved = [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    np.testing.assert_allclose(soft_labels.wasserstein_ordinal(start, moved), [1.0, 2.0])
    np.testing.assert_allclose(soft_labels.total_variation_distance(start, moved), [1.0, 1.0])
    with pytest.raises(ValueError, match="strictly increasing"):
        soft_labels.wasserstein_ordinal(start, moved, positions=[0, 2, 1])


def test_cross_entropy_matches_entropy_plus_kl_and_sklearn_log_loss(chaos_mnli):
    human, model = chaos_mnli
    reference = stats.entropy(human, axis=1) + stats.entropy(human, model, axis=1)
    np.testing.assert_allclose(soft_labels.cross_entropy(human, model), reference, rtol=1e-9)
    # One-hot humans: the cross-entropy is scikit-learn's log loss of the majority label.
    one_hot = np.eye(3)[human.argmax(axis=1)]
    ours = soft_labels.cross_entropy(one_hot, model).mean()
    assert ours == pytest.approx(log_loss(human.argmax(axis=1), model, labels=[0, 1, 2]), rel=1e-9)


def test_brier_matches_sklearn(chaos_mnli):
    human, model = chaos_mnli
    labels = human.argmax(axis=1)
    one_hot = np.eye(3)[labels]
    # scikit-learn's multi-class Brier score is the mean over items of the sum over classes.
    reference = brier_score_loss(labels, model, labels=[0, 1, 2], scale_by_half=False)
    assert soft_labels.brier_score(one_hot, model).mean() == pytest.approx(reference, rel=1e-12)
    # Binary: sklearn scores the positive class only, half our sum over both classes.
    binary_human = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    binary_model = np.array([[0.2, 0.8], [0.7, 0.3], [0.5, 0.5]])
    binary = brier_score_loss([1, 0, 1], binary_model[:, 1])
    assert soft_labels.brier_score(binary_human, binary_model).mean() == pytest.approx(2 * binary)


def test_entropy_calibration_error_is_model_minus_human_entropy_in_bits(chaos_mnli):
    human, model = chaos_mnli
    reference = stats.entropy(model, base=2, axis=1) - stats.entropy(human, base=2, axis=1)
    np.testing.assert_allclose(soft_labels.entropy_calibration_error(human, model), reference, atol=1e-12)
    # Hand-worked: a uniform model (log2 3 bits) against a unanimous crowd (0 bits).
    assert soft_labels.entropy_calibration_error([[1.0, 0.0, 0.0]], [[1 / 3] * 3])[0] == pytest.approx(np.log2(3))


def chaos_snli_random_baseline(shared_data):
    items = [json.loads(line) for line in open(shared_data / "chaosnli" / "chaosNLI_snli.jsonl")]
    predictions = json.load(open(shared_data / "chaosnli" / "prediction_samples" / "snli_random_baseline.json"))
    model = next(iter(predictions.values()))
    counts = np.array([item["label_count"] for item in items], dtype=float)
    predicted = np.array([model[item["uid"]]["predicted_probabilities"] for item in items], dtype=float)
    return counts, predicted / predicted.sum(axis=1, keepdims=True)


def test_ranking_calibration_argsort_is_baan_et_al_code_on_chaosnli_snli(shared_data):
    counts, model = chaos_snli_random_baseline(shared_data)
    human = counts / counts.sum(axis=1, keepdims=True)
    # Baan et al.'s released code (analysis_utils.generate_table1): argsorts of model and human votes equal.
    reference = np.all(model.argsort(-1) == counts.argsort(-1), axis=-1)
    theirs = soft_labels.ranking_calibration(human, model, ties="argsort")
    np.testing.assert_array_equal(theirs, reference)
    ours = soft_labels.ranking_calibration(human, model)
    # The two conventions differ only on items with a tie, and give different means on this baseline.
    differ = theirs != ours
    tie = lambda rows: (np.diff(np.sort(rows, axis=1), axis=1) == 0).any(axis=1)  # noqa: E731
    assert differ.any() and (tie(human) | tie(model))[differ].all()
    assert theirs.mean() == pytest.approx(reference.mean()) and abs(theirs.mean() - ours.mean()) > 0.05
    with pytest.raises(ValueError, match="ties must be one of"):
        soft_labels.ranking_calibration(human, model, ties="random")


def test_entropy_calibration_error_in_nats_is_baan_et_al_ent_ce(chaos_mnli):
    human, model = chaos_mnli
    # Baan et al.'s ent_ce: scipy.stats.entropy (natural log) of prediction minus that of the humans.
    reference = stats.entropy(model, axis=1) - stats.entropy(human, axis=1)
    np.testing.assert_allclose(soft_labels.entropy_calibration_error(human, model, unit="nats"), reference, atol=1e-12)
    assert soft_labels.entropy_calibration_error([[1.0, 0.0, 0.0]], [[1 / 3] * 3], unit="nats")[0] == pytest.approx(
        np.log(3)
    )
    with pytest.raises(ValueError, match="unit must be one of"):
        soft_labels.entropy_calibration_error(human, model, unit="dits")


def test_ranking_calibration_hand_worked_cases():
    human = [[0.6, 0.3, 0.1], [0.6, 0.3, 0.1], [0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]
    model = [[0.5, 0.4, 0.1], [0.4, 0.5, 0.1], [0.2, 0.7, 0.1], [0.4, 0.2, 0.4]]
    # Same order; top two swapped; humans tie the top two (free) and both beat c; c ties a in the model.
    np.testing.assert_array_equal(soft_labels.ranking_calibration(human, model), [1.0, 0.0, 1.0, 0.0])


def test_distance_correlation_hand_worked_and_invariances():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    # A similarity transform has distance correlation 1; a symmetric pattern is dependent yet uncorrelated.
    assert distance_correlation(x, -3 * x + 7) == pytest.approx(1.0)
    y = (x - 3) ** 2
    assert stats.pearsonr(x, y)[0] == pytest.approx(0.0, abs=1e-12)
    assert 0.4 < distance_correlation(x, y) < 1
    # By hand for x = (0, 1) and y = (0, 2): centred distance matrices are +-0.5 and +-1, so dCor = 1.
    assert distance_correlation([0.0, 1.0], [0.0, 2.0]) == pytest.approx(1.0)
    # A constant sample: 0 by definition (it is independent of anything), either side.
    assert distance_correlation([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) == 0.0
    assert distance_correlation([[0.2, 0.8]] * 4, [[0.1, 0.9], [0.5, 0.5], [0.3, 0.7], [0.0, 1.0]]) == 0.0


def test_distance_correlation_matches_the_definition_on_real_rows(chaos_mnli):
    human, model = chaos_mnli
    human, model = human[:300], model[:300]

    def centred(points):
        d = distance.squareform(distance.pdist(points))
        return d - d.mean(axis=0) - d.mean(axis=1)[:, None] + d.mean()

    a, b = centred(human), centred(model)
    reference = np.sqrt((a * b).mean() / np.sqrt((a * a).mean() * (b * b).mean()))
    assert distance_correlation(human, model) == pytest.approx(reference, rel=1e-12)


def test_lewidi_per_annotator_measures_hand_worked():
    nan = np.nan
    labels = np.array([[0, 1, nan], [2, 2, 2]])
    predicted = np.array([[0, 0, 5], [2, 1, 0]])  # the prediction for a missing label is ignored
    np.testing.assert_allclose(soft_labels.annotator_error_rate(labels, predicted), [0.5, 2 / 3])
    ratings = np.array([[1, 5, nan], [3, 3, 3]])
    guesses = np.array([[2, 3, 0], [3, 1, 5]])
    # Scale 1..5 (range 4): item 0 mean |diff| (1 + 2) / 2 = 1.5 -> 0.375; item 1 (0 + 2 + 2) / 3 -> 1/3.
    np.testing.assert_allclose(soft_labels.normalised_absolute_distance(ratings, guesses, 1, 5), [0.375, 1 / 3])


def test_normalised_absolute_distance_scale_points_is_the_lewidi_scoring_normaliser():
    # Par's -5..+5 scale: the scoring code divides the mean absolute distance by 11 (points), not 10 (range);
    # CSC's 1..6 by 6, not 5. Item: labels 5 and -5, guesses 0 and 0 -> mean |diff| 5.
    labels, guesses = np.array([[5.0, -5.0]]), np.array([[0.0, 0.0]])
    assert soft_labels.normalised_absolute_distance(labels, guesses, -5, 5, normaliser="scale_points")[0] == 5 / 11
    assert soft_labels.normalised_absolute_distance(labels, guesses, -5, 5)[0] == 5 / 10
    csc = soft_labels.normalised_absolute_distance(
        [[1.0, 6.0, 3.0]], [[2.0, 2.0, 2.0]], 1, 6, normaliser="scale_points"
    )
    assert csc[0] == pytest.approx((1 + 4 + 1) / 3 / 6)
    with pytest.raises(ValueError, match="normaliser must be one of"):
        soft_labels.normalised_absolute_distance(labels, guesses, -5, 5, normaliser="points")


@pytest.mark.parametrize(
    "labels, predicted, message",
    [
        ([[nan := float("nan"), nan], [1, 0]], [[0, 0], [1, 0]], "labels row 0: no annotator"),
        ([[1, 0]], [[1, nan]], "predicted row 0: no finite prediction for annotator 1"),
        ([1, 0], [1, 0], "shape"),
    ],
)
def test_per_annotator_measures_refuse_bad_input(labels, predicted, message):
    with pytest.raises(ValueError, match=message):
        soft_labels.annotator_error_rate(labels, predicted)
    with pytest.raises(ValueError, match="scale_max"):
        soft_labels.normalised_absolute_distance([[1.0]], [[1.0]], 5, 1)


GOOD = [[0.5, 0.5, 0.0]]


@pytest.mark.parametrize("function", PAIRWISE, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "human, model, message",
    [
        ([[0.5, 0.6, 0.0]], GOOD, "human row 0: sums to 1.1"),
        (GOOD, [[1.2, -0.2, 0.0]], "model row 0: 1.2 is not a probability"),
        (GOOD, [[float("nan"), 0.5, 0.5]], "model row 0: nan is not a probability"),
        (GOOD, [[0.5, 0.5]], r"human has shape \(1, 3\) but model has shape \(1, 2\)"),
        ([0.5, 0.5], [0.5, 0.5], "must have shape"),
    ],
)
def test_pairwise_measures_refuse_what_is_not_a_distribution(function, human, model, message):
    with pytest.raises(ValueError, match=message):
        function(human, model)


def test_distance_correlation_refuses_bad_samples():
    with pytest.raises(ValueError, match="same length"):
        distance_correlation([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        distance_correlation([1.0, float("nan")], [1.0, 2.0])


def test_bootstrap_figures_match_resampling_item_by_item():
    """Each resample's figures equal the statistic recomputed on the resampled arrays (bootstrap_ci draws
    the same indices from the same seed, one resample at a time)."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, 120).astype(float)  # ties, as entropies of vote counts have
    y = x + rng.normal(size=120)
    values = rng.random(120)
    values[::9] = np.nan
    figures = bootstrap_figures(
        120,
        means={"values": values},
        correlations={"xy": (x, y), "yx": (y, x)},  # ties in the first variable, then in the second
        distance_correlations={"dcor": (x, y)},
        n_boot=60,
        seed=11,
    )
    expected = {
        "values": bootstrap_ci(np.nanmean, values, n_boot=60, seed=11),
        "xy.pearson": bootstrap_ci(lambda a, b: stats.pearsonr(a, b)[0], (x, y), n_boot=60, seed=11),
        "xy.spearman": bootstrap_ci(lambda a, b: stats.spearmanr(a, b)[0], (x, y), n_boot=60, seed=11),
        "yx.spearman": bootstrap_ci(lambda a, b: stats.spearmanr(a, b)[0], (y, x), n_boot=60, seed=11),
    }
    for name, interval in expected.items():
        np.testing.assert_allclose(figures[name], interval, rtol=1e-5, err_msg=name)
    # The distance correlation's interval is the percentile one moved down by the resampling's bias (the
    # replicates' mean minus the estimate), from the same resamples, recomputed here.
    rng = np.random.default_rng(11)
    draws = [rng.integers(0, 120, 120) for _ in range(60)]
    replicates = np.array([distance_correlation(x[draw], y[draw]) for draw in draws])
    estimate = distance_correlation(x, y)
    shifted = np.percentile(replicates, [2.5, 97.5]) - (replicates.mean() - estimate)
    np.testing.assert_allclose(figures["dcor"], [estimate, *np.clip(shifted, 0, 1)], rtol=1e-5)


def test_distance_correlation_interval_contains_its_estimate_where_the_percentile_one_does_not(chaos_mnli):
    human, model = chaos_mnli
    human, model = human[:200], model[:200]
    interval = bootstrap_figures(200, distance_correlations={"dcor": (human, model)}, n_boot=300, seed=0)["dcor"]
    percentile = bootstrap_ci(distance_correlation, (human, model), n_boot=300, seed=0)
    assert percentile.estimate < percentile.low  # resampling's upward bias: the plain interval misses it
    assert interval.low <= interval.estimate <= interval.high


def test_bootstrap_figures_are_seeded_and_zero_resamples_give_no_bounds():
    values = np.random.default_rng(0).random(500)
    first = bootstrap_figures(500, means={"v": values}, n_boot=200, seed=3)
    assert first == bootstrap_figures(500, means={"v": values}, n_boot=200, seed=3)
    assert first != bootstrap_figures(500, means={"v": values}, n_boot=200, seed=4)
    assert first["v"].low < values.mean() < first["v"].high
    none = bootstrap_figures(500, means={"v": values}, n_boot=0)
    assert none["v"].estimate == pytest.approx(values.mean()) and np.isnan(none["v"].low)
    with pytest.raises(ValueError, match="shape"):
        bootstrap_figures(500, means={"v": values[:10]})
