"""What every task type answers. Callers (views, services, API, commands, templates) ask the project's task
type; they never compare its name.

A task type turns one submitted answer into (raw, value), parses reference answers (adjudication,
qualification and gold items), says whether an item needs one more annotation, aggregates the collected
values, names its agreement scale, grades qualification attempts, orders a page, gives its template the
context it needs, draws its report plot and tables, lists the import and export formats that fit it,
declares its own settings and writes its demo project; a task type whose answers are validated in a linked
project (written hypotheses) also says by what, with which pairs, and how to read the verdict.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from common.errors import FieldError
from common.schema import Setting
from common.vocabulary import NLI, LabelError, to_label


class AnswerError(FieldError):
    """A submitted answer is malformed or out of range; `field` names what is wrong."""


@dataclass(frozen=True)
class Aggregate:
    value: Any  # None when unresolved
    tied: bool = False


class Choice(NamedTuple):
    """One answer button: the stored value, the name shown and the key that picks it."""

    value: Any
    name: str
    key: str


@dataclass(frozen=True)
class ValidationSetup:
    """How a linked project validates this task type's answers: a project of `task_type` with `options`,
    each pair getting `redundancy` votes (the writer's own vote among them, where pairs carry one)."""

    task_type: str
    options: dict
    redundancy: int


@dataclass(frozen=True)
class WrittenPair:
    """One written sentence as the example its validators see. `target` is what it was written for; `atom`,
    for a per-atom validation project, the one atom rated; `vote`, the writer's own vote, counted first
    (None: the writer's intent is not a vote of the validation scale)."""

    target: str
    premise: str
    hypothesis: str
    update: str = ""
    update_type: str = ""
    atom: str = ""
    vote: Any = None
    # What the validators are shown beyond the pair (an explanation and its highlights): the example's
    # source_data. Empty: the pair keeps SNLI's shape.
    data: dict = field(default_factory=dict)


@dataclass(frozen=True)
class DemoProject:
    """A demo project written for this project: its settings and the files imported into it, in order."""

    slug: str
    title: str
    instructions: str
    worked_examples: list[dict]
    imports: list[tuple[str, list[dict]]]  # (import format, rows)
    options: dict = field(default_factory=dict)
    # JSON Lines rows imported as hidden gold checks, and as the items of the study's qualification test.
    gold: list[dict] = field(default_factory=list)
    qualification: list[dict] = field(default_factory=list)


class TaskType(ABC):
    name: ClassVar[str]
    label: ClassVar[str]
    # "nominal", "ordinal" or "interval" (Krippendorff); None where agreement does not apply, and then
    # `agreement_unavailable` says why.
    agreement_level: ClassVar[str | None]
    agreement_unavailable: ClassVar[str] = ""
    per_atom: ClassVar[bool] = False  # one item per atom of the example instead of one per example
    # Items carry a distribution of many categorical votes: the split-half JSD applies.
    label_distributions: ClassVar[bool] = False
    default_items_per_page: ClassVar[int] = 5
    default_redundancy: ClassVar[int] = 2
    default_max_annotations: ClassVar[int] = 3
    # How aggregate() makes an item's label, as exports declare it ("majority", "median"; "" for none).
    aggregation: ClassVar[str] = ""
    # Answers are probabilities (a slider): rows may carry a reference probability, and U-SNLI's CSV fits.
    probability_answers: ClassVar[bool] = False
    # Every example needs an update (P, H, U): formats without one (SNLI) do not fit.
    uses_updates: ClassVar[bool] = False
    # Settings of this task type only, kept in Project.options (or a column where `column=True`).
    settings: ClassVar[tuple[Setting, ...]] = ()
    # Built-in guidance (Markdown) workers read under the study's own instructions, and whether the task type's
    # protocol lets the author rewrite it (else the author is shown it read-only): the study's `guidance`
    # setting (annotation.services.study_settings) takes them as its default and says whether it is fixed.
    guidance: ClassVar[str] = ""
    guidance_adjustable: ClassVar[bool] = False
    # What the API's answer `value` is, for the schema's documentation.
    answer_help: ClassVar[str] = ""
    # Per-atom task types: the field of an atom row (atoms import) that holds a gold atom's reference.
    atom_reference_field: ClassVar[str] = ""
    # False declares that the task type has no demo study (otherwise demo() must give one).
    has_demo: ClassVar[bool] = True
    # Answers give labels with explanations ({"labels": {label: {"explanation", ...}}, "idk"}): the report
    # reads them for label variation (label_variation/services/variation.py).
    explains_labels: ClassVar[bool] = False

    @property
    def template(self) -> str:
        return f"annotation/tasks/{self.name}.html"

    def import_purposes(self) -> tuple[str, ...]:
        """What an import may add to a study of this type (annotation.services.pools' names): its data, hidden
        gold checks, and the items of its qualification test. A per-atom type's test items are atoms, picked
        on the test's page: an import has no atoms to give them."""
        return ("data", "gold") if self.per_atom else ("data", "gold", "qualification")

    def default_options(self) -> dict:
        return {setting.name: setting.default for setting in self.settings if not setting.column}

    def check_settings(self, options: dict) -> dict[str, str]:
        """Settings that are wrong together ({setting: message}); each alone is checked by the schema."""
        return {}

    def source_fields(self, options: dict) -> tuple[str, ...] | None:
        """What an item shows of an imported row: None keeps the whole row; a tuple of example fields keeps
        only those, one example per distinct text (a writing task: the rest is what workers write)."""
        return None

    def example_labels(self, options: dict) -> tuple[str, ...]:
        """The labels an imported example row may carry (its label column, in any spelling the vocabulary
        knows, or through the import's label mapping); any other value refuses the file. Default: the pair's
        NLI relation."""
        return NLI.labels

    def options_from_import(self, options: dict, label_set: tuple[str, ...]) -> dict:
        """The settings an import sets from what its rows carry ({name: value}), given the label set of
        the rows' imported votes; by default each setting declaring `import_source="label_set"` takes it."""
        return {setting.name: list(label_set) for setting in self.settings if setting.import_source == "label_set"}

    def writes_updates(self, options: dict) -> bool:
        """Workers write updates of the example's hypothesis (the delta-NLI collection protocol)."""
        return False

    def without_free_text(self, raw, value) -> tuple[Any, Any]:
        """A stored answer with the text its writer typed into it removed (an erasure, annotation.services.
        participants): what is left is what the answer chose. Answers without free text come back as they are."""
        return raw, value

    def export_fields(self, raw, value, options: dict) -> dict:
        """Fields of one answer worth exporting beside its raw and normalised value (e.g. a slider's
        position and probability), in per-annotation records."""
        return {}

    # ------------------------------------------------------------------ answers and references

    @abstractmethod
    def parse_answer(self, answer: dict, options: dict) -> tuple[Any, Any]:
        """Validate one answer dict (its "value" key) and return (raw, normalised value)."""

    @abstractmethod
    def example_answers(self, options: dict) -> list:
        """A few valid answer values (what a submit's "value" carries), in the spellings workers and API
        clients may use: tests, fuzzers and the demo's simulated workers answer with them."""

    def parse_reference(self, value, options: dict):
        """A reference or final label (adjudication, qualification, gold) in normalised form."""
        return self.parse_answer({"value": value}, options)[1]

    def gold_reference(self, example, atom, options: dict):
        """The reference answer an imported row carries, for rows imported as gold or qualification items;
        None when the row has none."""
        return None

    def check_answer(self, item, value, options: dict, worker_id: int) -> None:  # noqa: B027 - a hook
        """Checks of one parsed answer by worker `worker_id` against its item (its texts, the answers stored
        for it before), run inside the submit with the item locked; raises AnswerError."""

    def matches_reference(self, value, reference, rules=None) -> bool:
        """Whether an answer counts as right against a reference (qualification and gold checks)."""
        return value == reference

    # What a qualification attempt's "score" (in grade()'s details) measures, as the worker reads it.
    qualification_score: ClassVar[str] = "share of the reference answers matched"

    def grade(self, answers: list, references: list, easy: list[bool], rules) -> tuple[bool, dict]:
        """A qualification attempt: share of reference answers matched against `rules.min_accuracy`."""
        correct = sum(self.matches_reference(a, r, rules) for a, r in zip(answers, references))
        accuracy = correct / len(references)
        passed = accuracy >= rules.min_accuracy
        unmet = (
            []
            if passed
            else [
                f"{correct} of {len(references)} answers matched the references; {rules.min_accuracy:.0%} must match."
            ]
        )
        return passed, {
            "score": accuracy,
            "pass_mark": rules.min_accuracy,
            "accuracy": accuracy,
            "unmet": unmet,
            "min_accuracy": rules.min_accuracy,
            "correct": correct,
            "items": len(references),
        }

    # ------------------------------------------------------------------ collection

    @abstractmethod
    def disagree(self, raws: list, values: list, options: dict) -> bool:
        """True when the collected annotations call for one more (up to the project's cap)."""

    @abstractmethod
    def aggregate(self, values: list, options: dict) -> Aggregate:
        """The item's label from its collected values."""

    def categories(self, options: dict) -> list | None:
        """The ordered values of a categorical scale (agreement, distributions); None for a continuous one."""
        return None

    def difference_axis(self, options: dict) -> tuple[str, tuple[float, float] | None]:
        """The agreement report's axis for ordinal and interval scales: what the mean absolute difference
        between two annotators' answers is of, and its range (None: from the data)."""
        return "mean absolute difference between two annotators' answers", None

    def choices(self, options: dict) -> list[Choice]:
        """The answer buttons, in order; empty for a task answered otherwise (a slider, a text)."""
        return []

    def order_page(self, items: list) -> list:
        """The order a claimed page shows its items in."""
        return items

    def widget_context(self, options: dict) -> dict:
        """What the task's template needs besides the items."""
        return {"choices": self.choices(options)}

    def display(self, value, options: dict) -> str:
        """A stored value as people read it."""
        if value is None:
            return "—"
        names = {choice.value: choice.name for choice in self.choices(options)}
        return names.get(value, str(value))

    # ------------------------------------------------------------------ reports and demo

    def report_plot(self, settled: list[tuple]) -> dict | None:
        """The task's own plot on the agreement report, from (example id, source label, update type,
        final value) rows of settled items: {"title", "svg", "empty"}, or None when it has none."""
        return None

    def report_tables(self, counted_values: Callable[[], dict[int, list]], options: dict) -> list[dict]:
        """The task's own tables on the agreement report: {"title", "columns", "rows", "empty", "note"}.
        `counted_values()` reads the values of the answers that count, by item id (a query: only when asked)."""
        return []

    def explained_labels(self, value) -> dict[str, dict]:
        """The labels a stored answer explains, {label: {"explanation", "premise_spans", "hypothesis_spans"}};
        empty for a task type whose answers explain nothing (`explains_labels` false) or an "I don't know"."""
        if not self.explains_labels or not isinstance(value, dict):
            return {}
        return value.get("labels", {})

    # ------------------------------------------------------------------ validation in a linked project

    def validation_task(self, options: dict) -> ValidationSetup | None:
        """The project that validates this task type's answers; None: its answers are not sent anywhere."""
        return None

    def validators_per_pair(self, options: dict, redundancy: int) -> int | None:
        """How many validators each written pair gets when that follows from this study's writers (each
        item's `redundancy` writers judging one another's pairs); None: the validation_task's fixed number."""
        return None

    def peer_majority(self, options: dict) -> bool:
        """Whether the study's author picked this app's peer-majority rule for explanations nobody in an item
        self-judged (metrics.variation.classify_item); VariErr's rule (undecided) otherwise."""
        return False

    def target_name(self, target) -> str:
        """A target (what a written answer was meant to be) as the report names it."""
        return str(target)

    def confirmation_rule(self, options: dict) -> str:
        """When a validated pair counts as confirmed, as the report explains it."""
        return "the validators' verdict is the target it was written for"

    def sends_on_submit(self, options: dict) -> bool:
        """Each submitted page's pairs go to validation at once (LINK_SETTINGS' auto_send)."""
        return bool(options.get("auto_send"))

    def validation_pairs(self, example, value, options: dict) -> list[WrittenPair]:
        """The pairs one stored answer sends to validation."""
        return []

    def verdict(self, item, votes: list, options: dict):
        """What the validators of a settled validation item decided, as one of this project's targets (or
        what else they decided), from the item and its votes in order."""
        return None

    def simulated_answer(self, item, worker_number: int, rng, options: dict):
        """A plausible answer to `item` (the submitted "value") from the demo's simulated worker
        `worker_number`, drawn with `rng` (random.Random): demo studies show their pages filled in. By
        default one of the example answers."""
        return rng.choice(self.example_answers(options))

    def demo(self) -> DemoProject | None:
        return None

    def demos(self) -> list[DemoProject]:
        """Every demo study of this task type (its demo, and any a task type adds to show more)."""
        demo = self.demo()
        return [demo] if demo is not None else []


# Redundancy strategies of categorical task types: the default asks for one more answer on any disagreement;
# STABILITY asks for one more until the item's label distribution is stable (metrics.stability).
STABILITY = "stability"
# MAJORITY_DECIDED asks for one more until the majority label can no longer change within `decided_within`
# labels (metrics.stability.majority_decided): the label fixed-k collection would give, for fewer labels.
MAJORITY_DECIDED = "majority_decided"
DEFAULT_DECIDED_WITHIN = 5


def decided_within(options: dict) -> int:
    """The study's `decided_within` (the majority-decided strategy's fixed number of labels)."""
    return int(options.get("decided_within", DEFAULT_DECIDED_WITHIN))


# About the mean error of 10 labels an item on ChaosNLI-SNLI (benchmarks/redundancy.py, docs/studies.md).
DEFAULT_STABILITY_THRESHOLD = 0.15
REDUNDANCY_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "redundancy_strategy",
        "choice",
        "disagreement",
        "when an item gets one more answer, after the redundancy and up to the maximum annotations",
        choices=(
            ("disagreement", "One more whenever the answers disagree"),
            (STABILITY, "One more until the label distribution is stable"),
            (MAJORITY_DECIDED, "One more until the majority label is decided"),
        ),
    ),
    Setting(
        "decided_within",
        "int",
        DEFAULT_DECIDED_WITHIN,
        "majority-decided strategy: the fixed number of labels whose majority the study wants; an item stops "
        "once more answers, up to this many in all, could no longer change its majority (set the redundancy "
        "below it, e.g. 3 for 5, and the maximum annotations to at least it)",
        minimum=1,
        maximum=100,
    ),
    Setting(
        "stability_threshold",
        "float",
        DEFAULT_STABILITY_THRESHOLD,
        "stability strategy: an item is stable once the expected JS distance between its collected label "
        "distribution and its full one is at most this",
        minimum=0.01,
        maximum=0.5,
    ),
)


