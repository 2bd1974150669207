"""Hypothesis writing (elicitation): the protocol SNLI, MNLI and delta-NLI were collected with.

A worker reads a premise (for delta-NLI updates: a premise and a hypothesis) and writes one sentence per
target of the project: an entailed, a neutral and a contradicted hypothesis, or a strengthening and a
weakening update. The written pairs go to a linked validation project (annotation.services.linking):
  - hypotheses: a 3-way label project in which the writer's intended label is the first of five votes, gold
    by SNLI's rule (3 of 5 agree, otherwise "-");
  - updates: a -2..+2 project in which each update is an example (P, H, U) whose one atom is H itself, so
    the validators rate the update's effect on the hypothesis.
"""

from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher

from annotation.tasktypes.base import (
    LINK_SETTINGS,
    Aggregate,
    AnswerError,
    DemoProject,
    TaskType,
    ValidationSetup,
    WrittenPair,
)
from annotation.tasktypes.demo_text import worked_examples, writing_rows
from common.schema import Setting
from common.vocabulary import NLI, UPDATE, snli_gold_label

HYPOTHESES = list(NLI.labels)
UPDATES = list(UPDATE.labels)
TARGET_NAMES = {
    "e": "Entailed",
    "n": "Neutral",
    "c": "Contradicted",
    "strengthener": "Strengthener",
    "weakener": "Weakener",
}
PROMPTS = {
    "e": "a sentence that is surely true when the premise is",
    "n": "a sentence that may or may not be true when the premise is",
    "c": "a sentence that cannot be true when the premise is",
    "strengthener": "a new fact that makes the hypothesis more likely",
    "weakener": "a new fact that makes the hypothesis less likely",
}
# From this similarity on (difflib's ratio of the normalised texts) a sentence counts as a copy.
NEAR_COPY_RATIO = 0.9
# Each written pair is labelled by five people in SNLI: the writer and four validators.
HYPOTHESIS_VOTES = 5
UPDATE_VALIDATORS = 3


def normalised(sentence: str) -> str:
    """A sentence as the duplicate checks compare it: lower case, without punctuation or extra spaces."""
    return " ".join(re.sub(r"[^\w\s]", " ", sentence.lower()).split())


def near_copy(sentence: str, text: str) -> bool:
    return SequenceMatcher(None, normalised(sentence), normalised(text)).ratio() >= NEAR_COPY_RATIO


