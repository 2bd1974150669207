"""Three-way NLI labels (entailment / neutral / contradiction), many annotators per item.

Projects importing alphaNLI from ChaosNLI use the label set ["1", "2"] (which hypothesis is likelier).
"""
from annotation.tasktypes.base import GENERIC_EXPORTS, GENERIC_IMPORTS, Choice, DemoProject, NominalTaskType
from annotation.tasktypes.demo_text import scene_rows
from common.schema import Setting
from common.vocabulary import ALPHA_NLI, NLI, LabelError, label_set_of, to_label


class NLILabel(NominalTaskType):
    name = "nli_label"
    label = "Three-way NLI label"
    label_distributions = True
    default_items_per_page = 5
    import_formats = ("chaosnli", "snli", "usnli", *GENERIC_IMPORTS)
    export_formats = ("chaosnli", "snli", *GENERIC_EXPORTS)
    answer_help = "a label of the project (e, n, c; alpha-NLI projects 1, 2), long names accepted"
    settings = (
        Setting("labels", "choice", list(NLI.labels), "the labels workers choose from",
                choices=((list(NLI.labels), "Entailment / neutral / contradiction"),
                         (list(ALPHA_NLI.labels), "Hypothesis 1 / hypothesis 2 (alpha-NLI)"))),
    )

    def labels(self, options):
        return options.get("labels") or list(NLI.labels)

    def choices(self, options):
        label_set = label_set_of(self.labels(options))
        return [Choice(label, label_set.name(label), label.lower()) for label in self.labels(options)]

    def gold_reference(self, example, atom, options):
        try:
            return to_label(example.source_label, self.labels(options))
        except LabelError:
            return None

    def demo(self):
        return DemoProject(
            "demo-nli", "Demo: entailment, neutral or contradiction",
            "Choose the relation between the premise and the hypothesis.",
            [
                {"premise": "Two girls share an umbrella at a bus stop.", "hypothesis": "Two people are waiting outdoors.",
                 "answer": "Entailment", "why": "A bus stop is outdoors and they are waiting there."},
                {"premise": "Two girls share an umbrella at a bus stop.", "hypothesis": "The girls are sisters.",
                 "answer": "Neutral", "why": "Nothing says whether they are related."},
                {"premise": "Two girls share an umbrella at a bus stop.", "hypothesis": "The girls are swimming.",
                 "answer": "Contradiction", "why": "They cannot swim while standing at a bus stop."},
            ],
            [("jsonl", list(scene_rows()))],
        )


    def demos(self):
        return [*super().demos(), self._paid_demo()]

    def _paid_demo(self):
        """A study set up as a paid crowd study is: a qualification test, hidden gold checks and a completion
        code, so a newcomer can walk the whole worker journey (e.g. from /enter/demo-paid/?PROLIFIC_PID=...)."""
        return DemoProject(
            "demo-paid", "Demo: a paid study with qualification and gold checks",
            "Decide whether the **hypothesis** must be true, may be true, or cannot be true, given the premise.\n\n"
            "You first answer three practice items: pass two of them to start. Some items later on are checks "
            "with a known answer. When you finish, you receive a completion code for the crowd platform.",
            [],
            [("jsonl", [
                {"id": f"paid-{scene}-{index}", "premise": premise, "hypothesis": hypothesis}
                for scene, (premise, hypotheses) in enumerate(PAID_SCENES, start=1)
                for index, (hypothesis, _) in enumerate(hypotheses, start=1)
            ])],
            options={"completion_code": "DEMO-PAID-2026", "gold_rate": 0.3, "items_per_page": 3},
            gold=[{"id": f"paid-gold-{number}", "premise": premise, "hypothesis": hypothesis, "label": label}
                  for number, (premise, hypothesis, label) in enumerate(PAID_GOLD, start=1)],
            qualification=[{"premise": premise, "hypothesis": hypothesis, "label": label}
                           for premise, hypothesis, label in PAID_QUALIFICATION],
        )


# Written for the demo study; the labels are the intended readings.
PAID_SCENES = [
    ("A woman carries a stack of books up a narrow staircase.", [
        ("Someone is holding books.", "e"), ("The woman works in a library.", "n"), ("The woman is swimming.", "c")]),
    ("Four friends share a pizza at a wooden table.", [
        ("People are eating.", "e"), ("It is someone's birthday.", "n"), ("The table is empty.", "c")]),
    ("A cyclist waits at a red light in the rain.", [
        ("A person is outside.", "e"), ("The cyclist is late for work.", "n"), ("The sun is shining on a dry road.", "c")]),
]
PAID_GOLD = [
    ("A baby is sleeping in a crib.", "A child is asleep.", "e"),
    ("A man is mowing the lawn.", "The man is asleep on the sofa.", "c"),
    ("Two kids build a sandcastle.", "Children are playing.", "e"),
]
PAID_QUALIFICATION = [
    ("A chef is tasting soup from a large pot.", "Someone is cooking.", "e"),
    ("A chef is tasting soup from a large pot.", "The soup is for a wedding.", "n"),
    ("A chef is tasting soup from a large pot.", "The kitchen has no food in it.", "c"),
]


TASK = NLILabel()