class NominalTaskType(TaskType):
    """Categorical answers: any disagreement asks for one more (or, with the stability strategy, every item
    gets one more until its label distribution is stable); the label is the majority."""

    agreement_level = "nominal"
    aggregation = "majority"
    settings = REDUNDANCY_SETTINGS

    @abstractmethod
    def labels(self, options: dict) -> list[str]:
        """The allowed labels, in the order used for ties and exports."""

    def categories(self, options):
        return list(self.labels(options))

    def parse_answer(self, answer, options):
        value = parse_label(answer.get("value", ""), self.labels(options))
        return {"value": value}, value

    def disagree(self, raws, values, options):
        if options.get("redundancy_strategy") == STABILITY:
            return not self.distribution_stable(values, options)
        if options.get("redundancy_strategy") == MAJORITY_DECIDED:
            from metrics.stability import majority_decided  # numpy: not at start-up

            counts = [[values.count(label) for label in self.labels(options)]]
            return not bool(majority_decided(counts, decided_within(options))[0])
        return len(set(values)) > 1

    def distribution_stable(self, values, options) -> bool:
        """The stability strategy's rule (metrics.stability.is_stable without its bounds: the redundancy service
        asks only between the project's redundancy and its maximum annotations)."""
        from metrics.stability import expected_error  # numpy: not at start-up

        counts = [[values.count(label) for label in self.labels(options)]]
        return bool(expected_error(counts)[0] <= options.get("stability_threshold", DEFAULT_STABILITY_THRESHOLD))

    def aggregate(self, values, options):
        return majority(values, self.labels(options))

    def example_answers(self, options):
        labels = list(self.labels(options))
        return [*labels, labels[0].upper(), f" {labels[-1]} "]  # any case, spaces around

    def simulated_answer(self, item, worker_number, rng, options):
        """The row's own label most of the time (an atom's validity where it has one), another now and then."""
        labels = list(self.labels(options))
        known = item.atom.validity if item.atom is not None else item.example.source_label
        return known if known in labels and rng.random() < 0.7 else rng.choice(labels)


