"""Registry of task types: one module each. Adding a task type means adding a module (and its template)
and registering it here (or, from a plug-in app, calling `register` in its AppConfig.ready); the system
checks in `checks.py` hold every registered type to the contract at `manage.py check` and server start.
docs/task-types.md walks through it."""

from annotation.tasktypes import (
    atom_validity,
    defeasible_atom,
    hypothesis_writing,
    nli_label,
    unli_slider,
)
from annotation.tasktypes.base import Aggregate, AnswerError, TaskType

TASK_TYPES: dict[str, TaskType] = {}
# (name, label) pairs for choice fields; kept in step with TASK_TYPES by register().
TASK_TYPE_CHOICES: list[tuple[str, str]] = []


def register(task: TaskType) -> TaskType:
    """Add a task type; a second type under a registered name is refused."""
    if task.name in TASK_TYPES:
        raise ValueError(f"a task type named {task.name!r} is registered already")
    TASK_TYPES[task.name] = task
    TASK_TYPE_CHOICES.append((task.name, task.label))
    return task


def unregister(name: str) -> None:
    """Remove a task type (a test's throw-away type)."""
    del TASK_TYPES[name]
    TASK_TYPE_CHOICES[:] = [(key, label) for key, label in TASK_TYPE_CHOICES if key != name]


def get_task_type(name: str) -> TaskType:
    try:
        return TASK_TYPES[name]
    except KeyError:
        raise ValueError(f"unknown task type {name!r}; choose one of {', '.join(TASK_TYPES)}") from None


for _module in (
    atom_validity,
    defeasible_atom,
    unli_slider,
    nli_label,
    hypothesis_writing,
):
    register(_module.TASK)

__all__ = [
    "TASK_TYPES",
    "TASK_TYPE_CHOICES",
    "Aggregate",
    "AnswerError",
    "TaskType",
    "get_task_type",
    "register",
    "unregister",
]
