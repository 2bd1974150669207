"""Pools: a study's data items, its hidden gold checks and its qualification test's items are separate.

An item is in one pool. Whatever would put the same text (premise, hypothesis, update and atom) into a second
pool is refused, naming the item and the pool it is in: an import (any format, any purpose), turning an
item into a gold check, adding rows to the qualification test. Copying a study item into the qualification
test is the one explicit way across: it makes a new item that remembers its origin (`copied_from`).

And whatever a worker was shown a reference answer for (the worked examples beside the instructions, the
items of a qualification test whose feedback they saw) never checks that worker: `shown_to()` lists those
texts and the gold check draw leaves them out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.db.models import Q

from annotation.models import Item, Project, QualificationAttempt, QualificationItem

DATA, GOLD, QUALIFICATION = "data", "gold", "qualification"
POOL_NAMES = {DATA: "a data item", GOLD: "a gold check", QUALIFICATION: "an item of the qualification test"}


class PoolError(ValueError):
    """Something would be in two pools; `field` names what is at fault, the message the item and its pool."""

    def __init__(self, message: str, field: str = "item"):
        super().__init__(message)
        self.field, self.message = field, message


def text_key(premise: str, hypothesis: str, update: str = "", atom: str = "") -> str:
    """What makes two items the same item: their texts, exactly."""
    return hashlib.sha256("\x1f".join((premise, hypothesis, update or "", atom or "")).encode()).hexdigest()


@dataclass(frozen=True)
class Member:
    pool: str
    name: str  # how a message names it: "item 12", "item 3 of the qualification test"

    def described(self) -> str:
        return f"{self.name} is {POOL_NAMES[self.pool]}"


def qualification_members(project: Project, copies: bool = False) -> dict[str, Member]:
    """The items of the study's qualification test by text key (explicit copies of study items only when
    `copies`: they share their origin's text by design)."""
    if project.qualification_id is None:
        return {}
    items = QualificationItem.objects.filter(test_id=project.qualification_id)
    if not copies:
        items = items.filter(copied_from__isnull=True)
    return {
        text_key(premise, hypothesis, update, atom): Member(QUALIFICATION, f"item {order} of the qualification test")
        for premise, hypothesis, update, atom, order in items.values_list(
            "premise", "hypothesis", "update", "atom_text", "order"
        )
    }


def item_members(project: Project, pool: str) -> dict[str, Member]:
    """The study's data items or gold checks by text key (read as plain rows: data pools can be large)."""
    items = Item.objects.filter(project=project, is_gold=pool == GOLD).order_by()
    return {
        text_key(premise, hypothesis, update, atom or ""): Member(pool, f"item {item_id}")
        for item_id, premise, hypothesis, update, atom in items.values_list(
            "id", "example__premise", "example__hypothesis", "example__update", "atom__text"
        ).iterator(chunk_size=5000)
    }


def other_pools(project: Project, pool: str) -> dict[str, Member]:
    """Every item of the study's other pools than `pool`, by text key."""
    members: dict[str, Member] = {}
    for other in (DATA, GOLD, QUALIFICATION):
        if other == pool:
            continue
        members.update(qualification_members(project) if other == QUALIFICATION else item_members(project, other))
    return members


def item_key(item: Item) -> str:
    return text_key(
        item.example.premise, item.example.hypothesis, item.example.update, item.atom.text if item.atom else ""
    )


def ensure_not_in_qualification(project: Project, item: Item) -> None:
    """Refuse to make a study item a gold check when its text is an item of the qualification test."""
    member = qualification_members(project, copies=True).get(item_key(item))
    if member is not None:
        raise PoolError(
            f"item {item.pk} cannot become a gold check: its text is {member.name} "
            f"(workers may have seen its reference answer)"
        )


def shown_to(project: Project, worker) -> Q | None:
    """A condition on items matching every text this worker was shown a reference answer for in this study:
    the worked examples, and the qualification items of every attempt of theirs that showed feedback."""
    shown = [
        (example.get("premise", ""), example.get("hypothesis", ""), example.get("update", ""), example.get("atom", ""))
        for example in project.options.get("worked_examples") or []
        if isinstance(example, dict)
    ]
    # Attempts say whether they showed feedback; older attempts showed it when their test did.
    saw_feedback = Q(details__feedback_shown=True) | (
        Q(details__feedback_shown__isnull=True) & Q(test__options__show_feedback=True)
    )
    feedback_tests = QualificationAttempt.objects.filter(saw_feedback, worker=worker).values("test_id")
    shown += list(
        QualificationItem.objects.filter(test_id__in=feedback_tests).values_list(
            "premise", "hypothesis", "update", "atom_text"
        )
    )
    if not shown:
        return None
    condition = Q()
    for premise, hypothesis, update, atom in shown:
        match = Q(example__premise=premise, example__hypothesis=hypothesis, example__update=update or "")
        condition |= match & (Q(atom__text=atom) if atom else Q(atom__isnull=True))
    return condition
