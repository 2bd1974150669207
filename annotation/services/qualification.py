"""Qualification tests: a page of reference items; pass rules from REFERENCE.md, all configurable."""

from __future__ import annotations

import itertools

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import QualificationAttempt, QualificationItem, QualificationTest
from annotation.services import pools
from annotation.services.answers import SubmissionError, parse_answers, parse_reference
from annotation.tasktypes import get_task_type
from common.schema import Schema, Setting


class QualificationError(ValueError):
    pass


def create_test(
    slug: str, task_type: str, rows: list[dict], title: str = "", options: dict | None = None, projects=(), **rules
) -> QualificationTest:
    """rows: {"premise", "hypothesis", "update"?, "atom"?, "reference", "easy"?}; references read as the task
    type reads a final label (slider: a probability; nli: e/n/c; validity: valid/invalid; defeasible: -2..2).
    `options`: the task type's settings the items are answered with (e.g. a project's label set). A row whose
    text is a data item or gold check of one of `projects` (the studies that will require the test) is refused."""
    task = get_task_type(task_type)
    options = {**task.default_options(), **(options or {})}
    if not rows:
        raise QualificationError("a qualification test needs at least one reference item")
    for setting in task.settings:  # one test grades answers on one scale
        if setting.fixed_once_answered and len({repr(project.options.get(setting.name)) for project in projects}) > 1:
            raise QualificationError(f"the projects differ in {setting.name}; make one test per {setting.name} value")
    items = []
    pools_of = {
        (project.pk, pool): pools.item_members(project, pool)
        for project in projects
        for pool in (pools.DATA, pools.GOLD)
    }
    for number, row in enumerate(rows, start=1):
        for field in ("premise", "hypothesis", "reference"):
            if row.get(field) in (None, ""):
                raise QualificationError(f"row {number}, field {field!r}: is missing")
        try:
            reference = parse_reference(task, options, row["reference"])
        except SubmissionError as exc:
            raise QualificationError(f"row {number}, field 'reference': {exc.message}") from None
        for project in projects:
            for pool in (pools.DATA, pools.GOLD):
                member = pools_of[project.pk, pool].get(
                    pools.text_key(row["premise"], row["hypothesis"], row.get("update", ""), row.get("atom", ""))
                )
                if member is not None:
                    raise QualificationError(
                        f"row {number}: study {project.slug}'s {member.described()}; "
                        "a qualification item cannot also be one"
                    )
        items.append(
            QualificationItem(
                premise=row["premise"],
                hypothesis=row["hypothesis"],
                update=row.get("update", ""),
                atom_text=row.get("atom", ""),
                reference=reference,
                easy=bool(row.get("easy")),
                order=number,
            )
        )
    with transaction.atomic():
        test = QualificationTest.objects.create(
            slug=slug, title=title or slug, task_type=task_type, options=options, **rules
        )
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
    return task.grade(
        [values[item.id] for item in items], [item.reference for item in items], [item.easy for item in items], test
    )


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
        # What the worker is shown next decides which references may never check them (services.pools).
        details["feedback_shown"] = bool(test.options.get("show_feedback"))
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
        "unmet": attempt.details.get("unmet", []),  # which pass rules the attempt missed, in words
        "attempts_left": attempts_left(test, attempt.worker),
        "items": [],
    }
    if attempt.details.get("feedback_shown", test.options.get("show_feedback")):
        for item in test.items.all():
            answer = attempt.answers.get(str(item.id))
            result["items"].append(
                {
                    "item": item,
                    "answer": task.display(answer, options),
                    "reference": task.display(item.reference, options),
                    "matched": task.matches_reference(answer, item.reference, test),
                }
            )
    return result


# The pass rules and attempts of a test, declared once for the qualification page and the command line.
RULES = Schema(
    (
        Setting("max_attempts", "int", 2, "attempts a worker gets", minimum=1, maximum=20),
        Setting(
            "min_accuracy",
            "float",
            0.8,
            "share of reference answers to match (categorical task types)",
            minimum=0,
            maximum=1,
        ),
        Setting("min_pearson", "float", 0.7, "slider: Pearson r the answers must exceed", minimum=-1, maximum=1),
        Setting("min_spearman", "float", 0.4, "slider: Spearman rho the answers must exceed", minimum=-1, maximum=1),
        Setting(
            "delta_divisor",
            "float",
            4.0,
            "slider: an easy item is passed within min(y, 1 - y) / this of y",
            minimum=1,
            maximum=100,
        ),
        Setting(
            "min_delta",
            "float",
            0.01,
            "slider: ... or within this of y, whichever is wider (a reference of 0 "
            "or 1 would otherwise need exactly 0 or 1)",
            minimum=0,
            maximum=0.5,
        ),
        Setting("show_feedback", "bool", False, "after an attempt, show each item's reference answer"),
    )
)


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
            slug=slug,
            title=f"{project.title}: qualification",
            task_type=project.task_type,
            options=dict(project.options),
            **{k: v for k, v in RULES.defaults().items() if k != "show_feedback"},
        )
        project.qualification = test
        project.save(update_fields=["qualification"])
    return test


