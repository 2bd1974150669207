"""Validating a page of answers: one rule for the HTML form, the API and qualification tests."""

import json

from annotation.tasktypes import AnswerError, TaskType

# Per-field limits of a submitted answer (docs/api.md): its reason, and its value as stored (the task types
# check their own texts more tightly, e.g. max_characters; this bounds what none of them reads).
MAX_REASON_CHARS = 2000
MAX_ANSWER_CHARS = 50_000
MAX_SECONDS = 86400 * 7  # time spent on one item: under a week


class SubmissionError(Exception):
    """A submission was refused; nothing was stored. `field` names what is wrong."""

    def __init__(self, field: str, message: str, status: int = 400):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.status = status


def parse_answers(task: TaskType, options: dict, item_ids: list[int], answers: dict) -> dict[int, tuple]:
    """Validate a page of answers without touching the database: {item_id: (raw, value, reason, seconds)}."""
    if not isinstance(answers, dict):
        raise SubmissionError("answers", "must be an object keyed by item id")
    by_id: dict[int, dict] = {}
    for key, answer in answers.items():
        # The schema cannot state an object's keys (OpenAPI 3.0): a key naming no item of the page conflicts
        # with the page, whatever it holds.
        try:
            item_id = int(key)
        except (TypeError, ValueError):
            raise SubmissionError(f"answers[{str(key)[:20]}]", "is not an item id", status=409) from None
        if item_id not in item_ids:
            raise SubmissionError(f"answers[{item_id}]", "is not an item of this page", status=409)
        if not isinstance(answer, dict):
            answer = {"value": answer}
        by_id[item_id] = answer
    missing = [item_id for item_id in item_ids if item_id not in by_id]
    if missing:
        raise SubmissionError(f"answers[{missing[0]}]", "every item on the page needs an answer")
    parsed = {}
    for item_id in item_ids:
        answer = by_id[item_id]
        try:
            raw, value = task.parse_answer(answer, options)
        except AnswerError as exc:
            raise SubmissionError(f"answers[{item_id}].{exc.field}", exc.message) from None
        if len(json.dumps(raw)) > MAX_ANSWER_CHARS:
            raise SubmissionError(f"answers[{item_id}].value", f"is longer than {MAX_ANSWER_CHARS:,} characters")
        seconds = answer.get("seconds")
        if seconds not in (None, ""):
            try:
                seconds = float(seconds)
            except (TypeError, ValueError, OverflowError):  # OverflowError: an int past float's range
                raise SubmissionError(f"answers[{item_id}].seconds", "must be a number of seconds") from None
            if not 0 <= seconds < MAX_SECONDS:
                raise SubmissionError(f"answers[{item_id}].seconds", "must be from 0 to a week")
        else:
            seconds = None
        reason = answer.get("reason", "") if isinstance(answer.get("reason", ""), str) else ""
        if "\x00" in reason:  # PostgreSQL stores no NUL in text: refused alike on every database
            raise SubmissionError(f"answers[{item_id}].reason", "contains a NUL character")
        if len(reason) > MAX_REASON_CHARS:
            raise SubmissionError(f"answers[{item_id}].reason", f"is longer than {MAX_REASON_CHARS:,} characters")
        parsed[item_id] = (raw, value, reason, seconds)
    return parsed


def check_against_items(task: TaskType, options: dict, items: list, parsed: dict[int, tuple], worker_id: int) -> None:
    """The task type's checks of each parsed answer of worker `worker_id` against its item (its texts, what
    was stored for it before, who wrote it); raises SubmissionError naming the item and the field."""
    for item in items:
        try:
            task.check_answer(item, parsed[item.id][1], options, worker_id)
        except AnswerError as exc:
            raise SubmissionError(f"answers[{item.id}].{exc.field}", exc.message) from None


def parse_reference(task: TaskType, options: dict, value):
    """A reference or final label in normalised form, as the task type reads it for this project."""
    try:
        return task.parse_reference(value, options)
    except AnswerError as exc:
        raise SubmissionError(exc.field, exc.message) from None
