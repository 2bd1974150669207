"""Plots for the agreement report and the evaluation pages, returned as SVG text to embed in a page.

Pure functions over arrays / DataFrames. Figures are built with matplotlib.figure.Figure, never pyplot,
so no GUI backend or global figure state is involved (safe in a web server); text is written as SVG <text>
elements, which matplotlib escapes.
"""
from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

NLI_ORDER = ("entailment", "neutral", "contradiction")
UPDATE_COLOURS = {"weakener": "#b42318", "strengthener": "#1d7a45"}
OTHER_COLOUR = "#5b6575"
ACCENT = "#2454c5"


def _svg(figure: Figure) -> str:
    """The figure as an <svg> element (the XML prologue dropped, so it can sit inside HTML)."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def slider_by_label_svg(probabilities: Sequence[float], labels: Sequence[str]) -> str:
    """Box plot of slider probabilities per NLI label (as U-SNLI's Figure 5 shows its categories).

    probabilities: (n,) item probabilities in [0, 1]; labels: (n,) the item's NLI label as a long name
    (entailment, neutral, contradiction); items with another label are left out. The box
    spans the quartiles with the median marked; whiskers reach the 2nd and 98th percentiles (96% of items).
    """
    frame = pd.DataFrame({"p": np.asarray(probabilities, dtype=float), "name": list(labels)})
    present = [name for name in NLI_ORDER if (frame["name"] == name).any()]
    groups = [frame.loc[frame["name"] == name, "p"].to_numpy() for name in present]

    figure = Figure(figsize=(6, 3.6))
    axes = figure.add_subplot()
    axes.boxplot(
        groups,
        whis=(2, 98),
        showfliers=False,
        patch_artist=True,
        boxprops={"facecolor": "#dbe4f8", "edgecolor": ACCENT},
        medianprops={"color": ACCENT, "linewidth": 2},
        whiskerprops={"color": ACCENT},
        capprops={"color": ACCENT},
    )
    axes.set_xticks(range(1, len(present) + 1), [f"{name}\n(n={len(group)})" for name, group in zip(present, groups)])
    axes.set_ylim(-0.02, 1.02)
    axes.set_ylabel("probability (item label)")
    axes.set_title("Slider probability by NLI label")
    axes.grid(axis="y", alpha=0.3)
    return _svg(figure)


def atom_effect_strips_svg(frame: pd.DataFrame, max_examples: int = 120) -> str:
    """One row per example with a dot at each effect (-2..+2) its atoms were given.

    frame: one row per atom with columns `example` (any id), `effect` (-2..+2) and `update_type`
    ("weakener" / "strengthener" / other). Dot area grows with the number of the example's atoms at that
    effect; colour is the example's update type. Rows are ordered by the share of weakening atom labels
    (as the atomic-decomposition paper's Figure 2 orders its slices); with more than `max_examples`
    examples an evenly spaced subset of that order is drawn.
    """
    atoms = frame[["example", "effect", "update_type"]].copy()
    atoms["weakening"] = atoms["effect"] < 0
    order = (
        atoms.groupby("example", sort=False)
        .agg(weakening=("weakening", "mean"), mean_effect=("effect", "mean"), update_type=("update_type", "first"))
        .sort_values(["weakening", "mean_effect"], ascending=[True, False])
    )
    shown = order.iloc[np.unique(np.linspace(0, len(order) - 1, min(len(order), max_examples)).round().astype(int))]
    row_of = pd.Series(np.arange(len(shown)), index=shown.index)
    cells = (
        atoms[atoms["example"].isin(shown.index)]
        .groupby(["example", "effect"], sort=False)
        .size()
        .rename("atoms")
        .reset_index()
    )
    cells["row"] = row_of.loc[cells["example"]].to_numpy()
    cells["update_type"] = shown.loc[cells["example"], "update_type"].to_numpy()

    figure = Figure(figsize=(6, min(8.0, 1.6 + 0.06 * len(shown))))
    axes = figure.add_subplot()
    for update_type, group in cells.groupby("update_type", sort=True):
        colour = UPDATE_COLOURS.get(update_type, OTHER_COLOUR)
        label = update_type if update_type in UPDATE_COLOURS else "other"
        axes.scatter(
            group["effect"], group["row"], s=12 * group["atoms"], color=colour, alpha=0.75, label=label, linewidths=0
        )
    axes.set_xticks(range(-2, 3), ["-2\nstrongly\nweakens", "-1", "0\nno effect", "+1", "+2\nstrongly\nstrengthens"])
    axes.set_xlim(-2.6, 2.6)
    axes.set_ylim(len(shown) - 0.5, -0.5)
    axes.set_yticks([])
    axes.set_ylabel(f"examples ({len(shown)} of {len(order)})")
    axes.set_title("Atom effects per example")
    axes.grid(axis="x", alpha=0.3)
    axes.legend(title="update", loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False)
    return _svg(figure)


def agreement_histogram_svg(
    values: Sequence[float], xlabel: str, value_range: tuple[float, float] | None = None, bins: int = 20
) -> str:
    """Histogram of a per-item agreement figure (share of agreeing pairs, or mean absolute difference).

    values: (items,) one figure per item; xlabel: what it measures; value_range: the x range of the bins
    (default: the data's range).
    """
    values = np.asarray(values, dtype=float)
    figure = Figure(figsize=(6, 3.2))
    axes = figure.add_subplot()
    axes.hist(values, bins=bins, range=value_range, color=ACCENT, edgecolor="white")
    axes.axvline(float(np.mean(values)), color="#f5a623", linewidth=2, label=f"mean {np.mean(values):.3f}")
    axes.set_xlabel(xlabel)
    axes.set_ylabel("items")
    axes.set_title(f"Agreement per item ({len(values)} items)")
    axes.legend(fontsize="small")
    return _svg(figure)


def _bin_edges(entry: Mapping) -> tuple[float, float]:
    if "entropy_range" in entry:
        low, high = entry["entropy_range"]
        return float(low), float(high)
    return float(entry["entropy_low"]), float(entry["entropy_high"])


def accuracy_by_entropy_svg(
    bins: Sequence[Mapping] | Mapping[str, Sequence[Mapping]], accuracy_key: str = "accuracy"
) -> str:
    """Accuracy in bins of human label entropy (as ChaosNLI-style analyses plot it).

    bins: one model's bins, or {model name: bins} to compare models on the same bins. Each bin is a
    mapping with "entropy_low" and "entropy_high" (or the chaos suite's "entropy_range": [low, high]) and
    the accuracy under `accuracy_key` (the chaos suite's bins: "majority_acc" or "old_acc"); a bin whose
    accuracy is None (no items) is drawn as a gap.
    """
    series = dict(bins) if isinstance(bins, Mapping) else {"": bins}
    first = next(iter(series.values()))
    edges = [_bin_edges(entry) for entry in first]

    figure = Figure(figsize=(6, 3.4))
    axes = figure.add_subplot()
    positions = np.arange(len(edges))
    for name, entries in series.items():
        accuracy = [np.nan if entry.get(accuracy_key) is None else float(entry[accuracy_key]) for entry in entries]
        axes.plot(positions[: len(accuracy)], accuracy, marker="o", label=name or None)
    axes.set_xticks(positions, [f"{low:.2f}–{high:.2f}" for low, high in edges])
    axes.set_ylim(0, 1.02)
    axes.set_xlabel("human label entropy (bin)")
    axes.set_ylabel("accuracy")
    axes.set_title("Accuracy by human entropy")
    axes.grid(axis="y", alpha=0.3)
    if any(series):
        axes.legend(fontsize="small")
    return _svg(figure)

