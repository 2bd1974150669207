"""Three-way NLI labels (entailment / neutral / contradiction), many annotators per item.

Projects importing alphaNLI from ChaosNLI use the label set ["1", "2"] (which hypothesis is likelier).
"""

from annotation.tasktypes.base import REDUNDANCY_SETTINGS, Choice, DemoProject, NominalTaskType
from annotation.tasktypes.demo_text import paid_gold_rows, paid_qualification_rows, paid_rows, scene_demo
from common.schema import Setting
from common.vocabulary import ALPHA_NLI, NLI, LabelError, label_set_of, to_label

# Shared with the task types that ask for NLI labels in another way (label_explanation).
LABELS = Setting(
    "labels",
    "choice",
    list(NLI.labels),
    "the labels workers choose from",
    choices=(
        (list(NLI.labels), "Entailment / neutral / contradiction"),
        (list(ALPHA_NLI.labels), "Hypothesis 1 / hypothesis 2 (alpha-NLI)"),
    ),
    worker_visible=True,
    fixed_once_answered=True,
    import_source="label_set",
)


class NLILabel(NominalTaskType):
    name = "nli_label"
    label = "Three-way NLI label"
    label_distributions = True
    default_items_per_page = 5
    answer_help = "a label of the project (e, n, c; alpha-NLI projects 1, 2), long names accepted"
    settings = (*REDUNDANCY_SETTINGS, LABELS)
    guidance = (
        "Read the premise and decide what it says about the hypothesis: **entailment** (it must be true), "
        "**neutral** (it may or may not be true) or **contradiction** (it cannot be true). For two-hypothesis "
        "items, choose the hypothesis that better explains the observations."
    )
    guidance_adjustable = True

    def labels(self, options):
        return options.get("labels") or list(NLI.labels)

    def example_labels(self, options):
        return tuple(self.labels(options))

    def choices(self, options):
        label_set = label_set_of(self.labels(options))
        return [Choice(label, label_set.name(label), label.lower()) for label in self.labels(options)]

    def gold_reference(self, example, atom, options):
        try:
            return to_label(example.source_label, self.labels(options))
        except LabelError:
            return None

    def demo(self):
        return scene_demo(
            "demo-nli",
            "Demo: entailment, neutral or contradiction",
            "Choose the relation between the premise and the hypothesis.",
        )

    def demos(self):
        return [*super().demos(), self._paid_demo()]

    def _paid_demo(self):
        """A study set up as a paid crowd study is: a qualification test, hidden gold checks and a completion
        code, so a newcomer can walk the whole worker journey (e.g. from /enter/demo-paid/?PROLIFIC_PID=...)."""
        return DemoProject(
            "demo-paid",
            "Demo: a paid study with qualification and gold checks",
            "Decide whether the **hypothesis** must be true, may be true, or cannot be true, given the premise.\n\n"
            "You first answer three practice items: pass two of them to start. Some items later on are checks "
            "with a known answer. When you finish, you receive a completion code for the crowd platform.",
            [],
            [("jsonl", list(paid_rows()))],
            options={"completion_code": "DEMO-PAID-2026", "gold_rate": 0.3, "items_per_page": 3},
            gold=list(paid_gold_rows()),
            qualification=paid_qualification_rows(),
        )


TASK = NLILabel()
