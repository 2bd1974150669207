"""Plots of evaluation results as inline SVG, drawn on matplotlib Figure objects (no pyplot global state)."""

from matplotlib import rc_context
from matplotlib.figure import Figure

from common.plotting import ACCENT, figure_svg


def entropy_bins_svg(bins: list[dict], jsd_measure: str = "distance") -> str:
    """Accuracy (majority and original label) and JSD per human-entropy bin, as an <svg> element.

    bins: the `bins` list of a chaos result, each with entropy_range [low, high], majority_acc, old_acc, jsd.
    """
    labels = [f"{b['entropy_range'][0]:.2f}–{b['entropy_range'][1]:.2f}\n(n={b['n']})" for b in bins]
    x = range(len(bins))
    with rc_context({"font.size": 9}):
        figure = Figure(figsize=(7, 3.4))
        axes = figure.add_subplot()
        for key, label, marker in (
            ("majority_acc", "accuracy vs majority label", "o"),
            ("old_acc", "accuracy vs original label", "s"),
            ("jsd", f"JS {jsd_measure} to humans", "^"),
        ):
            axes.plot(x, [_number(b.get(key)) for b in bins], marker=marker, label=label)
        axes.set_xticks(list(x), labels)
        axes.set_xlabel("human label entropy (bits), quantile bins")
        axes.set_ylim(0, 1)
        axes.grid(axis="y", alpha=0.3)
        axes.legend(loc="best", frameon=False)
        return figure_svg(figure)


def model_comparison_svg(comparison: dict, metric: str) -> str:
    """One metric of a model comparison as an <svg> element: each model's estimate with its bootstrap
    interval, one row per model, the best model's in the accent colour and a dashed line at its estimate.

    comparison: `metrics.model_comparison.ModelComparison.as_dict()` (undefined figures are null).
    """
    rows = [row for row in comparison["rows"] if row["metric"] == metric]
    if not rows:
        raise ValueError(f"metric {metric!r} is not in the comparison; it has {', '.join(comparison['metrics'])}")
    direction = "higher is better" if comparison["higher_is_better"][metric] else "lower is better"
    level = 100 * comparison["bootstrap"]["level"]
    # Model names are the author's text: "$" in one must not start matplotlib's math mode.
    with rc_context({"font.size": 9, "text.parse_math": False}):
        # A row per model: the figure grows with the models so that their names never overlap.
        figure = Figure(figsize=(6, 0.9 + 0.4 * len(rows)))
        axes = figure.add_subplot()
        for y, row in enumerate(rows):
            colour = ACCENT if row["best"] else "#555555"
            if row["estimate"] is None:
                axes.text(0.01, y, "undefined", transform=axes.get_yaxis_transform(), va="center", color=colour)
                continue
            axes.hlines(y, _number(row["low"]), _number(row["high"]), color=colour, linewidth=2)
            axes.plot(_number(row["estimate"]), y, marker="o", color=colour)
            if row["best"]:
                axes.axvline(row["estimate"], color=ACCENT, linestyle="--", linewidth=0.8, alpha=0.6)
        axes.set_yticks(range(len(rows)), [row["model"] for row in rows])
        axes.set_ylim(len(rows) - 0.5, -0.5)  # the first model on top, as in the table
        axes.set_xlabel(f"{metric} ({direction}), {level:g} % bootstrap interval over {comparison['n_items']} items")
        axes.grid(axis="x", alpha=0.3)
        return figure_svg(figure)


def _number(value):
    # Undefined metrics (null in JSON) leave a gap in the line.
    return float("nan") if value is None else value
