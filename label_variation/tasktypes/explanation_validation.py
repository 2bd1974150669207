"""Explanation validation (VariErr NLI's second round): does a label's explanation make sense?

Each item is one (label, explanation) pair of a label_explanation study, sent here by
annotation.services.linking (or imported): the example's source_data holds the label (an imported row's
label column is the example's source label), the explanation and its highlighted spans. Validators answer
yes or no; the item's aggregate is the majority. A tie settles the item too (no aggregate: no majority says
it makes sense), never waiting in the adjudication queue: neither VariErr's rule (the authors' self-check)
nor this app's peer rule (a strict majority of peers) reads an adjudicated judgment, so an author's tie-break
would change nothing (label_variation.services.variation). The explanation's author never judges it: linking gives
the author a claim on the item already, so claims skip it, and a submit that reaches it anyway is refused
here (check_answer). VariErr keeps the author's own judgment apart from the peers': authors judge their own
pairs on a page of their own (label_variation.services.self_judgments), never as validators here.
"""

from __future__ import annotations

from annotation.tasktypes.base import Aggregate, AnswerError, Choice, DemoProject, TaskType
from common.vocabulary import NLI

YES, NO = "yes", "no"
# The spellings of a judgment the form (its radio values) and API clients send.
JUDGMENTS = {YES: True, "y": True, "true": True, NO: False, "n": False, "false": False}
OWN_EXPLANATION = "you wrote this explanation; validators judge other people's explanations"


def makes_sense_majority(values: list) -> Aggregate:
    """The judgment most validators gave ({"makes_sense": bool}); as many yes as no settles with no aggregate,
    not tied: the rules that read these judgments decide a tie themselves (module docstring)."""
    yes = sum(1 for value in values if value["makes_sense"])
    no = len(values) - yes
    if yes == no:
        return Aggregate(None)
    return Aggregate({"makes_sense": yes > no})


class ExplanationValidation(TaskType):
    name = "explanation_validation"
    label = "Explanation validation (makes sense or not)"
    agreement_level = None
    agreement_unavailable = (
        "answers are yes/no judgments stored as {makes_sense: true|false}; the validators' agreement "
        "(Krippendorff's alpha, nominal) is in this report's table"
    )
    default_items_per_page = 5
    default_redundancy = 3
    default_max_annotations = 3
    aggregation = "majority"
    answer_help = 'whether the explanation makes sense for its label: {"makes_sense": true} or false ("yes"/"no" too)'
    # VariErr's judgment: whether the explanation fits its label, not whether the validator agrees with the label.
    guidance = (
        "Someone picked a label for each pair and explained why. Read the premise, the hypothesis, the label and "
        "the explanation (the words it rests on are marked), then say whether the explanation **makes sense** "
        "for that label, whichever label you would have picked yourself."
    )

    def parse_answer(self, answer, options):
        given = answer.get("value")
        judgment = given["makes_sense"] if isinstance(given, dict) and set(given) == {"makes_sense"} else given
        if isinstance(judgment, str) and judgment.strip().lower() in JUDGMENTS:
            judgment = JUDGMENTS[judgment.strip().lower()]
        if not isinstance(judgment, bool):
            raise AnswerError("value", 'must say whether the explanation makes sense: {"makes_sense": true|false}')
        return {"value": given}, {"makes_sense": judgment}

    def example_answers(self, options):
        return [{"makes_sense": True}, {"makes_sense": False}, YES, " No ", {"makes_sense": "yes"}]

    def check_answer(self, item, value, options, worker_id):
        # The answer the explanation came from (none for an imported one); read only for those that have one.
        if item.example.origin_id is not None and item.example.origin.worker_id == worker_id:
            raise AnswerError("value", OWN_EXPLANATION)

    def disagree(self, raws, values, options):
        return False  # every validator's judgment is data: the redundancy decides how many

    def aggregate(self, values, options):
        return makes_sense_majority(values)

    def choices(self, options):
        return [Choice(YES, "Makes sense", "y"), Choice(NO, "Does not make sense", "n")]

    def display(self, value, options):
        if isinstance(value, dict) and "makes_sense" in value:
            return "Makes sense" if value["makes_sense"] else "Does not make sense"
        return super().display(value, options)

    def widget_context(self, options):
        return {"choices": self.choices(options), "label_names": dict(NLI.names), "widget_script": "js/highlights.js"}

    def simulated_answer(self, item, worker_number, rng, options):
        return {"makes_sense": rng.random() < 0.75}

    def report_tables(self, counted_values, options):
        by_item = list(counted_values().values())
        judged = sum(len(values) for values in by_item)
        yes = sum(value["makes_sense"] for values in by_item for value in values)
        pairable = [values for values in by_item if len(values) >= 2]
        alpha = "—"
        if pairable:
            from metrics.agreement import krippendorff_alpha  # numpy and scipy: not at start-up

            counts = [
                [sum(v["makes_sense"] for v in values), sum(not v["makes_sense"] for v in values)]
                for values in pairable
            ]
            figure = krippendorff_alpha(value_counts=counts, level="nominal")
            alpha = "—" if figure != figure else f"{figure:.3f}"  # NaN: every judgment the same
        rows = [
            ["Items judged", len(by_item)],
            ["Judgments", judged],
            ["Judged to make sense", f"{yes} ({yes / judged:.0%})" if judged else "—"],
            ["Items with two or more judgments", len(pairable)],
            ["Krippendorff's alpha (nominal) on makes sense", alpha],
        ]
        return [
            {
                "title": "Validators' judgments",
                "columns": ["Figure", "Value"],
                "rows": rows,
                "empty": "No judgments yet.",
                "note": "Judgments of workers only, gold checks and excluded answers left out. Alpha: 1 - "
                "observed / expected disagreement over items with two or more judgments; — while undefined.",
            }
        ]

    def demo(self):
        return DemoProject(
            "demo-explanation-validation",
            "Demo: does the explanation make sense?",
            "Someone chose a label for each pair and explained why. Say whether the explanation makes sense "
            "for that label, whatever label you would have chosen yourself.",
            [],
            [("jsonl", DEMO_ROWS)],
        )


