"""Drafts: the unsent answers of an open page, saved by the page as the worker goes (a reload, a lost
connection or another tab restores them). A draft is never an Annotation and is never validated as one:
half-written answers are fine. Only its shape is checked, so a bad payload stores nothing. Saving a draft
is also the page's heartbeat (see assignments.release_abandoned)."""

from __future__ import annotations

import json
import math

from django.db import transaction
from django.utils import timezone

from annotation.models import Assignment, PageDraft
from annotation.services.answers import SubmissionError
from annotation.services.assignments import locked_open_page

MAX_DRAFT_BYTES = 100_000
MAX_TEXT = 5000  # one answer's text (a written sentence or a reason); the submit applies the real limits
ANSWER_KEYS = ("value", "reason", "seconds", "reasons")
MAX_REASONS, MAX_REASON_TAG = 36, 60  # the ticked disagreement reasons: at most a taxonomy's categories, its tags


def check_draft(data, item_ids: set[int]) -> dict:
    """The draft as stored ({item id: {value, reason, seconds, reasons}}); raises SubmissionError naming the field."""
    if not isinstance(data, dict):
        raise SubmissionError("answers", "must be an object of item id -> answer")
    if len(json.dumps(data)) > MAX_DRAFT_BYTES:
        raise SubmissionError("answers", f"is larger than {MAX_DRAFT_BYTES:,} bytes")
    for key, answer in data.items():
        where = f"answers[{key}]"
        if not (isinstance(key, str) and key.isdigit() and int(key) in item_ids):
            raise SubmissionError(where, "is not an item of this page")
        if not isinstance(answer, dict):
            raise SubmissionError(where, "must be an object with value, reason, seconds or reasons")
        unknown = sorted(set(answer) - set(ANSWER_KEYS))
        if unknown:
            raise SubmissionError(f"{where}.{unknown[0]}", "is not a field of an answer")
        _check_value(f"{where}.value", answer.get("value"))
        reason = answer.get("reason")
        if reason is not None and not (isinstance(reason, str) and len(reason) <= MAX_TEXT):
            raise SubmissionError(f"{where}.reason", f"must be text of at most {MAX_TEXT} characters")
        ticked = answer.get("reasons")
        if ticked is not None and not (
            isinstance(ticked, list)
            and len(ticked) <= MAX_REASONS
            and all(isinstance(tag, str) and len(tag) <= MAX_REASON_TAG for tag in ticked)
        ):
            raise SubmissionError(f"{where}.reasons", f"must be a list of at most {MAX_REASONS} reasons")
        value = answer.get("value")
        texts = [reason, *(ticked or []), *([*value, *value.values()] if isinstance(value, dict) else [value])]
        if any(isinstance(text, str) and "\x00" in text for text in texts):  # PostgreSQL's jsonb stores no NUL
            raise SubmissionError(where, "contains a NUL character")
        seconds = answer.get("seconds")
        if seconds is not None and not (_is_number(seconds) and 0 <= seconds <= 86400):
            raise SubmissionError(f"{where}.seconds", "must be a number of seconds from 0 to 86400")
    return data


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_value(where: str, value) -> None:
    if value is None or _is_number(value) or (isinstance(value, str) and len(value) <= MAX_TEXT):
        return
    if isinstance(value, dict) and all(
        isinstance(part, str) and isinstance(text, str) and len(text) <= MAX_TEXT for part, text in value.items()
    ):
        return  # an answer in parts (one sentence per target)
    raise SubmissionError(where, f"must be a number, a text of at most {MAX_TEXT} characters or an object of texts")


def save_draft(assignment_id: int, worker, data, now=None) -> Assignment:
    """Store the page's draft (replacing the previous one) and note the page as alive; returns the page."""
    now = now or timezone.now()
    with transaction.atomic():
        assignment = locked_open_page(assignment_id, worker, now)
        item_ids = set(assignment.claims.values_list("item_id", flat=True))
        PageDraft.objects.update_or_create(assignment=assignment, defaults={"data": check_draft(data, item_ids)})
        assignment.last_seen_at = now
        assignment.save(update_fields=["last_seen_at"])
    return assignment


def draft_of(assignment: Assignment) -> dict:
    if assignment.last_seen_at is None:  # no draft was ever saved for this page (a save notes the page alive)
        return {}
    draft = PageDraft.objects.filter(assignment=assignment).first()
    return draft.data if draft else {}
