"""Tests for metrics.agreement, checked against the krippendorff package, sklearn and scipy."""

import json
import math
import tracemalloc
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import jensenshannon
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa

from metrics import agreement, bootstrap, pairwise

CHAOSNLI_SNLI = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "chaosnli" / "chaosNLI_snli.jsonl"
LEVELS = ["nominal", "ordinal", "interval", "ratio"]

# Krippendorff's worked example (3 coders, 15 units, values 1-4); also the krippendorff package's doctest.
NAN = np.nan
WORKED_EXAMPLE = np.array(
    [
        [NAN, NAN, NAN, NAN, NAN, 3, 4, 1, 2, 1, 1, 3, 3, NAN, 3],
        [1, NAN, 2, 1, 3, 3, 4, 3, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
        [NAN, NAN, 2, 1, 3, 4, 4, NAN, 2, 1, 1, 3, 3, NAN, 4],
    ]
)


def random_reliability_data(seed, annotators=4, units=120, scale=10, decimals=0, missing=0.3):
    rng = np.random.default_rng(seed)
    data = np.round(rng.random((annotators, units)) * scale, decimals)
    data[rng.random(data.shape) < missing] = np.nan
    data[:, 0] = np.nan  # a unit nobody labelled
    data[1:, 1] = np.nan  # a unit with a single value: not pairable
    return data


@pytest.fixture(scope="module")
def chaosnli_snli_counts():
    with CHAOSNLI_SNLI.open() as lines:
        return np.array([json.loads(line)["label_count"] for line in lines])


# ------------------------------------------------------------------ Krippendorff's alpha


def test_alpha_reproduces_the_published_worked_example():
    assert agreement.krippendorff_alpha(WORKED_EXAMPLE, level="nominal") == pytest.approx(0.691358, abs=1e-6)
    assert agreement.krippendorff_alpha(WORKED_EXAMPLE, level="interval") == pytest.approx(0.810845, abs=1e-6)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", range(4))
def test_alpha_equals_package_on_reliability_data_with_missing_values(level, seed):
    data = random_reliability_data(seed, scale=[4, 10, 100, 1][seed], decimals=[0, 0, 0, 2][seed])
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert agreement.krippendorff_alpha(data, level=level) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_equals_package_on_value_counts(level):
    counts = np.random.default_rng(7).integers(0, 4, size=(80, 5))
    counts[:3] = 0
    counts[3] = [0, 0, 1, 0, 0]  # single value: not pairable
    domain = [-2.0, -1.0, 0.5, 1.0, 3.0]
    assert agreement.krippendorff_alpha(value_counts=counts, level=level) == pytest.approx(
        krippendorff.alpha(value_counts=counts, level_of_measurement=level), abs=1e-9
    )
    assert agreement.krippendorff_alpha(value_counts=counts, level=level, value_domain=domain) == pytest.approx(
        krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement=level), abs=1e-9
    )


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_agrees_between_reliability_data_and_its_value_counts(level):
    data = random_reliability_data(3, scale=4)
    domain = np.unique(data[~np.isnan(data)])
    counts = (data.T[:, :, None] == domain).sum(axis=1)
    assert agreement.krippendorff_alpha(data, level=level) == pytest.approx(
        agreement.krippendorff_alpha(value_counts=counts, level=level, value_domain=domain), abs=1e-12
    )


def test_nominal_alpha_on_chaosnli_snli_equals_package(chaosnli_snli_counts):
    expected = krippendorff.alpha(value_counts=chaosnli_snli_counts, level_of_measurement="nominal")
    assert agreement.krippendorff_alpha(value_counts=chaosnli_snli_counts, level="nominal") == pytest.approx(
        expected, abs=1e-9
    )


def test_ordinal_alpha_on_chaosnli_snli_equals_package(chaosnli_snli_counts):
    expected = krippendorff.alpha(value_counts=chaosnli_snli_counts, level_of_measurement="ordinal")
    assert agreement.krippendorff_alpha(value_counts=chaosnli_snli_counts, level="ordinal") == pytest.approx(
        expected, abs=1e-9
    )


