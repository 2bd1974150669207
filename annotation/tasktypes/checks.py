"""The task-type contract, checked where task types are registered: Django's system checks run these at
`manage.py check`, before tests and when the server starts, as contrib.admin checks its registered classes
(annotation/apps.py registers the check).
A plug-in that breaks the contract is an error naming the task type and what to fix, not a crash on the
first page that uses it."""

from __future__ import annotations

from django.core import checks
from django.template import TemplateDoesNotExist
from django.template.loader import get_template

AGREEMENT_LEVELS = ("nominal", "ordinal", "interval")


def _error(task, message: str, hint: str, number: int) -> checks.Error:
    return checks.Error(f"task type {task.name!r}: {message}", hint=hint, obj=type(task), id=f"tasktypes.E{number:03d}")


def task_type_errors(task, common_names: set[str], declared: dict) -> list[checks.Error]:
    """What is wrong with one task type; `declared` maps setting names to (task name, Setting) seen so far."""
    errors = []
    try:
        get_template(task.template)
    except TemplateDoesNotExist:
        errors.append(
            _error(
                task,
                f"its template {task.template} does not exist",
                "write it (docs/task-types.md shows the blocks a task template has)",
                1,
            )
        )
    options = task.default_options()
    if task.agreement_level not in AGREEMENT_LEVELS and not (
        task.agreement_level is None and task.agreement_unavailable
    ):
        errors.append(
            _error(
                task,
                f"agreement_level {task.agreement_level!r} is not one of {AGREEMENT_LEVELS}",
                "or set it to None and say why in agreement_unavailable",
                2,
            )
        )
    if task.agreement_level in ("nominal", "ordinal") and not task.categories(options):
        errors.append(
            _error(
                task, f"a {task.agreement_level} scale needs its categories()", "return the scale's values in order", 3
            )
        )
    try:
        answers = task.example_answers(options)
        for answer in answers:
            task.parse_answer({"value": answer}, options)
    except Exception as error:  # any failure here is the plug-in's to fix
        errors.append(
            _error(
                task,
                f"example_answers() gave an answer its own parse_answer refuses: {error}",
                "give answers a worker could submit",
                4,
            )
        )
    else:
        if not answers:
            errors.append(_error(task, "example_answers() is empty", "give a few valid answers", 4))
    for setting in task.settings:
        if setting.name in common_names:
            errors.append(
                _error(task, f"its setting {setting.name!r} has the name of a setting every study has", "rename it", 5)
            )
        elif setting.name in declared and declared[setting.name][1] != setting:
            errors.append(
                _error(
                    task,
                    f"its setting {setting.name!r} is declared differently by task type "
                    f"{declared[setting.name][0]!r}; the command line would offer only one",
                    "rename one of them, or share one Setting object",
                    5,
                )
            )
        declared.setdefault(setting.name, (task.name, setting))
    if task.has_demo:
        try:
            demos = task.demos()
        except Exception as error:  # e.g. worked examples missing from demo_text.json
            errors.append(_error(task, f"demo() fails: {error!r}", "fix the demo, or set has_demo = False", 6))
        else:
            if not demos:
                errors.append(
                    _error(
                        task,
                        "demo() gives no demo study",
                        "write one, or declare the type has none with has_demo = False",
                        6,
                    )
                )
            for demo in demos:
                if not demo.imports:
                    errors.append(_error(task, f"demo study {demo.slug!r} imports nothing", "give it rows", 6))
    return errors


def check_task_types(task_types, common_names: set[str]) -> list[checks.Error]:
    """Every registered task type against the contract; `common_names`: the settings every study has."""
    declared: dict = {}
    return [error for task in task_types for error in task_type_errors(task, common_names, declared)]
