"""Labels with explanations (LiveNLI; round 1 of VariErr NLI): every plausible label, each explained.

A worker picks one or more labels of the pair (setting `multiple_labels`: "all plausible"), writes for each
an explanation of at least `min_explanation_words` words and may highlight the words of the premise and
the hypothesis it rests on; "I don't know" is an answer where `allow_idk` is on. The value:
    {"labels": {label: {"explanation": text, "premise_spans": [[start, end], ...],
                        "hypothesis_spans": [[start, end], ...]}, ...},
     "idk": false}
Spans are character offsets [start, end) into the example's texts, sorted and not overlapping. The HTML
form sends the same object as JSON text.

Each (answer, label) pair can go to a linked explanation_validation project (VariErr's second round), in
which other workers judge whether the explanation makes sense for the label.

Agreement is on the label sets: Krippendorff's alpha with the MASI distance (metrics.agreement), on this
report's own table, since the generic figures compare one value per answer.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from annotation.tasktypes.base import (
    LINK_SETTINGS,
    Aggregate,
    AnswerError,
    Choice,
    DemoProject,
    TaskType,
    ValidationSetup,
    WrittenPair,
)
from annotation.tasktypes.demo_text import scene_rows
from annotation.tasktypes.nli_label import LABELS
from common.schema import Setting
from common.vocabulary import NLI, LabelError, label_set_of, to_label

TEXTS = ("premise", "hypothesis")
PARTS = ("explanation", "premise_spans", "hypothesis_spans")
MAX_SPANS = 50  # per text and label: more is a selection gone wrong, not highlighting
# The most peers who judge each explanation (VariErr: the three other annotators of the item).
MAX_VALIDATORS = 3
IDK_KEY = "i"
SHAPE = 'must be {"labels": {label: {"explanation": text, "premise_spans": [...], "hypothesis_spans": [...]}}, "idk": false}'
DOES_NOT_MAKE_SENSE = "does not make sense"


class LabelExplanation(TaskType):
    name = "label_explanation"
    label = "Labels with explanations (LiveNLI, VariErr)"
    agreement_level = None
    agreement_unavailable = (
        "answers are label sets, which one value per answer cannot hold; the agreement on the label sets "
        "(Krippendorff's alpha with the MASI distance) is in this report's table"
    )
    default_items_per_page = 2
    default_redundancy = 4  # VariErr: four annotators an item
    default_max_annotations = 4
    explains_labels = True
    aggregation = "label counts"
    answer_help = (
        '{"labels": {"e": {"explanation": "...", "premise_spans": [[0, 5]], "hypothesis_spans": []}}, "idk": false}: '
        "each picked label with its explanation and highlighted character spans; "
        '{"labels": {}, "idk": true} for "I don\'t know"'
    )
    # How to explain and highlight (by keyboard too) is the widget's; how many labels and words, the settings'
    # (the template adds them under it).
    guidance = (
        "Read the premise and the hypothesis. A label is **entailment** (the hypothesis must be true), "
        "**neutral** (it may or may not be true) or **contradiction** (it cannot be true). For each label you "
        "pick, explain in your own words why it fits and highlight the words of the premise and of the "
        "hypothesis your explanation rests on.\n\n"
        "Highlighting by keyboard: <kbd>Tab</kbd> to a row of words, move with the arrow keys, and press "
        "<kbd>Space</kbd> to mark or unmark a word."
    )
    settings = (
        LABELS,
        Setting(
            "multiple_labels",
            "bool",
            True,
            "workers pick every plausible label, each explained (off: exactly one label)",
            label="All plausible labels",
            worker_visible=True,
            fixed_once_answered=True,
        ),
        Setting(
            "min_explanation_words",
            "int",
            5,
            "the fewest words an explanation may have",
            minimum=1,
            maximum=100,
            worker_visible=True,
        ),
        Setting(
            "max_explanation_characters",
            "int",
            1000,
            "the most characters an explanation may have",
            minimum=20,
            maximum=5000,
            worker_visible=True,
        ),
        Setting(
            "allow_idk",
            "bool",
            True,
            'workers may answer "I don\'t know" instead of picking labels',
            label='Offer "I don\'t know"',
            worker_visible=True,
        ),
        Setting(
            "max_validators_per_pair",
            "int",
            MAX_VALIDATORS,
            "round 2: each explanation is judged by the item's other writers (redundancy - 1), at most this many",
            label="Most validators per explanation",
            minimum=1,
            maximum=20,
        ),
        Setting(
            "verdict_rule",
            "choice",
            "self_check",
            "how a label is judged an error: by its authors' own self-check (VariErr's rule; a label waits "
            "while its writer can still self-check), or, where an item has no self-judgment, by this app's "
            "peer-majority rule (a strict majority of validators)",
            label="Verdict rule",
            choices=(
                ("self_check", "VariErr: the authors' self-check"),
                ("peer_majority", "This app's rule: self-check, else a peer majority"),
            ),
        ),
        *LINK_SETTINGS,
    )

    def _with_defaults(self, options) -> dict:
        # A project switched to this task type from another has none of its settings yet.
        return {**self.default_options(), **options}

    def labels(self, options) -> list[str]:
        return list(options.get("labels") or NLI.labels)

    def example_labels(self, options):
        return tuple(self.labels(options))

    def check_settings(self, options):
        options = self._with_defaults(options)
        shortest = 2 * options["min_explanation_words"] - 1  # one-letter words and single spaces
        if options["max_explanation_characters"] < shortest:
            return {
                "max_explanation_characters": f"must leave room for {options['min_explanation_words']} words "
                f"(at least {shortest} characters)"
            }
        return {}

    # ------------------------------------------------------------------ answers

    def parse_answer(self, answer, options):
        options = self._with_defaults(options)
        given = answer.get("value")
        if isinstance(given, str):  # the HTML form's hidden field carries the object as JSON text
            try:
                given = json.loads(given) if given.strip() else None
            except ValueError:
                raise AnswerError("value", SHAPE) from None
        if not isinstance(given, dict):
            raise AnswerError("value", SHAPE)
        unknown = [key for key in given if key not in ("labels", "idk")]
        if unknown:
            raise AnswerError(f"value.{str(unknown[0])[:20]}", "is not part of an answer; give labels and idk")
        idk = given.get("idk", False)
        picked = given.get("labels", {})
        if not isinstance(idk, bool):
            raise AnswerError("value.idk", "must be true or false")
        if not isinstance(picked, dict):
            raise AnswerError("value.labels", "must map each picked label to its explanation and highlights")
        if idk:
            if not options["allow_idk"]:
                raise AnswerError("value.idk", 'this study does not offer "I don\'t know"; pick a label')
            if picked:
                raise AnswerError("value.labels", 'an "I don\'t know" answer picks no label')
            return given, {"labels": {}, "idk": True}
        if not picked:
            alternative = ', or answer "I don\'t know"' if options["allow_idk"] else ""
            raise AnswerError("value.labels", f"pick at least one label{alternative}")
        if not options["multiple_labels"] and len(picked) > 1:
            raise AnswerError("value.labels", f"pick one label; {len(picked)} were picked")
        explained: dict[str, dict] = {}
        for key, part in picked.items():
            try:
                label = to_label(key, self.labels(options))
            except LabelError as error:
                raise AnswerError(f"value.labels.{str(key)[:20]}", str(error)) from None
            if label in explained:
                raise AnswerError(f"value.labels.{str(key)[:20]}", f"names {label}, which is picked already")
            explained[label] = self._explained(part, label, options)
        ordered = {label: explained[label] for label in self.labels(options) if label in explained}
        return given, {"labels": ordered, "idk": False}

    def without_free_text(self, raw, value):
        """The labels picked and their highlighted spans stay; the explanations are emptied."""

        def emptied(answer):
            if not isinstance(answer, dict) or not isinstance(answer.get("labels"), dict):
                return answer
            labels = {
                label: {**part, "explanation": ""} if isinstance(part, dict) else part
                for label, part in answer["labels"].items()
            }
            return {**answer, "labels": labels}

        return emptied(raw), emptied(value)

    def _explained(self, part, label: str, options: dict) -> dict:
        """One picked label's explanation (spaces tidied, within the study's limits) and spans."""
        field, name = f"value.labels.{label}", self._name(label, options)
        if not isinstance(part, dict):
            raise AnswerError(field, f"{name}: give an explanation and the highlighted spans")
        unknown = [key for key in part if key not in PARTS]
        if unknown:
            raise AnswerError(
                f"{field}.{str(unknown[0])[:20]}", f"is not part of a label's answer; give {', '.join(PARTS)}"
            )
        text = part.get("explanation")
        if not isinstance(text, str) or not text.strip():
            raise AnswerError(f"{field}.explanation", f"{name}: explain why this label fits")
        explanation = " ".join(text.split())
        if any(unicodedata.category(char) in ("Cc", "Cs") for char in explanation):
            raise AnswerError(f"{field}.explanation", f"{name}: contains a control character")
        words, low, most = (
            len(explanation.split()),
            options["min_explanation_words"],
            options["max_explanation_characters"],
        )
        if words < low:
            raise AnswerError(
                f"{field}.explanation", f"{name}: {words} word{'s' if words != 1 else ''}; write at least {low}"
            )
        if len(explanation) > most:
            raise AnswerError(f"{field}.explanation", f"{name}: {len(explanation)} characters; write at most {most}")
        return {
            "explanation": explanation,
            **{f"{text}_spans": parse_spans(part.get(f"{text}_spans", []), f"{field}.{text}_spans") for text in TEXTS},
        }

    def check_answer(self, item, value, options, worker_id):
        for label, part in value["labels"].items():
            for text in TEXTS:
                length = len(getattr(item.example, text))
                for index, (_, end) in enumerate(part[f"{text}_spans"]):
                    if end > length:
                        raise AnswerError(
                            f"value.labels.{label}.{text}_spans[{index}]",
                            f"ends at {end}, after the end of the {text} ({length} characters)",
                        )

    def parse_reference(self, value, options):
        raise AnswerError("value", "explained labels get no final label here; their validation project judges them")

    def example_answers(self, options):
        options = self._with_defaults(options)
        labels = self.labels(options)
        because = "because the premise says so plainly"
        one = {
            "labels": {labels[0]: {"explanation": f"First label {because}.", "premise_spans": [[0, 1]]}},
            "idk": False,
        }
        answers: list = [json.dumps(one), one]  # the HTML form's JSON text, and the API's object
        if options["multiple_labels"]:
            long_name = label_set_of(labels).name(labels[0]).lower()
            answers.append(
                {
                    "labels": {
                        long_name: {"explanation": f"The first label fits {because}.", "hypothesis_spans": [[0, 1]]},
                        labels[-1]: {"explanation": f"The last label fits too {because}."},
                    }
                }
            )
        if options["allow_idk"]:
            answers.append({"labels": {}, "idk": True})
        return answers

    def simulated_answer(self, item, worker_number, rng, options):
        options = self._with_defaults(options)
        labels = self.labels(options)
        count = rng.choice((1, 1, 2)) if options["multiple_labels"] else 1
        picked = sorted(rng.sample(labels, count), key=labels.index)
        first_word = len(item.example.premise.split(" ")[0]) or 1
        return {
            "labels": {
                label: {
                    "explanation": f"Simulated worker {worker_number} explains {self._name(label, options)} "
                    f"for item {item.pk} in a few words.",
                    "premise_spans": [[0, first_word]] if item.example.premise else [],
                }
                for label in picked
            },
            "idk": False,
        }

    # ------------------------------------------------------------------ collection

    def disagree(self, raws, values, options):
        return False  # every explained label set is data: the redundancy decides how many an item gets

    def aggregate(self, values, options):
        """How many annotators picked each label ({label: count}, every label of the study in order).
        There is no tie: labels picked equally often keep their equal counts. "I don't know" answers pick no
        label; an item with nothing but those has no aggregate."""
        counts = dict.fromkeys(self.labels(options), 0)
        for value in values:
            for label in value["labels"]:
                counts[label] = counts.get(label, 0) + 1
        return Aggregate(counts if any(counts.values()) else None)

    def widget_context(self, options):
        options = self._with_defaults(options)
        labels = self.labels(options)
        return {
            "label_choices": [Choice(label, self._name(label, options), label.lower()) for label in labels],
            "multiple_labels": options["multiple_labels"],
            "allow_idk": options["allow_idk"],
            "idk_key": IDK_KEY,
            "min_explanation_words": options["min_explanation_words"],
            "max_explanation_characters": options["max_explanation_characters"],
            "widget_script": "js/highlights.js",
        }

    def _name(self, label: str, options: dict) -> str:
        return label_set_of(self.labels(options)).name(label)

    def in_order(self, by_label: dict, options: dict) -> list[tuple[str, Any]]:
        """(label, entry) pairs of a stored {label: ...} in the study's label order: PostgreSQL's jsonb keeps
        an object's keys in an order of its own."""
        return [(label, by_label[label]) for label in self.labels(options) if label in by_label]

    def display(self, value, options):
        if isinstance(value, dict) and "labels" in value:
            if value.get("idk"):
                return "I don't know"
            return " / ".join(
                f"{self._name(label, options)}: {part['explanation']}"
                for label, part in self.in_order(value["labels"], options)
            )
        if isinstance(value, dict):  # the aggregate's counts
            return ", ".join(f"{self._name(label, options)} {count}" for label, count in self.in_order(value, options))
        return super().display(value, options)

    def export_fields(self, raw, value, options):
        labels = self.in_order(value["labels"], options)
        return {
            "labels": [label for label, _ in labels],
            "idk": value["idk"],
            "explanation_words": {label: len(part["explanation"].split()) for label, part in labels},
            "premise_spans": {label: part["premise_spans"] for label, part in labels},
            "hypothesis_spans": {label: part["hypothesis_spans"] for label, part in labels},
        }

    def report_tables(self, counted_values, options):
        from metrics.agreement import krippendorff_alpha_sets  # numpy: not at start-up

        label_sets = [
            [frozenset(value["labels"]) for value in values if not value["idk"]] for values in counted_values().values()
        ]
        answers = sum(len(sets) for sets in label_sets)
        pairable = [sets for sets in label_sets if len(sets) >= 2]
        rows = [
            ["Answers with labels", answers],
            ["Items with two or more label sets", len(pairable)],
            ["Answers picking two or more labels", sum(len(labels) >= 2 for sets in label_sets for labels in sets)],
        ]
        if pairable:
            rows.append(
                ["Krippendorff's alpha, MASI distance on label sets", _rounded(krippendorff_alpha_sets(pairable))]
            )
            for label in self.labels(options):
                # Per label: picked or not, a nominal alpha (the distance between two sets is whether they differ on it).
                alpha = krippendorff_alpha_sets(
                    pairable, distance=lambda a, b, label=label: float((label in a) != (label in b))
                )
                rows.append([f"Krippendorff's alpha, {self._name(label, options)} picked or not", _rounded(alpha)])
        return [
            {
                "title": "Agreement on the label sets",
                "columns": ["Figure", "Value"],
                "rows": rows if answers else [],
                "empty": "No labels picked yet.",
                "note": "Workers' answers only; \"I don't know\" answers and gold checks are left out. MASI "
                "(Passonneau 2006) counts two sets as closer when one holds the other than when they only "
                "overlap. — : undefined (every set the same).",
            }
        ]

    # ------------------------------------------------------------------ validation (VariErr's second round)

    def validation_task(self, options):
        options = self._with_defaults(options)
        return ValidationSetup("explanation_validation", {}, options["max_validators_per_pair"])

    def peer_majority(self, options):
        return self._with_defaults(options)["verdict_rule"] == "peer_majority"

    def validators_per_pair(self, options, redundancy):
        """VariErr: every other writer of the item judges each explanation, at most the study's maximum."""
        return min(self._with_defaults(options)["max_validators_per_pair"], redundancy - 1)

    def validation_pairs(self, example, value, options):
        return [
            WrittenPair(
                label,
                example.premise,
                example.hypothesis,
                data={"label": label, **part},
            )
            for label, part in self.in_order(value["labels"], options)
        ]

    def verdict(self, item, votes, options):
        """The label itself when the validators' majority (or the adjudicator) says its explanation makes
        sense, else "does not make sense" (a settled tie too: no majority says it makes sense); None for an
        item still in the adjudication queue (a tie settled before ties stopped going there)."""
        judgment = item.final_value
        if judgment is None:
            return None if item.status == item.Status.ADJUDICATION else DOES_NOT_MAKE_SENSE
        return item.example.origin_target if judgment["makes_sense"] else DOES_NOT_MAKE_SENSE

    def target_name(self, target):
        return NLI.name(target) if target in NLI.labels else str(target)

    def confirmation_rule(self, options):
        return "most of its validators judge that the explanation makes sense for the label"

    def demo(self):
        return DemoProject(
            "demo-explanations",
            "Demo: every plausible label, explained",
            "Pick every label you find plausible for the pair. For each, explain in your own words why it fits, "
            "and highlight the words of the premise and the hypothesis your explanation rests on.",
            [],
            [("jsonl", list(scene_rows())[:9])],
            options={"items_per_page": 1},
        )