def test_single_value_units_do_not_change_alpha():
    with_singles = np.column_stack([WORKED_EXAMPLE, [5.0, NAN, NAN], [NAN, 0.0, NAN]])
    for level in LEVELS:
        assert agreement.krippendorff_alpha(with_singles, level=level) == pytest.approx(
            agreement.krippendorff_alpha(WORKED_EXAMPLE, level=level), abs=1e-12
        )


def test_perfect_agreement_gives_one_and_undefined_variation_gives_nan():
    assert agreement.krippendorff_alpha([[1, 2, 3, 2], [1, 2, 3, 2]], level="interval") == pytest.approx(1.0)
    assert math.isnan(agreement.krippendorff_alpha([[1, 1, 2], [1, 1, NAN]], level="nominal"))


def test_interval_alpha_on_continuous_values_does_not_build_a_values_squared_array():
    data = np.random.default_rng(0).random((3, 20_000))  # 60,000 distinct values
    tracemalloc.start()
    value = agreement.krippendorff_alpha(data, level="interval")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert abs(value) < 0.05  # independent uniform values: no agreement
    assert peak < 30e6  # a (values x values) float array would need 28.8 GB


def test_alpha_rejects_bad_input():
    with pytest.raises(ValueError, match="exactly one"):
        agreement.krippendorff_alpha()
    with pytest.raises(ValueError, match="level"):
        agreement.krippendorff_alpha(WORKED_EXAMPLE, level="cardinal")
    with pytest.raises(ValueError, match="two or more"):
        agreement.krippendorff_alpha([[1, NAN], [NAN, 2]], level="nominal")
    with pytest.raises(ValueError, match="whole numbers"):
        agreement.krippendorff_alpha(value_counts=[[1, -1], [2, 0]], level="nominal")
    with pytest.raises(ValueError, match="annotators, units"):
        agreement.krippendorff_alpha([1, 2, 3], level="nominal")


# ------------------------------------------------------------------ pairwise statistics


def pairs_on_shared_units(data):
    for a in range(len(data)):
        for b in range(a + 1, len(data)):
            both = ~np.isnan(data[a]) & ~np.isnan(data[b])
            yield data[a, both], data[b, both]


def test_cohen_kappa_pairwise_equals_mean_of_sklearn_kappas():
    data = random_reliability_data(11, annotators=5, scale=2.6)
    expected = np.mean([cohen_kappa_score(a, b) for a, b in pairs_on_shared_units(data)])
    assert pairwise.cohen_kappa_pairwise(data) == pytest.approx(expected, abs=1e-12)


def test_cohen_kappa_pairwise_skips_pairs_where_kappa_is_undefined():
    data = np.array([[1, 1, 1, 1], [1, 1, 1, 1], [1, 2, 1, 2]], dtype=float)
    # Only pairs with annotator 2 are defined; both have kappa 0 (no agreement beyond chance).
    assert pairwise.cohen_kappa_pairwise(data) == pytest.approx(0.0)
    assert pairwise.cohen_kappa_pairwise([[0, 1, 0, 1], [0, 1, 0, 1]]) == pytest.approx(1.0)


def test_kendall_and_correlations_equal_mean_of_scipy_statistics():
    data = random_reliability_data(12, annotators=4, scale=4)
    pairs = list(pairs_on_shared_units(data))
    assert pairwise.kendall_tau_pairwise(data) == pytest.approx(
        np.mean([stats.kendalltau(a, b).statistic for a, b in pairs])
    )
    result = pairwise.pearson_spearman_pairwise(data)
    assert result.pairs == 6
    assert result.pearson == pytest.approx(np.mean([stats.pearsonr(a, b).statistic for a, b in pairs]))
    assert result.spearman == pytest.approx(np.mean([stats.spearmanr(a, b).statistic for a, b in pairs]))


