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

        from annotation.services import plots

        frame = pd.DataFrame(
            [(example, value, update_type) for example, _, update_type, value in settled],
            columns=["example", "effect", "update_type"],
        )
        plot = {"title": "Atom effects per example", "svg": None, "empty": None}
        if frame.empty:
            plot["empty"] = "No atom has a settled effect yet."
        else:
            plot["svg"] = plots.atom_effect_strips_svg(frame)
        return plot

    def demo(self):
        return DemoProject(
            "demo-defeasible", "Demo: how does the update change the atom?",
            "Rate the effect of the update on each atom from -2 to +2.",
            worked_examples("demo-defeasible"), [("jsonl", list(atom_example_rows())), ("atoms", list(atom_rows()))],
        )


TASK = DefeasibleAtom()
