"""metrics.model_comparison: models compared on the same resampled items, checked against bootstrap_ci."""

import csv
import io
import json
import math
import re

import numpy as np
import pytest

from common.plotting import ACCENT
from evaluation.plots import model_comparison_svg
from metrics.bootstrap import bootstrap_ci, resamples
from metrics.model_comparison import ROW_KEYS, ModelComparison, compare_models, paired_p_value


def accuracy(gold, predicted):
    return float(np.mean(gold == predicted))


def mean_squared_error(gold, predicted):
    return float(np.mean((gold - predicted) ** 2))


def synthetic_labels(n_items=200, correct=(0.9, 0.6), seed=1):
    """Gold 3-way labels and one prediction array per model, right on about the given share of items."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 3, n_items)
    predictions = {}
    for index, share in enumerate(correct):
        wrong = rng.random(n_items) >= share
        predictions[f"model_{index}"] = np.where(wrong, (gold + rng.integers(1, 3, n_items)) % 3, gold)
    return gold, predictions


def accuracy_score(gold, predictions):
    return lambda model, items: {"accuracy": accuracy(gold[items], predictions[model][items])}


def test_a_model_identical_to_another_differs_by_zero_with_p_value_one():
    gold, predictions = synthetic_labels()
    predictions["copy"] = predictions["model_0"].copy()
    result = compare_models(accuracy_score(gold, predictions), ["model_0", "copy"], len(gold), {"accuracy": True})
    best, copy = result.row("accuracy", "model_0"), result.row("accuracy", "copy")
    assert best["best"] and not copy["best"]  # a tie goes to the first model
    assert (copy["difference"], copy["difference_low"], copy["difference_high"]) == (0.0, 0.0, 0.0)
    assert copy["p_value"] == 1.0
    assert (best["difference"], best["difference_low"], best["difference_high"]) == (0.0, 0.0, 0.0)
    assert math.isnan(best["p_value"])


def test_a_clearly_better_model_is_best_with_a_small_p_value_and_an_interval_excluding_zero():
    gold, predictions = synthetic_labels(200, correct=(0.6, 0.9))
    result = compare_models(accuracy_score(gold, predictions), ["model_0", "model_1"], 200, {"accuracy": True})
    worse, better = result.row("accuracy", "model_0"), result.row("accuracy", "model_1")
    assert better["best"] and not worse["best"]
    assert worse["difference"] == pytest.approx(worse["estimate"] - better["estimate"])
    assert worse["difference"] < 0 and worse["difference_high"] < 0
    assert worse["p_value"] < 0.01
    assert worse["p_value"] == pytest.approx(2 / 1001)  # no resample favoured model_0: the least p-value
    # The figures docs/metrics.md quotes.
    figures = ("estimate", "low", "high", "difference", "difference_low", "difference_high")
    assert [round(worse[key], 3) for key in figures] == [0.61, 0.54, 0.675, -0.28, -0.355, -0.21]
    assert [round(better[key], 3) for key in ("estimate", "low", "high")] == [0.89, 0.85, 0.935]


def test_intervals_equal_bootstrap_ci_of_the_same_statistic_and_seed():
    gold, predictions = synthetic_labels()
    result = compare_models(accuracy_score(gold, predictions), ["model_0", "model_1"], 200, {"accuracy": True}, seed=7)
    for model in ("model_0", "model_1"):
        reference = bootstrap_ci(accuracy, (gold, predictions[model]), seed=7)
        row = result.row("accuracy", model)
        assert (row["estimate"], row["low"], row["high"]) == tuple(reference)
    # The paired difference's interval is bootstrap_ci of the difference of the two statistics.
    difference = bootstrap_ci(
        lambda g, a, b: accuracy(g, a) - accuracy(g, b), (gold, predictions["model_1"], predictions["model_0"]), seed=7
    )
    row = result.row("accuracy", "model_1")
    assert (row["difference"], row["difference_low"], row["difference_high"]) == pytest.approx(tuple(difference))


def test_a_single_model_gets_bootstrap_ci_and_no_difference():
    gold, predictions = synthetic_labels()
    result = compare_models(accuracy_score(gold, predictions), ["model_1"], 200, {"accuracy": True}, n_boot=300)
    row = result.row("accuracy", "model_1")
    assert (row["estimate"], row["low"], row["high"]) == tuple(
        bootstrap_ci(accuracy, (gold, predictions["model_1"]), n_boot=300)
    )
    assert row["best"] and row["difference"] == 0.0


def test_lower_is_better_picks_the_smallest_estimate_and_differences_are_model_minus_best():
    rng = np.random.default_rng(3)
    gold = rng.random(150)
    outputs = {"close": gold + rng.normal(0, 0.05, 150), "far": gold + rng.normal(0, 0.3, 150)}

    def score(model, items):
        return {
            "mse": mean_squared_error(gold[items], outputs[model][items]),
            "r": float(np.corrcoef(gold[items], outputs[model][items])[0, 1]),
        }

    result = compare_models(score, ["far", "close"], 150, {"mse": False, "r": True}, n_boot=200)
    assert result.metrics == ["mse", "r"]
    assert [row["model"] for row in result.rows] == ["far", "close", "far", "close"]
    assert result.row("mse", "close")["best"] and result.row("r", "close")["best"]
    far_mse = result.row("mse", "far")
    assert far_mse["difference"] > 0 and far_mse["difference_low"] > 0 and far_mse["p_value"] < 0.01
    assert result.row("r", "far")["difference_high"] < 0


def test_resamples_where_a_metric_is_undefined_are_left_out_as_bootstrap_ci_leaves_them_out():
    values = np.random.default_rng(5).random(40)

    def statistic(items):
        # Undefined on resamples that draw item 0 twice or more.
        return math.nan if np.count_nonzero(items == 0) > 1 else float(values[items].mean())

    result = compare_models(
        lambda model, items: {"mean": statistic(items) + (0.1 if model == "shifted" else 0.0)},
        ["plain", "shifted"],
        40,
        {"mean": True},
        n_boot=400,
    )
    reference = bootstrap_ci(statistic, np.arange(40), n_boot=400)  # the statistic sees the drawn indices
    plain = result.row("mean", "plain")
    assert (plain["estimate"], plain["low"], plain["high"]) == tuple(reference)
    assert not math.isnan(plain["p_value"])
    assert plain["difference"] == pytest.approx(-0.1) and plain["p_value"] == pytest.approx(
        2 / (1 + 400 - _undefined(40, 400))
    )


def _undefined(n_items, n_boot):
    return sum(np.count_nonzero(items == 0) > 1 for items in resamples(n_items, n_boot, 0))


def test_the_same_seed_gives_the_same_comparison_and_another_seed_other_intervals():
    gold, predictions = synthetic_labels()
    score = accuracy_score(gold, predictions)
    models, directions = ["model_0", "model_1"], {"accuracy": True}
    first = compare_models(score, models, 200, directions, n_boot=200, seed=11).as_dict()
    again = compare_models(score, models, 200, directions, n_boot=200, seed=11).as_dict()
    other = compare_models(score, models, 200, directions, n_boot=200, seed=12).as_dict()
    assert first == again
    assert [row["low"] for row in first["rows"]] != [row["low"] for row in other["rows"]]


def test_as_dict_is_json_with_null_for_undefined_figures():
    gold, predictions = synthetic_labels()
    result = compare_models(
        accuracy_score(gold, predictions), ["model_0", "model_1"], 200, {"accuracy": True}, n_boot=0
    )
    data = json.loads(json.dumps(result.as_dict(), allow_nan=False))
    assert data["bootstrap"] == {"resamples": 0, "level": 0.95, "seed": 0, "unit": "item"}
    assert data["higher_is_better"] == {"accuracy": True} and data["n_items"] == 200
    assert all(row["low"] is None and row["high"] is None and row["p_value"] is None for row in data["rows"])
    assert data["rows"][0]["estimate"] == accuracy(gold, predictions["model_0"])


def test_a_metric_no_model_defines_has_no_best_model():
    result = compare_models(lambda model, items: {"r": math.nan}, ["a", "b"], 5, {"r": True}, n_boot=10)
    assert not any(row["best"] for row in result.rows)
    assert all(math.isnan(row["difference"]) for row in result.rows)


def test_paired_p_value_counts_both_sides_with_the_plus_one():
    assert paired_p_value(np.array([-1.0, -2.0, -3.0, 1.0])) == pytest.approx(2 * 2 / 5)
    assert paired_p_value(np.array([-1.0, math.nan, -3.0])) == pytest.approx(2 * 1 / 3)
    assert paired_p_value(np.zeros(9)) == 1.0
    assert math.isnan(paired_p_value(np.array([math.nan])))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"models": ["a", "b", "a"]}, "'a' is repeated"),
        ({"models": []}, "at least one model"),
        ({"n_items": 0}, "n_items must be a whole number of at least 1, got 0"),
        ({"n_items": 2.5}, "n_items must be a whole number"),
        ({"higher_is_better": {"other": True}}, "no direction for metric 'accuracy'"),
        ({"alpha": 1.0}, "alpha must be in (0, 1)"),
        ({"n_boot": -1}, "n_boot must be 0 or more"),
    ],
)
def test_bad_input_is_a_value_error_naming_it(arguments, message):
    gold, predictions = synthetic_labels()
    predictions["a"], predictions["b"] = predictions["model_0"], predictions["model_1"]
    given = {"models": ["a", "b"], "n_items": 200, "higher_is_better": {"accuracy": True}} | arguments
    with pytest.raises(ValueError, match=re.escape(message)):
        compare_models(accuracy_score(gold, predictions), given.pop("models"), given.pop("n_items"), **given)


def test_a_score_that_changes_its_metrics_is_refused_naming_the_model():
    def score(model, items):
        return {"accuracy": 1.0} if model == "a" else {"accuracy": 1.0, "f1": 1.0}

    with pytest.raises(ValueError, match="score for model 'b' returned metrics"):
        compare_models(score, ["a", "b"], 10, {"accuracy": True, "f1": True}, n_boot=5)


# ---------------------------------------------------------------- tables


@pytest.fixture
def awkward_names():
    """Two models named with Markdown's and LaTeX's special characters, on an accuracy and a loss."""
    gold, predictions = synthetic_labels(200, correct=(0.6, 0.9))
    names = {"bert_base 50% & #1": predictions["model_0"], "[roberta]_{large}~^$\\": predictions["model_1"]}

    def score(model, items):
        wrong = gold[items] != names[model][items]
        return {"accuracy": float(np.mean(~wrong)), "error_rate": float(np.mean(wrong))}

    return compare_models(score, list(names), 200, {"accuracy": True, "error_rate": False}, n_boot=300)


def test_csv_has_one_row_per_metric_and_model_in_full_precision(awkward_names):
    read = list(csv.DictReader(io.StringIO(awkward_names.to_csv())))
    assert len(read) == 4 and list(read[0]) == list(ROW_KEYS)
    for line, row in zip(read, awkward_names.rows, strict=True):
        assert (line["metric"], line["model"], line["best"]) == (row["metric"], row["model"], str(row["best"]).lower())
        for key in ("estimate", "low", "high", "difference", "difference_low", "difference_high"):
            assert float(line[key]) == row[key]
        assert line["p_value"] == ("" if row["best"] else repr(row["p_value"]))


def _markdown_cells(line):
    # Cells split on bars that are not escaped, then unescaped.
    return [re.sub(r"\\(.)", r"\1", cell).strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_markdown_tables_read_back_with_the_best_in_bold_and_the_names_unescaped(awkward_names):
    tables = [
        [_markdown_cells(line) for line in block.splitlines() if line.startswith("|")]
        for block in awkward_names.to_markdown().split("\n\n")
        if block.startswith("|")
    ]
    assert len(tables) == 2
    estimates, differences = tables
    assert estimates[0] == ["model", "accuracy (higher is better)", "error_rate (lower is better)"]
    assert [row[0] for row in estimates[2:]] == awkward_names.models == [row[0] for row in differences[2:]]
    worse, better = awkward_names.models
    accuracy_row = awkward_names.row("accuracy", better)
    assert estimates[3][1] == (
        f"**{accuracy_row['estimate']:.3f} [{accuracy_row['low']:.3f}, {accuracy_row['high']:.3f}]**"
    )
    assert not estimates[2][1].startswith("**") and not estimates[2][2].startswith("**")
    assert differences[3][1:] == ["best", "best"]
    difference = awkward_names.row("error_rate", worse)
    assert differences[2][2] == (
        f"{difference['difference']:.3f} [{difference['difference_low']:.3f}, {difference['difference_high']:.3f}], "
        f"p = {difference['p_value']:.3f}"
    )


LATEX_ESCAPES = {
    r"\textbackslash{}": "\\",
    r"\textasciitilde{}": "~",
    r"\textasciicircum{}": "^",
    "{[}": "[",
    "{]}": "]",
}


def _latex_unescape(text):
    for escaped, char in LATEX_ESCAPES.items():
        text = text.replace(escaped, char)
    return re.sub(r"\\([&%$#_{}])", r"\1", text)


def test_latex_is_a_booktabs_table_with_balanced_braces_and_escaped_names(awkward_names):
    latex = awkward_names.to_latex()
    body = re.sub(r"\\[\\{}&%$#_]", "", latex)  # escaped characters and \\ row ends taken out
    depth = 0
    for char in body:
        depth += {"{": 1, "}": -1}.get(char, 0)
        assert depth >= 0
    assert depth == 0
    lines = latex.splitlines()
    assert lines[0].startswith("% Needs \\usepackage{booktabs}") and all(
        "%" not in re.sub(r"\\%", "", line) for line in lines[1:]
    )
    order = [lines.index(marker) for marker in (r"\begin{tabular}{lcc}", r"\toprule", r"\bottomrule", r"\end{tabular}")]
    assert order == sorted(order)
    rows = [line for line in lines[order[1] + 1 : order[2]] if line.endswith(r" \\") and "multicolumn" not in line]
    cells = [re.split(r"(?<!\\)&", row.removesuffix(r" \\")) for row in rows]
    assert all(len(row) == 3 for row in cells)
    assert [_latex_unescape(row[0].strip()) for row in cells] == ["Model", *awkward_names.models, *awkward_names.models]
    assert r"bert\_base 50\% \& \#1" in latex
    assert r"{[}roberta{]}\_\{large\}\textasciitilde{}\textasciicircum{}\$\textbackslash{}" in latex
    best = awkward_names.row("accuracy", awkward_names.models[1])
    assert cells[2][1].strip() == rf"\textbf{{{best['estimate']:.3f} [{best['low']:.3f}, {best['high']:.3f}]}}"
    assert cells[3][1].strip().startswith("$-$") and "$p = " in cells[3][1] and cells[4][1].strip() == "best"


def test_tables_come_back_the_same_from_a_stored_result(awkward_names):
    stored = ModelComparison.from_dict(json.loads(json.dumps(awkward_names.as_dict(), allow_nan=False)))
    assert stored.alpha == 0.05
    assert stored.to_csv() == awkward_names.to_csv()
    assert stored.to_markdown() == awkward_names.to_markdown()
    assert stored.to_latex() == awkward_names.to_latex()


def test_tables_say_p_below_the_digits_shown_and_leave_out_undefined_intervals():
    gold, predictions = synthetic_labels(200, correct=(0.6, 0.9))
    result = compare_models(accuracy_score(gold, predictions), ["model_0", "model_1"], 200, {"accuracy": True})
    assert "p < 0.01" in result.to_markdown(digits=2) and "$p < 0.01$" in result.to_latex(digits=2)
    without = compare_models(
        accuracy_score(gold, predictions), ["model_0", "model_1"], 200, {"accuracy": True}, n_boot=0
    )
    assert f"| model_0 | {accuracy(gold, predictions['model_0']):.3f} |" in without.to_markdown().replace("\\_", "_")


# ---------------------------------------------------------------- the plot


def test_the_plot_draws_each_model_as_text_with_the_best_in_the_accent_colour():
    gold, predictions = synthetic_labels(200, correct=(0.6, 0.9))
    names = {"<b>bert</b>": "model_0", "$\\foo$ model": "model_1", "broken": None}

    def score(model, items):
        source = names[model]
        return {"accuracy": math.nan if source is None else accuracy(gold[items], predictions[source][items])}

    comparison = compare_models(score, list(names), 200, {"accuracy": True}, n_boot=100).as_dict()
    svg = model_comparison_svg(comparison, "accuracy")
    assert svg.startswith("<svg") and svg == model_comparison_svg(comparison, "accuracy")
    assert "&lt;b&gt;bert&lt;/b&gt;" in svg and "<b>" not in svg
    assert ">$\\foo$ model</text>" in svg  # a name is text: as matplotlib math it fails to draw
    assert "undefined" in svg and "accuracy (higher is better), 95 % bootstrap interval over 200 items" in svg
    assert ACCENT in svg
    with pytest.raises(ValueError, match="metric 'f1' is not in the comparison; it has accuracy"):
        model_comparison_svg(comparison, "f1")