def test_pairwise_statistics_skip_pairs_with_too_few_shared_units():
    data = np.array([[1, 2, 3, NAN, NAN], [1, 2, 3, NAN, NAN], [NAN, NAN, 1, 2, 3]])
    assert pairwise.kendall_tau_pairwise(data) == pytest.approx(1.0)  # only annotators 0 and 1 share 2+ units
    assert math.isnan(pairwise.kendall_tau_pairwise(data, min_shared_units=4))


# ------------------------------------------------------------------ human baselines


def slow_human_baseline(data, aggregate, seed):
    """Loop version drawing the held-out positions from the same generator as agreement.human_baseline."""
    columns = [column[~np.isnan(column)] for column in data.T]
    columns = [column for column in columns if len(column) >= 2]
    rng = np.random.default_rng(seed)
    held_positions = rng.integers(0, [len(column) for column in columns])
    held, reference = [], []
    for column, position in zip(columns, held_positions):
        held.append(column[position])
        rest = np.delete(column, position)
        reference.append(np.median(rest) if aggregate == "median" else np.mean(rest))
    held, reference = np.array(held), np.array(reference)
    return (
        stats.pearsonr(reference, held).statistic,
        stats.spearmanr(reference, held).statistic,
        np.mean((held - reference) ** 2),
        len(columns),
    )


@pytest.mark.parametrize("aggregate", ["median", "mean"])
def test_human_baseline_matches_loop_version(aggregate):
    data = random_reliability_data(21, annotators=6, units=300, scale=1, decimals=3, missing=0.4)
    result = agreement.human_baseline(data, aggregate=aggregate, seed=5)
    pearson, spearman, mse, units = slow_human_baseline(data, aggregate, seed=5)
    assert result["units"] == units == np.sum((~np.isnan(data)).sum(axis=0) >= 2)
    assert result["pearson"] == pytest.approx(pearson, abs=1e-12)
    assert result["spearman"] == pytest.approx(spearman, abs=1e-12)
    assert result["mse"] == pytest.approx(mse, abs=1e-12)


def test_human_baseline_with_two_values_per_unit_scores_mse_of_the_pair():
    data = np.array([[0.1, 0.5, 0.9, 0.3], [0.2, 0.5, 0.6, NAN]])
    result = agreement.human_baseline(data, aggregate="median", seed=0)
    assert result["units"] == 3
    assert result["mse"] == pytest.approx(np.mean([0.1**2, 0.0, 0.3**2]))


def test_human_baseline_majority_uses_the_most_frequent_other_value():
    # Whatever is held out, the other four values have 2 (unit 0) and 0 (unit 1) as unique majority.
    data = np.array([[2, 0], [2, 0], [2, 0], [1, 3], [0, 1]], dtype=float)
    for seed in range(5):
        held_positions = np.random.default_rng(seed).integers(0, [5, 5])
        held = data[held_positions, [0, 1]]
        result = agreement.human_baseline(data, aggregate="majority", seed=seed)
        assert result["units"] == 2
        assert result["mse"] == pytest.approx(np.mean((held - [2, 0]) ** 2))
    ties = np.array([[1.0], [2.0], [1.0], [2.0], [3.0]])  # holding out 3 leaves a 1-2 tie
    references = set()
    for seed in range(40):
        result = agreement.human_baseline(ties, aggregate="majority", seed=seed)
        references.add(round(result["mse"], 9))
    # Held-out 3 -> reference 1 or 2 (mse 4 or 1); held-out 1 -> reference 2 (mse 1); held-out 2 -> 1 (mse 1).
    assert references == {1.0, 4.0}


def test_human_baseline_rejects_unknown_aggregate():
    with pytest.raises(ValueError, match="aggregate"):
        agreement.human_baseline(WORKED_EXAMPLE, aggregate="mode")


# ------------------------------------------------------------------ Fleiss' kappa and per-item agreement