class HypothesisWriting(TaskType):
    name = "hypothesis_writing"
    label = "Hypothesis writing (elicitation)"
    agreement_level = None
    agreement_unavailable = (
        "each worker writes sentences of their own, so there is no common answer to agree on; the agreement "
        "on the written pairs is on the validation project's report"
    )
    default_items_per_page = 2
    default_redundancy = 1
    default_max_annotations = 1
    answer_help = (
        'one sentence per target of the project: {"e": ..., "n": ..., "c": ...}, or for updates '
        '{"strengthener": ..., "weakener": ...}'
    )
    settings = (
        Setting(
            "targets",
            "choice",
            HYPOTHESES,
            "what a worker writes for each item",
            choices=(
                (HYPOTHESES, "An entailed, a neutral and a contradicted hypothesis (SNLI, MNLI)"),
                (UPDATES, "A strengthening and a weakening update of the hypothesis (delta-NLI)"),
            ),
            worker_visible=True,
            fixed_once_answered=True,
        ),
        Setting(
            "min_words",
            "int",
            3,
            "the fewest words a written sentence may have",
            minimum=1,
            maximum=100,
            worker_visible=True,
        ),
        Setting(
            "max_words",
            "int",
            30,
            "the most words a written sentence may have",
            minimum=1,
            maximum=200,
            worker_visible=True,
        ),
        Setting(
            "max_characters",
            "int",
            250,
            "the most characters a written sentence may have",
            minimum=10,
            maximum=2000,
            worker_visible=True,
        ),
        *LINK_SETTINGS,
    )
    # The sentences it refuses are refused by check_answer whatever the text says: it is not the author's.
    guidance = (
        "Read what each item shows and imagine the scene. Then write, in your own words, one sentence for "
        "each box.\n\nDo not copy the premise or the hypothesis, do not write the same sentence twice, and do "
        "not repeat a sentence already written for the premise: such sentences are refused."
    )

    def targets(self, options) -> list[str]:
        return self._with_defaults(options)["targets"]

    def _with_defaults(self, options) -> dict:
        # A project switched to this task type from another has none of its settings yet.
        return {**self.default_options(), **options}

    def writes_updates(self, options) -> bool:
        return self.targets(options) == UPDATES

    def check_settings(self, options):
        options = self._with_defaults(options)
        if options["min_words"] > options["max_words"]:
            return {"max_words": f"must be at least min_words ({options['min_words']})"}
        return {}

    def source_fields(self, options):
        return ("premise", "hypothesis") if self.writes_updates(options) else ("premise",)

    # ------------------------------------------------------------------ answers

    def parse_answer(self, answer: dict, options: dict) -> tuple[dict[str, str], dict[str, str]]:
        targets = self.targets(options)
        given = answer.get("value")
        if not isinstance(given, dict):
            names = ", ".join(TARGET_NAMES[target].lower() for target in targets)
            raise AnswerError("value", f"must give one sentence for each of {names}")
        unknown = [key for key in given if key not in targets]
        if unknown:
            raise AnswerError(
                f"value.{str(unknown[0])[:20]}", f"is not a target here; the targets are {', '.join(targets)}"
            )
        sentences: dict[str, str] = {}
        seen: dict[str, str] = {}
        for target in targets:
            sentence = self._sentence(given.get(target), target, options)
            key = normalised(sentence)
            if key in seen:
                raise AnswerError(
                    f"value.{target}",
                    f"{TARGET_NAMES[target]}: the same sentence as the "
                    f"{seen[key].lower()} one; write a different sentence",
                )
            seen[key] = TARGET_NAMES[target]
            sentences[target] = sentence
        return sentences, sentences

    def without_free_text(self, raw, value):
        """The written sentences are the whole answer: each target's sentence is emptied."""

        def emptied(answer):
            return dict.fromkeys(answer, "") if isinstance(answer, dict) else answer

        return emptied(raw), emptied(value)

    def example_answers(self, options):
        wordings = (
            "Someone is somewhere today.",
            "It may rain later in the day.",
            "Nobody is anywhere at all.",
            "The place looks busier than usual.",
            "The place is empty this morning.",
        )
        targets = self.targets(options)
        return [
            {target: wordings[(index + shift) % len(wordings)] for index, target in enumerate(targets)}
            for shift in range(2)
        ]

    def _sentence(self, text, target, options) -> str:
        """One written sentence, spaces tidied, within the project's limits."""
        name, field = TARGET_NAMES[target], f"value.{target}"
        if not isinstance(text, str) or not text.strip():
            raise AnswerError(field, f"{name}: write a sentence")
        sentence = " ".join(text.split())
        if any(unicodedata.category(char) in ("Cc", "Cs") for char in sentence):
            raise AnswerError(field, f"{name}: contains a control character")
        words = len(sentence.split())
        options = self._with_defaults(options)
        low, high, most = options["min_words"], options["max_words"], options["max_characters"]
        if words < low:
            raise AnswerError(field, f"{name}: {words} word{'s' if words != 1 else ''}; write at least {low}")
        if words > high:
            raise AnswerError(field, f"{name}: {words} words; write at most {high}")
        if len(sentence) > most:
            raise AnswerError(field, f"{name}: {len(sentence)} characters; write at most {most}")
        return sentence

    def check_answer(self, item, value, options, worker_id):
        example = item.example
        shown = [("premise", example.premise)]
        if self.writes_updates(options):
            shown.append(("hypothesis", example.hypothesis))
        # Sentences already written for this premise, on this item or on another with the same premise.
        stored = (
            type(item)
            .objects.filter(project_id=item.project_id, example__premise=example.premise, annotations__isnull=False)
            .values_list("annotations__value", flat=True)
        )
        earlier = {
            normalised(sentence) for written in stored for sentence in written.values() if isinstance(sentence, str)
        }
        for target, sentence in value.items():
            name, field = TARGET_NAMES[target], f"value.{target}"
            for what, text in shown:
                if near_copy(sentence, text):
                    raise AnswerError(field, f"{name}: this repeats the {what}; write a sentence of your own")
            if normalised(sentence) in earlier:
                raise AnswerError(field, f"{name}: this sentence was already written for this premise; write another")

    def parse_reference(self, value, options):
        raise AnswerError("value", "written sentences get no final label here; their validation project labels them")

    def disagree(self, raws, values, options):
        return False  # every written set is data of its own: an item is done with its redundancy of sets

    def aggregate(self, values, options):
        return Aggregate(None)

    def widget_context(self, options):
        options = self._with_defaults(options)
        return {
            "targets": [{"value": t, "name": TARGET_NAMES[t], "prompt": PROMPTS[t]} for t in options["targets"]],
            "shows_hypothesis": self.writes_updates(options),
            "min_words": options["min_words"],
            "max_words": options["max_words"],
            "max_characters": options["max_characters"],
            "text_answers": True,
        }

    def simulated_answer(self, item, worker_number, rng, options):
        wording = {
            "e": "surely true",
            "n": "perhaps true",
            "c": "surely false",
            "strengthener": "more likely",
            "weakener": "less likely",
        }
        return {
            target: f"Simulated worker {worker_number} writes something {wording[target]} about item {item.pk}."
            for target in self.targets(options)
        }

    def display(self, value, options):
        if not isinstance(value, dict):
            return super().display(value, options)
        return " / ".join(f"{TARGET_NAMES.get(target, target)}: {sentence}" for target, sentence in value.items())

    # ------------------------------------------------------------------ validation and reports

    def validation_task(self, options):
        if self.writes_updates(options):
            return ValidationSetup("defeasible_atom", {}, UPDATE_VALIDATORS)
        return ValidationSetup("nli_label", {"labels": list(NLI.labels)}, HYPOTHESIS_VOTES)

    def validation_pairs(self, example, value, options):
        if self.writes_updates(options):
            return [
                WrittenPair(
                    target,
                    example.premise,
                    example.hypothesis,
                    update=value[target],
                    update_type=target,
                    atom=example.hypothesis,
                )
                for target in UPDATES
                if target in value
            ]
        return [
            WrittenPair(target, example.premise, value[target], vote=target) for target in HYPOTHESES if target in value
        ]

    def verdict(self, item, votes, options):
        if not self.writes_updates(options):
            return snli_gold_label(votes, item.adjudicated)
        effect = item.final_value
        if effect is None:
            return None
        return "strengthener" if effect > 0 else "weakener" if effect < 0 else "no effect"

    def target_name(self, target):
        return TARGET_NAMES.get(target, str(target))

    def confirmation_rule(self, options):
        if self.writes_updates(options):
            return "the validators' median effect has the update's direction"
        return "SNLI's rule gives it the label it was written for: 3 votes (of 5 in SNLI, the writer's first) agree"

    def demo(self):
        return DemoProject(
            "demo-writing",
            "Demo: write three hypotheses",
            "For each premise, write one sentence that is surely true, one that may be true and one that cannot "
            "be true. Write full, plain sentences of your own.",
            worked_examples("demo-writing"),
            [("jsonl", list(writing_rows()))],
            options={"items_per_page": 1},
        )


TASK = HypothesisWriting()
