"""Every label spelling the data formats use, mapped to the labels projects store.

Projects store one canonical spelling per label set:

    3-way NLI            "e", "n", "c"
    alpha-NLI            "1", "2"      (which of two hypotheses is likelier)
    delta-NLI updates    "strengthener", "weakener"

The formats spell them otherwise: SNLI's `gold_label` and `annotator_labels` use the long names and "-" for
"no majority"; ChaosNLI uses "e"/"n"/"c" (alphaNLI: the numbers 1 and 2); U-SNLI's `nli` column numbers
them 0 = contradiction, 1 = neutral, 2 = entailment. Numbers mean different things in different releases
(MNLI on the Hub numbers entailment 0), so a numbering applies only where the caller names the format's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


class LabelError(ValueError):
    """A value that is no spelling of any allowed label; the message says which labels are allowed."""


@dataclass(frozen=True)
class LabelSet:
    key: str
    labels: tuple[str, ...]
    names: Mapping[str, str]  # label -> the name shown to people
    spellings: Mapping[str, str] = field(default_factory=dict)  # lower-case spelling -> label

    def name(self, label: str) -> str:
        return self.names.get(label, label)


NLI = LabelSet(
    "nli",
    ("e", "n", "c"),
    {"e": "Entailment", "n": "Neutral", "c": "Contradiction"},
    {"entailment": "e", "neutral": "n", "contradiction": "c", "entailed": "e", "contradicted": "c"},
)
ALPHA_NLI = LabelSet("alphanli", ("1", "2"), {"1": "Hypothesis 1", "2": "Hypothesis 2"})
UPDATE = LabelSet("update", ("strengthener", "weakener"), {"strengthener": "Strengthener", "weakener": "Weakener"})
LABEL_SETS = {label_set.key: label_set for label_set in (NLI, ALPHA_NLI, UPDATE)}

# U-SNLI's `nli` column (the release's README: 0 contradiction, 1 neutral, 2 entailment).
USNLI_NUMBERING = {"0": "c", "1": "n", "2": "e"}
# LiveNLI's `multilabel` column answers "is the statement true?"; a row joins several with " | ".
LIVENLI_ANSWERS = {"true": "e", "either": "n", "false": "c"}
LIVENLI_SEPARATOR = "|"
# SNLI writes this gold label where no label has 3 of the 5 votes.
NO_GOLD = "-"
# The long names SNLI-style files write.
LONG_NAMES = {"e": "entailment", "n": "neutral", "c": "contradiction"}


def label_set_of(labels: Sequence[str]) -> LabelSet:
    """The label set whose labels are exactly `labels` (in any order)."""
    for label_set in LABEL_SETS.values():
        if set(label_set.labels) == set(labels):
            return label_set
    raise LabelError(
        f"unknown label set {list(labels)}; known: " + "; ".join(", ".join(s.labels) for s in LABEL_SETS.values())
    )


def to_label(value, labels: Sequence[str], numbering: Mapping[str, str] | None = None) -> str:
    """The canonical label among `labels` that `value` spells.

    Accepts the label itself, its long name or any known spelling in any case, and, where `numbering` is
    given, the format's number for it. Raises LabelError naming the allowed labels.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise LabelError(f"must be one of {', '.join(labels)}")
    text = str(value).strip()
    lowered = text.lower()
    if numbering is not None and text in numbering:
        candidate = numbering[text]
    elif text in labels:
        candidate = text
    else:
        candidate = next(
            (label_set.spellings[lowered] for label_set in LABEL_SETS.values() if lowered in label_set.spellings),
            lowered,
        )
    if candidate not in labels:
        shown = text if len(text) <= 20 else text[:20] + "…"
        raise LabelError(f"must be one of {', '.join(labels)}, got {shown!r}")
    return candidate


def livenli_labels(multilabel: str) -> list[str]:
    """The 3-way labels of a LiveNLI `multilabel` cell ("true | either" -> ["e", "n"]); LabelError otherwise."""
    return [to_label(answer, NLI.labels, numbering=LIVENLI_ANSWERS) for answer in multilabel.split(LIVENLI_SEPARATOR)]


def label_mapping(pairs, labels: Sequence[str]) -> dict[str, str]:
    """A label mapping an import names ("0=contradiction", or {"0": "contradiction"}) as {value: label}, each
    target read as a spelling of one of `labels`. Raises LabelError naming the pair at fault. Values are
    matched as the file writes them (after surrounding spaces), so a mapping applies to exactly those values."""
    if isinstance(pairs, Mapping):
        pairs = [f"{value}={target}" for value, target in pairs.items()]
    mapping: dict[str, str] = {}
    for pair in pairs:
        value, sep, target = str(pair).partition("=")
        if not sep or not value.strip() or not target.strip():
            raise LabelError(f"a label mapping is VALUE=LABEL, got {str(pair)[:40]!r}")
        try:
            mapping[value.strip()] = to_label(target.strip(), labels)
        except LabelError as error:
            raise LabelError(
                f"the mapping {value.strip()}={target.strip()} names no label of this study: {error}"
            ) from None
    return mapping


def label_set_names(labels: Sequence[str]):
    """A function giving the name people read for each of `labels` (whatever label sets they come from)."""
    names = {label: label_set.name(label) for label_set in LABEL_SETS.values() for label in label_set.labels}
    return lambda label: names.get(label, label)


def long_name(label: str) -> str:
    """The long name SNLI-style files write for a 3-way label ("e" -> "entailment"); other labels as they are."""
    return LONG_NAMES.get(label, label)


def snli_gold_label(votes: Sequence[str], adjudicated: str | None = None) -> str:
    """SNLI's gold rule: the label at least 3 annotators gave (of the 5 SNLI collected: the writer's intended
    label and 4 validators'), when no other label has as many; NO_GOLD otherwise. A label an author set by
    adjudication overrides the rule."""
    if adjudicated is not None:
        return adjudicated
    counts: dict[str, int] = {}
    for vote in votes:
        if vote != NO_GOLD:
            counts[vote] = counts.get(vote, 0) + 1
    ranked = sorted(counts.values(), reverse=True)
    if not ranked or ranked[0] < 3 or (len(ranked) > 1 and ranked[1] == ranked[0]):
        return NO_GOLD
    return next(label for label, count in counts.items() if count == ranked[0])