def test_fleiss_kappa_equals_statsmodels():
    rng = np.random.default_rng(11)
    # 60 units, 7 raters each, 4 categories with uneven base rates.
    table = np.array([rng.multinomial(7, [0.5, 0.3, 0.15, 0.05]) for _ in range(60)])
    assert agreement.fleiss_kappa(table) == pytest.approx(statsmodels_fleiss_kappa(table, method="fleiss"), abs=1e-12)
    # Fleiss' own example (1971, Table 1 as reproduced on Wikipedia): 10 units, 14 raters, kappa 0.210.
    wikipedia = np.array(
        [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ]
    )
    assert agreement.fleiss_kappa(wikipedia) == pytest.approx(0.20993, abs=1e-5)
    assert agreement.fleiss_kappa(wikipedia) == pytest.approx(statsmodels_fleiss_kappa(wikipedia), abs=1e-12)


def test_fleiss_kappa_on_chaosnli_snli_equals_statsmodels(chaosnli_snli_counts):
    assert agreement.fleiss_kappa(chaosnli_snli_counts) == pytest.approx(
        statsmodels_fleiss_kappa(chaosnli_snli_counts), abs=1e-12
    )


def test_fleiss_kappa_needs_the_same_number_of_raters_per_unit():
    with pytest.raises(ValueError, match="same number"):
        agreement.fleiss_kappa([[2, 1], [1, 1]])
    with pytest.raises(ValueError, match="same number"):
        agreement.fleiss_kappa([[1, 0], [0, 1]])
    assert math.isnan(agreement.fleiss_kappa([[3, 0], [3, 0]]))


def test_item_pair_agreement_and_mean_abs_difference():
    np.testing.assert_allclose(
        agreement.item_pair_agreement([[3, 0, 0], [1, 1, 0], [0, 0, 1], [2, 1, 1]]), [1, 0, 1 / 6]
    )
    values = np.array([[0.1, 0.5, NAN], [0.3, NAN, 1.0], [0.6, NAN, NAN]])
    np.testing.assert_allclose(agreement.item_mean_abs_difference(values), [(0.2 + 0.5 + 0.3) / 3])


# ------------------------------------------------------------------ split-half JSD


def test_split_half_jsd_squared_is_the_mean_divergence_of_the_same_split(chaosnli_snli_counts):
    first, second = agreement.split_half_counts(chaosnli_snli_counts, seed=4)
    distances = jensenshannon(first / first.sum(1, keepdims=True), second / second.sum(1, keepdims=True), axis=1)
    assert agreement.split_half_jsd(chaosnli_snli_counts, seed=4) == pytest.approx(distances.mean(), abs=1e-12)
    assert agreement.split_half_jsd(chaosnli_snli_counts, seed=4, squared=True) == pytest.approx(
        np.mean(distances**2), abs=1e-12
    )


def test_split_half_jsd_on_hand_made_units():
    assert agreement.split_half_jsd([[10, 0, 0], [0, 4, 0]]) == 0.0
    # Two annotators who disagree: the halves are one-hot on different labels.
    assert agreement.split_half_jsd([[1, 1, 0]]) == pytest.approx(math.sqrt(math.log(2)))
    # A unit with one annotator is skipped.
    assert agreement.split_half_jsd([[1, 1, 0], [0, 0, 1]]) == pytest.approx(math.sqrt(math.log(2)))


def test_split_half_jsd_matches_permutation_splits_on_chaosnli(chaosnli_snli_counts):
    rng = np.random.default_rng(99)
    distances = []
    for counts in chaosnli_snli_counts:
        labels = rng.permutation(np.repeat(np.arange(3), counts))
        half = len(labels) // 2
        first = np.bincount(labels[:half], minlength=3) / half
        second = np.bincount(labels[half:], minlength=3) / (len(labels) - half)
        distances.append(jensenshannon(first, second))
    value = agreement.split_half_jsd(chaosnli_snli_counts, seed=0)
    assert value == pytest.approx(np.mean(distances), abs=0.006)  # about 4 Monte Carlo standard errors
    assert agreement.split_half_jsd(chaosnli_snli_counts, seed=0) == value


