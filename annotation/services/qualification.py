"""Qualification tests: a page of reference items; pass rules from REFERENCE.md, all configurable."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import QualificationAttempt, QualificationItem, QualificationTest
from annotation.services.answers import SubmissionError, parse_answers, parse_reference
from annotation.tasktypes import get_task_type
from common.schema import Schema, Setting


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


def feedback(test: QualificationTest, attempt: QualificationAttempt) -> dict:
    """What a worker is told after an attempt: the score and what it measures, the pass mark, the attempts
    left and, when the author shows feedback, each item with the worker's answer and the reference."""
    task = get_task_type(test.task_type)
    options = test.options or task.default_options()
    result = {
        "passed": attempt.passed,
        "score": attempt.details.get("score"),
        "pass_mark": attempt.details.get("pass_mark"),
        "score_name": task.qualification_score,
        "attempts_left": attempts_left(test, attempt.worker),
        "items": [],
    }
    if test.options.get("show_feedback"):
        for item in test.items.all():
            answer = attempt.answers.get(str(item.id))
            result["items"].append({
                "item": item,
                "answer": task.display(answer, options),
                "reference": task.display(item.reference, options),
                "matched": task.matches_reference(answer, item.reference, test),
            })
    return result


# The pass rules and attempts of a test, declared once for the qualification page and the command line.
RULES = Schema((
    Setting("max_attempts", "int", 2, "attempts a worker gets", minimum=1, maximum=20),
    Setting("min_accuracy", "float", 0.8, "share of reference answers to match (categorical task types)",
            minimum=0, maximum=1),
    Setting("min_pearson", "float", 0.7, "slider: Pearson r the answers must exceed", minimum=-1, maximum=1),
    Setting("min_spearman", "float", 0.4, "slider: Spearman rho the answers must exceed", minimum=-1, maximum=1),
    Setting("delta_divisor", "float", 4.0, "slider: an easy item is passed within min(y, 1 - y) / this of y",
            minimum=1, maximum=100),
    Setting("show_feedback", "bool", False, "after an attempt, show each item's reference answer"),
))


def project_test(project) -> QualificationTest:
    """The project's qualification test, made (empty, with the default rules) when it has none."""
    if project.qualification_id:
        return project.qualification
    with transaction.atomic():
        slug, number = f"{project.slug}-qualification", 1
        while QualificationTest.objects.filter(slug=slug).exists():
            number += 1
            slug = f"{project.slug}-qualification-{number}"
        test = QualificationTest.objects.create(
            slug=slug, title=f"{project.title}: qualification", task_type=project.task_type,
            options=dict(project.options), **{k: v for k, v in RULES.defaults().items() if k != "show_feedback"},
        )
        project.qualification = test
        project.save(update_fields=["qualification"])
    return test


def _refuse_once_taken(test: QualificationTest) -> None:
    if test.attempts.exists():
        raise QualificationError("workers have taken this test already: its items cannot change (its rules can)")


def add_item(project, item, reference, easy: bool = False) -> QualificationItem:
    """Copy a project item into its qualification test with a reference answer read as the task type reads
    final labels (a slider's: a probability)."""
    test = project_test(project)
    _refuse_once_taken(test)
    try:
        value = parse_reference(project.task, project.options, reference)
    except SubmissionError as exc:
        raise QualificationError(f"reference: {exc.message}") from None
    return QualificationItem.objects.create(
        test=test, premise=item.example.premise, hypothesis=item.example.hypothesis, update=item.example.update,
        atom_text=item.atom.text if item.atom else "", reference=value, easy=easy, order=test.items.count() + 1,
    )


def remove_item(project, item_id: int) -> None:
    test = project_test(project)
    _refuse_once_taken(test)
    test.items.filter(pk=item_id).delete()


def update_rules(project, data: dict) -> QualificationTest:
    test = project_test(project)
    cleaned = RULES.clean(data, partial=True)
    feedback = cleaned.pop("show_feedback", None)
    for name, value in cleaned.items():
        setattr(test, name, value)
    if feedback is not None:
        test.options = {**test.options, "show_feedback": feedback}
    test.save()
    return test


def suggested_reference(project, item):
    """A reference to start from for an item: its gold answer, its row's own label, or its final label."""
    if item.is_gold:
        return item.gold
    reference = project.task.gold_reference(item.example, item.atom, project.options)
    return reference if reference is not None else item.final_value
