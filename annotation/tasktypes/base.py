"""What every task type module provides.

A task type turns one submitted answer into (raw, value), says whether an item needs one more
annotation, aggregates the collected values and names the Krippendorff level of its scale.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from statistics import median
from typing import Any, ClassVar


class AnswerError(ValueError):
    """A submitted answer is malformed or out of range; `field` names what is wrong."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Aggregate:
    value: Any  # None when unresolved
    tied: bool = False


class TaskType(ABC):
    name: ClassVar[str]
    label: ClassVar[str]
    agreement_level: ClassVar[str]  # "nominal", "ordinal" or "interval" (Krippendorff)
    per_atom: ClassVar[bool] = False  # one item per atom of the example instead of one per example
    default_items_per_page: ClassVar[int] = 5
    default_redundancy: ClassVar[int] = 2
    default_max_annotations: ClassVar[int] = 3

    @property
    def template(self) -> str:
        return f"annotation/tasks/{self.name}.html"

    def default_options(self) -> dict:
        return {}

    @abstractmethod
    def parse_answer(self, answer: dict, options: dict) -> tuple[Any, Any]:
        """Validate one answer dict (its "value" key) and return (raw, normalised value)."""

    @abstractmethod
    def disagree(self, raws: list, values: list, options: dict) -> bool:
        """True when the collected annotations call for one more (up to the project's cap)."""

    @abstractmethod
    def aggregate(self, values: list, options: dict) -> Aggregate:
        """The item's label from its collected values."""

    def matches_reference(self, value, reference, delta_divisor: float = 4.0) -> bool:
        """Whether an answer counts as right against a reference (qualification and gold checks)."""
        return value == reference


class NominalTaskType(TaskType):
    """Categorical answers: any disagreement asks for one more; the label is the majority."""

    agreement_level = "nominal"

    @abstractmethod
    def labels(self, options: dict) -> list[str]:
        """The allowed labels, in the order used for ties and exports."""

    def disagree(self, raws, values, options):
        return len(set(values)) > 1

    def aggregate(self, values, options):
        if not values:
            return Aggregate(None)
        counts: dict = {}
        for value in values:
            counts[value] = counts.get(value, 0) + 1
        best = max(counts.values())
        winners = [label for label in self.labels(options) if counts.get(label) == best]
        if len(winners) > 1:
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
    if isinstance(raw, bool) or isinstance(raw, float):
        raise AnswerError(field, f"must be a whole number from {low} to {high}")
    try:
        number = int(str(raw).strip())
    except ValueError:
        raise AnswerError(field, f"must be a whole number from {low} to {high}, got {str(raw)[:40]!r}") from None
    if not low <= number <= high:
        raise AnswerError(field, f"must be from {low} to {high}, got {number}")
    return number


__all__ = ["AnswerError", "Aggregate", "TaskType", "NominalTaskType", "median", "median_or_tie", "require_int"]