# ------------------------------------------------------------------ bootstrap and pivoting


def test_bootstrap_ci_of_a_mean_has_the_normal_theory_width():
    sample = np.random.default_rng(1).normal(size=400)
    interval = bootstrap.bootstrap_ci(np.mean, sample, n_boot=2000, seed=3)
    assert interval.estimate == pytest.approx(sample.mean())
    assert interval.low < interval.estimate < interval.high
    normal_width = 2 * 1.96 * sample.std(ddof=1) / math.sqrt(len(sample))
    assert interval.high - interval.low == pytest.approx(normal_width, rel=0.1)
    assert bootstrap.bootstrap_ci(np.mean, sample, n_boot=2000, seed=3) == interval


def test_bootstrap_ci_resamples_paired_arrays_and_reliability_units_together():
    y = np.linspace(0, 1, 50)
    interval = bootstrap.bootstrap_ci(lambda a, b: np.mean((a - b) ** 2), (y, y), n_boot=200)
    assert interval == (0.0, 0.0, 0.0)  # pairs stay aligned, so every resample has zero error
    agreeing = np.tile(np.arange(30.0) % 4, (3, 1))
    interval = bootstrap.bootstrap_ci(
        lambda d: agreement.krippendorff_alpha(d, level="nominal"), agreeing, n_boot=100, axis=1
    )
    assert interval == pytest.approx((1.0, 1.0, 1.0))


def test_reliability_matrix_pivots_long_rows():
    rows = [("i1", "w1", 0.2), ("i1", "w2", 0.4), ("i2", "w2", "0.9"), ("i3", "w3", 1)]
    matrix = agreement.reliability_matrix(rows)
    assert list(matrix.index) == ["w1", "w2", "w3"]
    assert list(matrix.columns) == ["i1", "i2", "i3"]
    np.testing.assert_array_equal(matrix.to_numpy(), [[0.2, NAN, NAN], [0.4, 0.9, NAN], [NAN, NAN, 1.0]])
    labels = agreement.reliability_matrix([("i1", "w1", "n"), ("i1", "w2", "c")], categories=["e", "n", "c"])
    np.testing.assert_array_equal(labels.to_numpy(), [[1.0], [2.0]])


def test_reliability_matrix_names_the_bad_row():
    with pytest.raises(ValueError, match="row 2: worker 'w1' already annotated item 'i1'"):
        agreement.reliability_matrix([("i1", "w1", 1), ("i2", "w1", 1), ("i1", "w1", 2)])
    with pytest.raises(ValueError, match="row 2: worker 'w1' already annotated item 'i2'"):  # the first repeat
        agreement.reliability_matrix([("i1", "w2", 1), ("i2", "w1", 1), ("i2", "w1", 2), ("i1", "w2", 3)])
    with pytest.raises(ValueError, match="row 1: value 'x' is not one of"):
        agreement.reliability_matrix([("i1", "w1", "e"), ("i1", "w2", "x")], categories=["e", "n", "c"])
    with pytest.raises(ValueError, match="row 0: value 'high' is not a number"):
        agreement.reliability_matrix([("i1", "w1", "high")])


