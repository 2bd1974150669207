"""Adjudication: authors settle the items the redundancy policy could not (or picked ones), with an
audit trail. Exports and evaluation read Item.final_value, which prefers the adjudicated label."""

from __future__ import annotations

import json

from django.db import transaction
from django.db.models import Q, QuerySet

from annotation.models import AdjudicationRecord, AuditEntry, Item, Project
from annotation.services import access, audit
from annotation.services.answers import SubmissionError, parse_reference


def queue(project: Project) -> QuerySet:
    """Items waiting for an author: unresolved ties and items an author picked."""
    return (
        project.items.filter(is_gold=False)
        .filter(Q(status=Item.Status.ADJUDICATION) | Q(flagged=True))
        .select_related("example", "atom")
        .order_by("id")
    )


def flag(item: Item, user, flagged: bool = True) -> Item:
    access.ensure_can_manage(user, item.project)
    Item.objects.filter(pk=item.pk).update(flagged=flagged)
    item.flagged = flagged
    return item


def adjudicate(item_id: int, user, value, note: str = "") -> AdjudicationRecord:
    """Set an item's final label; `value` in normalised form (slider: a probability). Keeps the history."""
    with transaction.atomic():
        item = Item.objects.select_for_update().select_related("project").get(pk=item_id)
        access.ensure_can_manage(user, item.project)
        if item.is_gold:
            raise SubmissionError("item", "gold check items are not adjudicated")
        final = parse_reference(item.project.task, item.project.options, value)
        if not isinstance(note, str) or len(note) > 5000:
            raise SubmissionError("note", "must be text of at most 5000 characters")
        record = AdjudicationRecord.objects.create(
            item=item, author=user, before=item.final_value, after=final, note=note
        )
        item.adjudicated = final
        item.flagged = False
        item.status = Item.Status.DONE
        item.save(update_fields=["adjudicated", "flagged", "status"])
        audit.record(user, AuditEntry.Action.ADJUDICATE, item.project, item=item.pk, before=record.before, after=final)
    return record


def anonymised_annotations(item: Item) -> list[dict]:
    """The item's annotations with workers shown as A, B, C... in the order they answered."""
    rows = []
    letters: dict[int | None, str] = {}
    for annotation in item.annotations.order_by("id"):
        if annotation.worker_id is None:
            who = "imported"
        else:
            who = letters.setdefault(
                annotation.worker_id, f"Annotator {chr(ord('A') + len(letters) % 26)}{len(letters) // 26 or ''}"
            )
        rows.append(
            {
                "annotator": who,
                "value": annotation.value,
                "raw": annotation.raw,
                "raw_json": json.dumps(annotation.raw, ensure_ascii=False),
                "count": annotation.count,
                "reason": annotation.reason,
                "seconds_spent": annotation.seconds_spent,
                "submitted_at": annotation.submitted_at,
                "late": annotation.late,
            }
        )
    return rows