class OrdinalTaskType(TaskType):
    """A rating scale of whole numbers: one more answer when two answers are two or more steps apart; the
    label is the median (an even count split between two values is a tie). A subclass gives its scale."""

    agreement_level = "ordinal"
    aggregation = "median"
    # What annotators give, as the report names it ("ratings", "effects").
    rated: ClassVar[str] = "ratings"

    @abstractmethod
    def scale(self, options: dict) -> dict[int, str]:
        """Each value of the scale and its name, e.g. {1: "Certainly false", ..., 5: "Certainly true"}."""

    def categories(self, options):
        return sorted(self.scale(options))

    def choices(self, options):
        return [
            Choice(value, self.choice_name(value, name), str(number))
            for number, (value, name) in enumerate(sorted(self.scale(options).items()), start=1)
        ]

    def choice_name(self, value: int, name: str) -> str:
        return f"{value} {name}"

    def parse_answer(self, answer, options):
        values = self.categories(options)
        value = require_int(answer, "value", values[0], values[-1])
        if value not in values:
            raise AnswerError("value", f"must be one of {', '.join(map(str, values))}, got {value}")
        return {"value": value}, value

    def example_answers(self, options):
        values = self.categories(options)
        return [*values, str(values[-1]), f" {values[0]} "]  # numbers given as text are read too

    def disagree(self, raws, values, options):
        return max(values) - min(values) >= 2

    def aggregate(self, values, options):
        return median_or_tie(values)

    def difference_axis(self, options):
        values = self.categories(options)
        return f"mean absolute difference between two annotators' {self.rated}", (0.0, float(values[-1] - values[0]))