def test_annotator_pairs_from_long_rows_hold_each_pairs_shared_values_by_unit():
    rng = np.random.default_rng(3)
    matrix = np.where(rng.random((7, 300)) < 0.4, rng.integers(0, 3, (7, 300)).astype(float), np.nan)
    annotators, units = np.nonzero(~np.isnan(matrix))
    shuffle = rng.permutation(len(units))  # rows in any order
    pairs = pairwise.annotator_pairs(units[shuffle], annotators[shuffle], matrix[annotators, units][shuffle], 2)
    present = (~np.isnan(matrix)).astype(int)
    shared = present @ present.T
    expected = [(a, b) for a in range(7) for b in range(a + 1, 7) if shared[a, b] >= 2]
    assert [tuple(pair) for pair in pairs.pairs] == expected
    for index, (a, b) in enumerate(pairs.pairs):
        rows = slice(pairs.bounds[index], pairs.bounds[index + 1])
        first, second = pairs.first[rows], pairs.second[rows]
        both = np.flatnonzero(~np.isnan(matrix[a]) & ~np.isnan(matrix[b]))
        assert (pairs.units[second] == pairs.units[first]).all()
        assert sorted(zip(pairs.units[first], pairs.values[first], pairs.values[second])) == list(
            zip(both, matrix[a, both], matrix[b, both])
        )
        assert (np.diff(pairs.units[first]) > 0).all()  # by unit
        assert pairs.centres[index] == pytest.approx([matrix[a, both].mean(), matrix[b, both].mean()])


@pytest.mark.parametrize("statistic", ["cohen_kappa", "kendall_tau", "pearson", "spearman"])
def test_pair_statistics_do_not_depend_on_where_blocks_split_pairs(monkeypatch, statistic):
    data = random_reliability_data(32, annotators=5, units=300, scale=3, missing=0.2)
    annotators, units = np.nonzero(~np.isnan(data))
    counts = np.bincount(np.random.default_rng(2).integers(0, 300, 300), minlength=300)
    whole = [
        pairwise.pair_statistics(pairwise.annotator_pairs(units, annotators, data[annotators, units]), statistic, c)
        for c in (None, counts)
    ]
    monkeypatch.setattr(pairwise, "BLOCK_ROWS", 7)  # every pair (about 190 shared values) split many times
    monkeypatch.setattr(pairwise, "ANNOTATOR_BLOCK", 2)  # the shared counts of 5 annotators in 3 products
    pairs = pairwise.annotator_pairs(units, annotators, data[annotators, units])
    assert [tuple(pair) for pair in pairs.pairs] == [(a, b) for a in range(5) for b in range(a + 1, 5)]
    for scores, c in zip(whole, (None, counts)):
        assert pairwise.pair_statistics(pairs, statistic, c) == pytest.approx(scores, abs=1e-12, nan_ok=True)


def test_pair_statistics_of_resample_counts_equal_those_of_the_resampled_matrix():
    data = random_reliability_data(21, annotators=5, units=60, scale=4)
    annotators, units = np.nonzero(~np.isnan(data))
    pairs = pairwise.annotator_pairs(units, annotators, data[annotators, units])
    sample = np.random.default_rng(5).integers(0, 60, 60)
    counts = np.bincount(sample, minlength=60)
    resampled = data[:, sample]
    assert pairwise.mean_pair_statistic(pairs, "kendall_tau", counts) == pytest.approx(
        pairwise.kendall_tau_pairwise(resampled), abs=1e-12
    )
    assert pairwise.mean_pair_statistic(pairs, "pearson", counts) == pytest.approx(
        pairwise.pearson_spearman_pairwise(resampled).pearson, abs=1e-12
    )


