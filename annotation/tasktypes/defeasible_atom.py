"""Defeasible atom effect: how does the update U change the likelihood of atom a given P? (-2..+2)"""
from annotation.tasktypes.base import TaskType, median_or_tie, require_int

EFFECT_LABELS = {
    -2: "Strongly weakens",
    -1: "Weakens",
    0: "No effect",
    1: "Strengthens",
    2: "Strongly strengthens",
}


class DefeasibleAtom(TaskType):
    name = "defeasible_atom"
    label = "Defeasible atom effect (-2..+2)"
    agreement_level = "ordinal"
    per_atom = True
    default_items_per_page = 5

    def parse_answer(self, answer, options):
        value = require_int(answer, "value", -2, 2)
        return {"value": value}, value

    def disagree(self, raws, values, options):
        # Two answers that are 2 or more apart, or on opposite sides of "no effect".
        return (max(values) - min(values) >= 2) or (min(values) < 0 < max(values))

    def aggregate(self, values, options):
        return median_or_tie(values)


TASK = DefeasibleAtom()
