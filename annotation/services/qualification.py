"""Qualification tests: a page of reference items; pass rules from REFERENCE.md, all configurable."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import QualificationAttempt, QualificationItem, QualificationTest
from annotation.services.answers import SubmissionError, parse_answers, parse_reference
from annotation.tasktypes import get_task_type


class QualificationError(ValueError):
    pass


def create_test(slug: str, task_type: str, rows: list[dict], title: str = "", options: dict | None = None, **rules) -> QualificationTest:
    """rows: {"premise", "hypothesis", "update"?, "atom"?, "reference", "easy"?}; references read as the task
    type reads a final label (slider: a probability; nli: e/n/c; validity: valid/invalid; defeasible: -2..2).
    `options`: the task type's settings the items are answered with (e.g. a project's label set)."""
    task = get_task_type(task_type)
    options = {**task.default_options(), **(options or {})}
    if not rows:
        raise QualificationError("a qualification test needs at least one reference item")
    items = []
    for number, row in enumerate(rows, start=1):
        for field in ("premise", "hypothesis", "reference"):
            if row.get(field) in (None, ""):
                raise QualificationError(f"row {number}, field {field!r}: is missing")
        try:
            reference = parse_reference(task, options, row["reference"])
        except SubmissionError as exc:
            raise QualificationError(f"row {number}, field 'reference': {exc.message}") from None
        items.append(
            QualificationItem(
                premise=row["premise"], hypothesis=row["hypothesis"], update=row.get("update", ""),
                atom_text=row.get("atom", ""), reference=reference, easy=bool(row.get("easy")), order=number,
            )
        )
    with transaction.atomic():
        test = QualificationTest.objects.create(slug=slug, title=title or slug, task_type=task_type, options=options, **rules)
        for item in items:
            item.test = test
        QualificationItem.objects.bulk_create(items)
    return test


def has_passed(test: QualificationTest, worker) -> bool:
    return QualificationAttempt.objects.filter(test=test, worker=worker, passed=True).exists()


def attempts_left(test: QualificationTest, worker) -> int:
    return max(0, test.max_attempts - QualificationAttempt.objects.filter(test=test, worker=worker).count())


def grade(test: QualificationTest, values: dict[int, object], items: list[QualificationItem]) -> tuple[bool, dict]:
    """Apply the test's pass rules (the task type's grading) to normalised answers keyed by item id."""
    task = get_task_type(test.task_type)
    return task.grade([values[item.id] for item in items], [item.reference for item in items],
                      [item.easy for item in items], test)


def take_test(test: QualificationTest, worker, answers: dict) -> QualificationAttempt:
    """Validate and grade one attempt; raises SubmissionError (stores nothing) on bad input or no attempts left."""
    with transaction.atomic():
        # Serialise one worker's attempts so the attempt limit holds under double submits.
        get_user_model().objects.select_for_update().filter(pk=worker.pk).first()
        if has_passed(test, worker):
            raise SubmissionError("qualification", "you have already passed this test", status=409)
        if attempts_left(test, worker) == 0:
            raise SubmissionError("qualification", "no attempts left for this test", status=403)
        items = list(test.items.all())
        task = get_task_type(test.task_type)
        parsed = parse_answers(task, test.options or task.default_options(), [item.id for item in items], answers)
        values = {item_id: parsed[item_id][1] for item_id in parsed}
        passed, details = grade(test, values, items)
        return QualificationAttempt.objects.create(
            test=test, worker=worker, answers={str(k): v for k, v in values.items()}, passed=passed, details=details
        )