def _refuse_once_taken(test: QualificationTest) -> None:
    if test.attempts.exists():
        raise QualificationError("workers have taken this test already: its items cannot change (its rules can)")


def copy_item(project, item, reference, easy: bool = False) -> QualificationItem:
    """Copy a study item into its qualification test with a reference answer read as the task type reads
    final labels (a slider's: a probability): an explicit copy, a new item that remembers its origin, while the
    study's item stays in its pool. Workers who see the test's feedback are then never checked on it."""
    test = project_test(project)
    _refuse_once_taken(test)
    member = pools.qualification_members(project, copies=True).get(pools.item_key(item))
    if member is not None:
        raise QualificationError(f"item {item.pk} is in the test already ({member.name})")
    try:
        value = parse_reference(project.task, project.options, reference)
    except SubmissionError as exc:
        raise QualificationError(f"reference: {exc.message}") from None
    return QualificationItem.objects.create(
        test=test,
        premise=item.example.premise,
        hypothesis=item.example.hypothesis,
        update=item.example.update,
        atom_text=item.atom.text if item.atom else "",
        reference=value,
        easy=easy,
        order=_next_order(test),
        copied_from=item,
    )


def _next_order(test: QualificationTest) -> int:
    return (test.items.order_by("-order").values_list("order", flat=True).first() or 0) + 1


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


# The probability ranges a slider test is balanced over: the slider's tick marks, where U-SNLI's values cluster.
PROBABILITY_EDGES = (0.01, 0.1, 0.5, 0.9, 0.99)
MAX_CANDIDATES_READ = 5000  # candidates read per search, for the balance and the range filter


def reference_bins(task, options) -> list[tuple[str, str]]:
    """The (key, name) ranges a qualification test's references are balanced across: the categories of a
    categorical scale, or probability ranges; [] for a task type whose answers have no reference."""
    categories = task.categories(options)
    if categories is not None:
        return [(str(value), task.display(value, options)) for value in categories]
    if task.probability_answers:
        edges = (0.0, *PROBABILITY_EDGES, 1.0)
        return [
            (f"{low:g}-{high:g}", f"{low:g} to {high:g}" if high < 1 else f"{low:g} to 1")
            for low, high in itertools.pairwise(edges)
        ]
    return []


def bin_of(task, options, value) -> str | None:
    if value is None:
        return None
    if task.categories(options) is not None:
        return str(value)
    if task.probability_answers:
        edges = (0.0, *PROBABILITY_EDGES, 1.0)
        for low, high in itertools.pairwise(edges):
            if low <= value < high or (high == 1.0 and value == 1.0):
                return f"{low:g}-{high:g}"
    return None


def candidates(project, text: str = "", show: str = "", reference_bin: str = "") -> dict:
    """Study items to copy into the test: data items (gold checks are a pool of their own) found by text and
    the item table's filters, each with its suggested reference, narrowed to a reference range; and the balance
    of the test and of the candidates across the ranges. Reads at most MAX_CANDIDATES_READ items."""
    from annotation.services.items import search_items

    task, options = project.task, project.options
    in_test = set()
    test = project.qualification
    if test is not None:
        in_test = set(test.items.exclude(copied_from=None).values_list("copied_from", flat=True))
    found = search_items(project, text, show).filter(is_gold=False)
    rows, balance = [], {key: 0 for key, _ in reference_bins(task, options)}
    read = list(found[: MAX_CANDIDATES_READ + 1])
    for item in read[:MAX_CANDIDATES_READ]:
        reference = suggested_reference(project, item)
        key = bin_of(task, options, reference)
        if key in balance:
            balance[key] += 1
        if item.pk not in in_test and (not reference_bin or key == reference_bin):
            rows.append((item, reference))
    test_balance = dict.fromkeys(balance, 0)
    for reference in test.items.values_list("reference", flat=True) if test else []:
        key = bin_of(task, options, reference)
        if key in test_balance:
            test_balance[key] += 1
    return {
        "rows": rows,
        "bins": [
            {"key": key, "name": name, "in_test": test_balance[key], "candidates": balance[key]}
            for key, name in reference_bins(task, options)
        ],
        "read": min(len(read), MAX_CANDIDATES_READ),
        "more": len(read) > MAX_CANDIDATES_READ,
    }
