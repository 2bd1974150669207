"""The copies of an erased participant's free text kept outside their answers: the pairs send-to-validation
made from their answers (annotation.services.linking) in the linked validation study, and their copies in a
study cloned from it with its items.

The rule: the validation item stays, with its premise, its label, the writer's highlights and every
validator's answer (other people's work); only the fields that held the erased writer's own text (the written
hypothesis or update, the explanation in `Example.source_data`, a rated atom) take ERASED_TEXT instead. Which
fields those are is read from the task type itself: the pair built from the answer before the erasure is
compared with the pair built from the answer after it (`without_free_text`), and what differs was theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count

from annotation.models import Annotation, Atom, Example

# What a validator, an export or a bundle shows where the erased writer's text was.
ERASED_TEXT = "[erased at the writer's request]"
PAIR_TEXTS = ("hypothesis", "update")


@dataclass(frozen=True)
class ErasedAnswer:
    """An answer whose free text was emptied, with its stored value from before the erasure."""

    answer: Annotation  # with item__project and item__example
    value_before: Any


def mark_erased_copies(erased: list[ErasedAnswer]) -> list[Example]:
    """Put ERASED_TEXT where the validation examples made from these answers, and their copies in cloned studies
    (clone_project keeps an example's key, not its origin), hold the erased text; returns the examples changed."""
    by_answer = {entry.answer.pk: entry for entry in erased}
    made = Example.objects.filter(origin__in=by_answer).values_list("key", "origin_id", "origin_target")
    origin_of = {key: (by_answer[answer_id], target) for key, answer_id, target in made}
    copies = Example.objects.filter(key__in=origin_of).annotate(atom_count=Count("atoms"))
    changed: list[Example] = []
    for example in copies:
        entry, target = origin_of[example.key]
        before = _pair(entry.answer, entry.value_before, target)
        after = _pair(entry.answer, entry.answer.value, target)
        if before is None:  # no pair of that target any more: nothing to compare, keep the example as it is
            continue
        marked = False
        for name in PAIR_TEXTS:
            if getattr(before, name) != getattr(after, name, None) and getattr(example, name) == getattr(before, name):
                setattr(example, name, ERASED_TEXT)
                marked = True
        data = _marked_data(example.source_data, before.data, after.data if after else {})
        if data != example.source_data:
            example.source_data = data
            marked = True
        if before.atom and before.atom != getattr(after, "atom", None) and example.atom_count:
            Atom.objects.filter(example=example, text=before.atom).update(text=ERASED_TEXT)
            marked = True
        if marked:
            changed.append(example)
    Example.objects.bulk_update(changed, ["hypothesis", "update", "source_data"], batch_size=500)
    return changed


def _pair(answer: Annotation, value, target: str):
    """The pair of `target` that the answer with this value sends to validation (None: it sends none)."""
    project = answer.item.project
    pairs = project.task.validation_pairs(answer.item.example, value, project.options)
    return next((pair for pair in pairs if pair.target == target), None)


def _marked_data(stored: dict, before: dict, after: dict) -> dict:
    """The example's source data with every part the erasure emptied (a string that changed) marked."""
    return {
        name: ERASED_TEXT
        if isinstance(stored_value, str) and name in before and before[name] == stored_value != after.get(name)
        else stored_value
        for name, stored_value in stored.items()
    }