# Written for this demo: a scene, a label and someone's explanation of it, with its highlighted words.
DEMO_ROWS = [
    {
        "id": "explain1-e",
        "premise": "A woman in a red coat waits at a bus stop in the rain.",
        "hypothesis": "A woman is outside.",
        "label": "e",
        "explanation": "A bus stop in the rain is outdoors, so she is outside.",
        "premise_spans": [[28, 54]],
        "hypothesis_spans": [[11, 19]],
    },
    {
        "id": "explain1-n",
        "premise": "A woman in a red coat waits at a bus stop in the rain.",
        "hypothesis": "A woman is going to work.",
        "label": "n",
        "explanation": "She waits for a bus, but nothing says where she is going.",
        "premise_spans": [[22, 27]],
        "hypothesis_spans": [[11, 25]],
    },
    {
        "id": "explain2-c",
        "premise": "Two boys kick a ball across an empty field.",
        "hypothesis": "The boys are sitting indoors.",
        "label": "c",
        "explanation": "Kicking a ball across a field means they are outside and moving.",
        "premise_spans": [[9, 20], [31, 43]],
        "hypothesis_spans": [[13, 29]],
    },
    {
        "id": "explain2-n",
        "premise": "Two boys kick a ball across an empty field.",
        "hypothesis": "The boys are brothers.",
        "label": "n",
        "explanation": "The boys are playing together here.",
        "premise_spans": [],
        "hypothesis_spans": [[13, 22]],
    },
    {
        "id": "explain3-e",
        "premise": "An old man feeds pigeons on a park bench.",
        "hypothesis": "A man is sitting in a park.",
        "label": "e",
        "explanation": "He is on a park bench, and people on benches usually sit.",
        "premise_spans": [[25, 41]],
        "hypothesis_spans": [[9, 27]],
    },
    {
        "id": "explain3-c",
        "premise": "An old man feeds pigeons on a park bench.",
        "hypothesis": "A man is sitting in a park.",
        "label": "c",
        "explanation": "Pigeons are birds and birds live in trees.",
        "premise_spans": [[17, 24]],
        "hypothesis_spans": [],
    },
]

TASK = ExplanationValidation()