def parse_label(value, labels) -> str:
    """A label answer in any spelling the vocabulary knows, as the project's label."""
    try:
        return to_label(value, labels)
    except LabelError as error:
        raise AnswerError("value", str(error)) from None


def majority(values: list, order: list) -> Aggregate:
    """The most frequent value; a tie for the most is unresolved."""
    if not values:
        return Aggregate(None)
    counts: dict = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    best = max(counts.values())
    winners = [label for label in order if counts.get(label) == best]
    if len(winners) != 1:
        return Aggregate(None, tied=True)
    return Aggregate(winners[0])


def median_or_tie(values: list[int]) -> Aggregate:
    """Median of ordinal values; an even count whose middle values differ is an unresolved tie."""
    if not values:
        return Aggregate(None)
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2 == 0 and ordered[middle - 1] != ordered[middle]:
        return Aggregate(None, tied=True)
    return Aggregate(ordered[middle] if len(ordered) % 2 else ordered[middle - 1])


def require_int(answer: dict, field: str, low: int, high: int) -> int:
    raw = answer.get("value")
    if raw is None or raw == "":
        raise AnswerError(field, "an answer is required")
    if isinstance(raw, (bool, float)):
        raise AnswerError(field, f"must be a whole number from {low} to {high}")
    try:
        number = int(str(raw).strip())
    except ValueError:
        raise AnswerError(field, f"must be a whole number from {low} to {high}, got {str(raw)[:40]!r}") from None
    if not low <= number <= high:
        raise AnswerError(field, f"must be from {low} to {high}, got {number}")
    return number


