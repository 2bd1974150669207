"""Defeasible atom effect: how does the update U change the likelihood of atom a given P? (-2..+2)"""

from annotation.tasktypes.base import DemoProject, OrdinalTaskType
from annotation.tasktypes.demo_text import atom_example_rows, atom_rows, worked_examples
from common.vocabulary import UPDATE

EFFECT_LABELS = {
    -2: "Strongly weakens",
    -1: "Weakens",
    0: "No effect",
    1: "Strengthens",
    2: "Strongly strengthens",
}


class DefeasibleAtom(OrdinalTaskType):
    name = "defeasible_atom"
    label = "Defeasible atom effect (-2..+2)"
    rated = "effects"
    per_atom = True
    default_items_per_page = 5
    uses_updates = True
    answer_help = "the effect of the update on the atom, a whole number from -2 to 2"
    atom_reference_field = "effect"
    # The scale's names follow it on the page (the template lists them).
    guidance = (
        "Each item shows a premise, an **update** (new information) and an **atom** (one fact from the "
        "hypothesis, shown for context). Say how the update changes how likely the atom is, given the premise."
    )
    guidance_adjustable = True

    def example_labels(self, options):
        return UPDATE.labels  # an example's label is its update's type

    def gold_reference(self, example, atom, options):
        return atom.effect if atom is not None else None

    def scale(self, options):
        return EFFECT_LABELS

    def choice_name(self, value, name):
        return f"{value:+d} {name}"

    def disagree(self, raws, values, options):
        # Two or more steps apart, as on any rating scale, or on opposite sides of "no effect".
        return super().disagree(raws, values, options) or (min(values) < 0 < max(values))

    def simulated_answer(self, item, worker_number, rng, options):
        """The atom's gold effect, one step off now and then; a random effect where it has none."""
        effect = item.atom.effect if item.atom is not None and item.atom.effect is not None else rng.randint(-2, 2)
        return max(-2, min(2, effect + rng.choice((0, 0, 0, -1, 1))))

    def report_plot(self, settled):
        import pandas as pd

        frame = pd.DataFrame(
            [(example, value, update_type) for example, _, update_type, value in settled],
            columns=["example", "effect", "update_type"],
        )
        plot = {"title": "Atom effects per example", "svg": None, "empty": None}
        if frame.empty:
            plot["empty"] = "No atom has a settled effect yet."
        else:
            plot["svg"] = atom_effect_strips_svg(frame)
        return plot

    def demo(self):
        return DemoProject(
            "demo-defeasible",
            "Demo: how does the update change the atom?",
            "Rate the effect of the update on each atom from -2 to +2.",
            worked_examples("demo-defeasible"),
            [("jsonl", list(atom_example_rows())), ("atoms", list(atom_rows()))],
        )


UPDATE_COLOURS = {"weakener": "#b42318", "strengthener": "#1d7a45"}
OTHER_COLOUR = "#5b6575"


def atom_effect_strips_svg(frame, max_examples: int = 120) -> str:
    """One row per example with a dot at each effect (-2..+2) its atoms were given.

    frame: a pandas DataFrame, one row per atom, with columns `example` (any id), `effect` (-2..+2) and `update_type`
    ("weakener" / "strengthener" / other). Dot area grows with the number of the example's atoms at that
    effect; colour is the example's update type. Rows are ordered by the share of weakening atom labels
    (as the atomic-decomposition paper's Figure 2 orders its slices); with more than `max_examples`
    examples an evenly spaced subset of that order is drawn.
    """
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

    from common.plotting import figure_svg

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
    return figure_svg(figure)


TASK = DefeasibleAtom()