@pytest.mark.parametrize("scale, decimals", [(2, 0), (4, 0), (1, 3)])
def test_each_pair_statistic_equals_scipy_on_the_resampled_values(scale, decimals):
    """Per pair and per resample, ties and pairs left constant by the draw included: sklearn's kappa, scipy's
    tau-b, r and rho on the pair's values repeated as often as their unit was drawn."""
    data = random_reliability_data(31, annotators=6, units=40, scale=scale, decimals=decimals, missing=0.6)
    annotators, units = np.nonzero(~np.isnan(data))
    pairs = pairwise.annotator_pairs(units, annotators, data[annotators, units])
    references = {
        "kendall_tau": lambda a, b: stats.kendalltau(a, b).statistic,
        "pearson": lambda a, b: stats.pearsonr(a, b).statistic,
        "spearman": lambda a, b: stats.spearmanr(a, b).statistic,
    }
    if decimals == 0:
        references["cohen_kappa"] = cohen_kappa_score
    rng = np.random.default_rng(7)
    checked = constant = 0
    for counts in [None, *(np.bincount(rng.integers(0, 40, 40), minlength=40) for _ in range(20))]:
        for name, reference in references.items():
            scores = pairwise.pair_statistics(pairs, name, counts)
            for index, (a, b) in enumerate(pairs.pairs):
                both = np.flatnonzero(~np.isnan(data[a]) & ~np.isnan(data[b]))
                times = np.ones(len(both), dtype=int) if counts is None else counts[both]
                values_a, values_b = np.repeat(data[a, both], times), np.repeat(data[b, both], times)
                if len(values_a) < 2:
                    assert np.isnan(scores[index])  # fewer than min_shared_units drawn
                elif name != "cohen_kappa" and (np.ptp(values_a) == 0 or np.ptp(values_b) == 0):
                    assert np.isnan(scores[index])  # one side constant: no correlation
                    constant += 1
                elif name == "cohen_kappa" and (values_a == values_a[0]).all() and (values_b == values_a[0]).all():
                    assert np.isnan(scores[index])  # chance agreement 1
                    constant += 1
                else:
                    assert scores[index] == pytest.approx(reference(values_a, values_b), abs=1e-12), (name, index)
                    checked += 1
    assert checked > 500 and constant > 0


def test_interval_alpha_of_counts_gives_the_intervals_of_resampled_copies():
    data = random_reliability_data(23, annotators=5, units=90, scale=1, decimals=4, missing=0.3)
    data = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    alpha = agreement.interval_alpha_of_counts(data)
    assert alpha(np.ones(data.shape[1])) == pytest.approx(
        agreement.krippendorff_alpha(reliability_data=data, level="interval"), abs=1e-12
    )
    by_copies = bootstrap.bootstrap_ci(
        lambda values: agreement.krippendorff_alpha(reliability_data=values, level="interval"),
        data,
        n_boot=300,
        seed=6,
        axis=1,
    )
    assert bootstrap.bootstrap_ci_of_counts(alpha, data.shape[1], n_boot=300, seed=6) == pytest.approx(
        by_copies, abs=1e-12
    )
    with pytest.raises(ValueError, match="two or more values"):
        agreement.interval_alpha_of_counts(random_reliability_data(23))  # holds units with fewer


def test_annotator_pairs_refuse_two_rows_for_one_annotator_and_unit():
    with pytest.raises(ValueError, match="row 1: worker 0 already annotated item 0"):
        pairwise.annotator_pairs([0, 0, 1, 0, 1], [0, 0, 0, 1, 1], [1.0, 2.0, 3.0, 4.0, 5.0])


@pytest.mark.parametrize("statistic", ["cohen_kappa", "kendall_tau", "pearson", "spearman"])
def test_pair_statistics_without_shared_values(statistic):
    for units, annotators in (([], []), ([0, 1], [0, 1])):  # no answers; two annotators sharing nothing
        pairs = pairwise.annotator_pairs(units, annotators, np.ones(len(units)))
        assert pairwise.pair_statistics(pairs, statistic).shape == (0,)
        assert math.isnan(pairwise.mean_pair_statistic(pairs, statistic))


def test_bootstrap_ci_of_counts_draws_the_resamples_of_bootstrap_ci():
    data = random_reliability_data(22, annotators=4, units=80, scale=3)
    annotators, units = np.nonzero(~np.isnan(data))
    pairs = pairwise.annotator_pairs(units, annotators, data[annotators, units])
    by_copies = bootstrap.bootstrap_ci(pairwise.kendall_tau_pairwise, data, n_boot=200, seed=4, axis=1)
    by_counts = bootstrap.bootstrap_ci_of_counts(
        lambda counts: pairwise.mean_pair_statistic(pairs, "kendall_tau", counts), 80, n_boot=200, seed=4
    )
    assert by_counts == pytest.approx(by_copies, abs=1e-12)