def require_probability(value, field: str = "value") -> float:
    """A probability from 0 to 1 given as a number or as text."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise AnswerError(field, "must be a probability from 0 to 1")
    try:
        probability = float(value)
    except ValueError:
        raise AnswerError(field, "must be a probability from 0 to 1") from None
    if not (math.isfinite(probability) and 0.0 <= probability <= 1.0):
        raise AnswerError(field, "must be a probability from 0 to 1")
    return probability


# Settings of task types whose answers are validated in a linked project (TaskType.validation_task).
LINK_SETTINGS = (
    Setting(
        "validation_project",
        "project",
        None,
        "the slug of the project that validates the written pairs (empty: the first send creates one)",
        column=True,
    ),
    Setting(
        "auto_send",
        "bool",
        False,
        "send each page's written pairs to validation when it is submitted",
        label="Send to validation on submit",
    ),
)


__all__ = [
    "LINK_SETTINGS",
    "REDUNDANCY_SETTINGS",
    "Aggregate",
    "AnswerError",
    "Choice",
    "DemoProject",
    "NominalTaskType",
    "OrdinalTaskType",
    "TaskType",
    "ValidationSetup",
    "WrittenPair",
    "majority",
    "median_or_tie",
    "parse_label",
    "require_int",
    "require_probability",
]
