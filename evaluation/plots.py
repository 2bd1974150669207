"""Plots of evaluation results as inline SVG, drawn on matplotlib Figure objects (no pyplot global state)."""

from matplotlib import rc_context
from matplotlib.figure import Figure

from common.plotting import figure_svg


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


def _number(value):
    # Undefined metrics (null in JSON) leave a gap in the line.
    return float("nan") if value is None else value
