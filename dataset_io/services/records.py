"""What every export knows about an item: its answers in the order given, imported and collected apart, the
excluded ones flagged; its declared aggregate; and each answer with its provenance. The formats
(dataset_io.formats) write these; they never read answers themselves, so every file counts alike.

The policy (docs/formats.md): an aggregate counts imported votes and the answers of workers who were not
excluded (Annotation.objects.counted()); a tie is never broken (the value is null and `tie` is true, unless an
author adjudicated it); items with no counted answer and no adjudicated label are left out unless the export
asks for them; gold checks are quality control and appear only when asked for, flagged with their reference.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from annotation.models import Annotation, Item, Project
from dataset_io.services.provenance import Provenance

BATCH = 500
VOTE_FIELDS = (
    "item_id",
    "worker_id",
    "imported",
    "count",
    "raw",
    "value",
    "reason",
    "seconds_spent",
    "started_at",
    "submitted_at",
    "late",
    "excluded",
    "assignment_id",
    "assignment__instrument__digest",
)


@dataclass
class Vote:
    """One stored answer (an imported row stands for `count` votes)."""

    worker_id: int | None
    imported: bool
    count: int
    raw: Any
    value: Any
    reason: str
    seconds_spent: float | None
    started_at: Any
    submitted_at: Any
    late: bool
    excluded: bool
    page: int | None
    instrument: str | None


@dataclass
class ItemRecord:
    item: Item
    votes: list[Vote] = field(default_factory=list)

    @property
    def pool(self) -> str:
        return "gold" if self.item.is_gold else "data"

    @property
    def imported(self) -> list:
        """The imported votes in the order the source gave them."""
        return [vote.value for vote in self.votes if vote.imported for _ in range(vote.count)]

    @property
    def collected(self) -> list:
        """The values of the collected answers that count (their workers were not excluded), in order."""
        return [vote.value for vote in self.votes if not vote.imported and not vote.excluded]

    @property
    def excluded(self) -> int:
        return sum(1 for vote in self.votes if vote.excluded)

    @property
    def answered(self) -> bool:
        """It has an answer that counts, an imported vote or an adjudicated label."""
        return bool(self.imported or self.collected or self.item.adjudicated is not None)

    def aggregate(self, task) -> dict:
        """The item's label and how it was made: the adjudicated label, else the aggregate of the counted
        answers that the redundancy policy settled; a tie stays null."""
        item = self.item
        adjudicated = item.adjudicated is not None
        tie = not adjudicated and item.status == Item.Status.ADJUDICATION and item.aggregate is None
        return {
            "value": item.final_value,
            "method": "adjudicated" if adjudicated else task.aggregation or None,
            "settled": item.status != Item.Status.OPEN,
            "tie": tie,
            "adjudicated": adjudicated,
            "answers": len(self.imported) + len(self.collected),
            "excluded": self.excluded,
        }


def collected_summary(task, options: dict, values: list) -> dict:
    """The collected answers alone, aggregated as the task type does: {"value", "tie", "answers"} (a tie
    leaves the value null)."""
    result = task.aggregate(list(values), options) if values else None
    return {"value": result.value if result else None, "tie": bool(result and result.tied), "answers": len(values)}


def vote_counts(values: list, order: list) -> tuple[dict, list[int]]:
    """A label counter (most common first, as ChaosNLI writes it) and the counts in `order`."""
    counter = Counter(values)
    return dict(counter.most_common()), [counter.get(label, 0) for label in order]


def item_batches(
    project: Project, include_gold: bool = False, batch: int = BATCH, free_text: str = "keep"
) -> Iterator[list[ItemRecord]]:
    """The study's items in creation order, a batch at a time (keyset on the primary key), each with its
    answers; gold checks only when asked for; the text workers typed kept, omitted or scrubbed (`free_text`,
    ExportOptions). Each format leaves out the items it has nothing to say about."""
    if free_text not in FREE_TEXT_CHOICES:
        raise ValueError(f"free_text must be one of {', '.join(FREE_TEXT_CHOICES)}, not {free_text!r}")
    queryset = Item.objects.filter(project=project).select_related("example", "atom")
    if not include_gold:
        queryset = queryset.filter(is_gold=False)
    for items in keyset_batches(queryset, batch):
        records = list(with_votes(items).values())
        if free_text != "keep":
            for record in records:
                record.votes = [_with_free_text(project.task, vote, free_text) for vote in record.votes]
        yield records


FREE_TEXT_CHOICES = ("keep", "omit", "scrub")
# What a scrub replaces: e-mail addresses, and phone numbers (7 or more digits, with spaces, dots, dashes,
# brackets or a leading +) written into free text. A documented, simple rule: it misses numbers written in
# words and may take a long number that is not a phone's (docs/formats.md).
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
PHONE = re.compile(r"(?<![\w])\+?\(?\d[\d\s().-]{5,}\d(?![\w])")


def scrubbed(text: str) -> str:
    text = EMAIL.sub("[email]", text)
    return PHONE.sub(lambda match: "[phone]" if sum(c.isdigit() for c in match.group()) >= 7 else match.group(), text)


def _scrub_strings(value):
    if isinstance(value, str):
        return scrubbed(value)
    if isinstance(value, list):
        return [_scrub_strings(part) for part in value]
    if isinstance(value, dict):
        return {key: _scrub_strings(part) for key, part in value.items()}
    return value


def _with_free_text(task, vote: Vote, free_text: str) -> Vote:
    """The vote with its typed text omitted or scrubbed (imported votes carry no worker's text)."""
    if vote.imported:
        return vote
    if free_text == "omit":
        raw, value = task.without_free_text(vote.raw, vote.value)
        return replace(vote, raw=raw, value=value, reason="")
    raw, value = task.without_free_text(vote.raw, vote.value)
    if (raw, value) != (vote.raw, vote.value):  # the answer holds typed text: scrub its strings
        raw, value = _scrub_strings(vote.raw), _scrub_strings(vote.value)
    return replace(vote, raw=raw, value=value, reason=scrubbed(vote.reason))


def keyset_batches(queryset, batch: int = BATCH) -> Iterator[list]:
    """The queryset's rows in primary-key order, `batch` at a time, each batch read by keyset (id > the last
    one seen): a large study is streamed without OFFSET scans."""
    queryset = queryset.order_by("pk")
    last_id = 0
    while rows := list(queryset.filter(pk__gt=last_id)[:batch]):
        last_id = rows[-1].pk
        yield rows


def with_votes(items: list[Item]) -> dict[int, ItemRecord]:
    """ItemRecords of these items, with every answer of theirs read in one statement."""
    records = {item.id: ItemRecord(item) for item in items}
    votes = Annotation.objects.filter(item__in=list(records)).order_by("item_id", "id").values_list(*VOTE_FIELDS)
    for row in votes.iterator(chunk_size=5000):
        records[row[0]].votes.append(Vote(*row[1:]))
    return records


def annotation_record(task, options: dict, vote: Vote, provenance: Provenance) -> dict:
    """One answer as every per-annotation export writes it."""
    reason, decided_by = provenance.exclusion(vote.worker_id, vote.excluded)
    return {
        "annotator": provenance.annotator(vote.worker_id),
        "imported": vote.imported,
        "count": vote.count,
        "value": vote.value,
        "raw": vote.raw,
        **({} if vote.imported else task.export_fields(vote.raw, vote.value, options)),
        "reason": vote.reason,
        "submitted_at": None if vote.imported else _iso(vote.submitted_at),
        "started_at": _iso(vote.started_at),
        "seconds_spent": vote.seconds_spent,
        "page": vote.page,
        "late": vote.late,
        "instrument_version": vote.instrument[:16] if vote.instrument else None,
        "qualification_score": provenance.qualification_scores.get(vote.worker_id),
        "worker_reliability": provenance.reliability.get(vote.worker_id),
        "worker_status": provenance.worker_status(vote.worker_id),
        "simulated": vote.worker_id in provenance.simulated,
        "excluded": vote.excluded,
        "excluded_reason": reason,
        "excluded_by": decided_by,
    }


def _iso(moment) -> str | None:
    return moment.isoformat() if moment else None