def parse_spans(given, field: str) -> list[list[int]]:
    """Highlighted character spans [start, end): whole numbers, start before end, sorted, not overlapping.
    Whether they end inside the text is checked against the item (check_answer)."""
    if not isinstance(given, list):
        raise AnswerError(field, "must be a list of [start, end] character offsets")
    if len(given) > MAX_SPANS:
        raise AnswerError(field, f"{len(given)} spans; highlight at most {MAX_SPANS}")
    spans: list[list[int]] = []
    for index, span in enumerate(given):
        where = f"{field}[{index}]"
        if not (
            isinstance(span, (list, tuple))
            and len(span) == 2
            and all(isinstance(number, int) and not isinstance(number, bool) for number in span)
        ):
            raise AnswerError(where, "must be [start, end]: two whole numbers")
        start, end = span
        if start < 0:
            raise AnswerError(where, f"starts at {start}, before the text")
        if end <= start:
            raise AnswerError(where, f"ends at {end}, not after its start ({start})")
        if spans and start < spans[-1][1]:
            raise AnswerError(
                where, f"starts at {start}, before the span before it ends ({spans[-1][1]}): sort spans, no overlaps"
            )
        spans.append([start, end])
    return spans


def _rounded(alpha: float) -> str:
    return "—" if alpha != alpha else f"{alpha:.3f}"  # NaN: every set the same


TASK = LabelExplanation()
