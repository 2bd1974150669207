"""Registry of task types: one module each. Adding a task type means adding a module (and its template)
and naming it here; docs/task-types.md walks through it."""
from annotation.tasktypes import atom_validity, defeasible_atom, hypothesis_writing, nli_label, unli_slider
from annotation.tasktypes.base import Aggregate, AnswerError, TaskType

TASK_TYPES: dict[str, TaskType] = {
    module.TASK.name: module.TASK
    for module in (atom_validity, defeasible_atom, unli_slider, nli_label, hypothesis_writing)
}
TASK_TYPE_CHOICES = [(name, task.label) for name, task in TASK_TYPES.items()]


def get_task_type(name: str) -> TaskType:
    try:
        return TASK_TYPES[name]
    except KeyError:
        raise ValueError(f"unknown task type {name!r}; choose one of {', '.join(TASK_TYPES)}") from None


__all__ = ["TASK_TYPES", "TASK_TYPE_CHOICES", "get_task_type", "Aggregate", "AnswerError", "TaskType"]
