"""The dashboard's item table: search, filters and sort over a project's items, and turning items into hidden
gold checks. Every filter is one indexed condition, so a page stays cheap at 100,000 items."""

from __future__ import annotations

from django.db import connections, transaction
from django.db.models import F, Q, QuerySet

from annotation.models import Atom, Example, Item, Project
from annotation.services import pools
from annotation.services.answers import SubmissionError, parse_reference

FILTERS = {
    "open": Q(status=Item.Status.OPEN, is_gold=False),
    "done": Q(status=Item.Status.DONE, is_gold=False),
    "adjudication": Q(status=Item.Status.ADJUDICATION) | Q(flagged=True),
    "adjudicated": Q(adjudicated__isnull=False),
    "disagreement": Q(target__gt=F("project__redundancy"), is_gold=False) | Q(status=Item.Status.ADJUDICATION),
    "in_progress": Q(active_claims__gt=0),
    "gold": Q(is_gold=True),
}
FILTER_NAMES = {
    "open": "collecting",
    "done": "done",
    "adjudication": "waiting for adjudication",
    "adjudicated": "adjudicated",
    "disagreement": "annotators disagreed",
    "in_progress": "on a worker's page",
    "gold": "gold checks",
}
SORTS = {
    "id": ("id",),
    "-id": ("-id",),
    "annotations": ("annotation_count", "id"),
    "-annotations": ("-annotation_count", "id"),
    "status": ("status", "id"),
}


def search_items(project: Project, text: str = "", show: str = "", sort: str = "id") -> QuerySet:
    """Items of the project whose premise, hypothesis or atom contains `text`, narrowed to the filter `show`
    (a key of FILTERS), in the order `sort` (a key of SORTS). Unknown filters and sorts are ignored."""
    items = project.items.select_related("example", "atom")
    if show in FILTERS:
        items = items.filter(FILTERS[show])
    text = text.strip()
    if text:
        items = items.filter(_text_matches(project, text, connections[items.db].vendor))
    return items.order_by(*SORTS.get(sort, SORTS["id"]))


def _text_matches(project: Project, text: str, vendor: str) -> Q:
    """Items whose example's premise or hypothesis or whose atom contains `text` (any case), or whose example has
    the source id `text`. Both forms below find the same items."""
    if vendor != "postgresql":
        # SQLite scans either way, and the join lets a page stop at its 25th match.
        return (
            Q(example__premise__icontains=text)
            | Q(example__hypothesis__icontains=text)
            | Q(atom__text__icontains=text)
            | Q(example__source_id=text)
        )
    # An OR across the joined tables makes PostgreSQL test every example of the study; one subquery per table
    # is answered from that table's indexes instead (the trigram indexes of migration 0008 serve icontains).
    # An item's example and atom are always of its project: the subqueries stay within the study.
    examples = Example.objects.filter(
        Q(premise__icontains=text) | Q(hypothesis__icontains=text) | Q(source_id=text), project=project
    ).values("pk")
    atoms = Atom.objects.filter(text__icontains=text, example__project=project).values("pk")
    return Q(example__in=examples) | Q(atom__in=atoms)


def make_gold(project: Project, item_id: int, reference) -> Item:
    """Move an item nobody has answered from the data pool into the gold checks, with this reference answer.
    An item whose text is in the qualification test stays where it is (services.pools)."""
    with transaction.atomic():
        item = (
            Item.objects.select_for_update(of=("self",))
            .select_related("example", "atom")
            .get(pk=item_id, project=project)
        )
        if item.is_gold:
            raise SubmissionError("item", f"item {item.pk} is a gold check already")
        if item.annotation_count or item.active_claims:
            raise SubmissionError("item", "only an item nobody has answered or holds can become a gold check")
        try:
            pools.ensure_not_in_qualification(project, item)
        except pools.PoolError as error:
            raise SubmissionError("item", error.message) from None
        item.gold = parse_reference(project.task, project.options, reference)
        item.is_gold, item.claimable, item.status, item.target = True, False, Item.Status.DONE, 0
        item.save(update_fields=["gold", "is_gold", "claimable", "status", "target"])
    return item
