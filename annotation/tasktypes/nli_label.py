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


TASK = NLILabel()
