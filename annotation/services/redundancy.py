"""Incremental redundancy: after each annotation, decide whether an item needs one more, is done, or
needs an author (an unresolved tie). The rule asking for one more (`TaskType.disagree`: any disagreement, or
for categorical task types set to the stability strategy, a label distribution not yet stable) and the
aggregate come from the task type; the project's redundancy and maximum annotations bound it."""

from django.db import transaction

from annotation.models import Annotation, Item, Project


def settle_item(project: Project, item: Item, just_given: tuple | None = None) -> None:
    """Update item.target / status / aggregate / claimable in memory from its stored annotations.
    just_given: the (raw, value) of a submit's answer, counted in item.annotation_count but not stored yet
    (the submit stores it with the counters); when it is the item's only counted answer, nothing is read."""
    rows = [] if just_given is None else [(just_given[0], just_given[1], 1)]
    if just_given is None or item.annotation_count > 1:
        stored = Annotation.objects.filter(item_id=item.id, excluded=False).values_list("raw", "value", "count")
        rows += list(stored)
    raws = [raw for raw, _, count in rows for _ in range(count)]
    values = [value for _, value, count in rows for _ in range(count)]
    task = project.task
    if item.status == Item.Status.OPEN:
        if len(values) >= item.target:
            if len(values) < project.max_annotations and task.disagree(raws, values, project.options):
                item.target = len(values) + 1
            else:
                _set_aggregate(project, item, values)
    elif item.adjudicated is None:
        # A late page arrived after the item was settled: its answer counts in the aggregate.
        _set_aggregate(project, item, values)
    item.refresh_claimable()
    if project.adaptive and values:
        item.priority = adaptive_priority(values)


def resettle(project: Project, item_ids) -> None:
    """Settle items again from their counted answers after some answers were excluded or let back in: an
    item that lost an answer opens to collect another; adjudicated labels stand."""
    from django.db.models import Sum

    items = list(Item.objects.select_for_update().filter(id__in=set(item_ids), is_gold=False).order_by("id"))
    counted = dict(
        Annotation.objects.filter(item__in=items, excluded=False)
        .values("item_id")
        .annotate(n=Sum("count"))
        .values_list("item_id", "n")
    )
    for item in items:
        item.annotation_count = counted.get(item.id, 0)
        if item.adjudicated is None:
            item.status, item.target, item.aggregate = Item.Status.OPEN, project.redundancy, None
        settle_item(project, item)
    Item.objects.bulk_update(items, ["annotation_count", "status", "target", "aggregate", "claimable", "priority"])


def open_items(project: Project):
    return Item.objects.filter(project=project, status=Item.Status.OPEN, is_gold=False)


def retarget_open_items(project: Project) -> int:
    """A changed redundancy applies to the items still open: each is to get the project's redundancy (one
    that has as many answers already is settled now; one waiting for a tie-break asks again). Settled items
    keep what they have. Returns how many items were open."""
    with transaction.atomic():
        items = list(open_items(project).select_for_update().order_by("id"))
        for item in items:
            item.target = project.redundancy
            if item.annotation_count >= item.target:
                settle_item(project, item)
            else:
                item.refresh_claimable()
        Item.objects.bulk_update(items, ["target", "status", "aggregate", "claimable", "priority"], batch_size=500)
    return len(items)


def adaptive_priority(probabilities: list[float]) -> float:
    """EASL-style: a Beta(1 + sum p, 1 + sum (1 - p)) posterior per item; items not yet annotated keep
    priority 0 and come first, then the ones whose posterior variance is highest (priority 1 - variance)."""
    alpha = 1.0 + sum(probabilities)
    beta = 1.0 + sum(1.0 - p for p in probabilities)
    variance = alpha * beta / ((alpha + beta) ** 2 * (alpha + beta + 1.0))
    return 1.0 - variance


def _set_aggregate(project: Project, item: Item, values: list) -> None:
    aggregate = project.task.aggregate(values, project.options)
    item.aggregate = aggregate.value
    item.status = Item.Status.ADJUDICATION if aggregate.tied else Item.Status.DONE


def votes_in_order(item_ids: list[int]) -> dict[int, list]:
    """Each item's votes that count, in the order they were given (an imported row with a count stands for
    that many): SNLI's rule reads them so, the writer's intended label first."""
    votes: dict[int, list] = {item_id: [] for item_id in item_ids}
    rows = (
        Annotation.objects.counted()
        .filter(item__in=item_ids)
        .order_by("item_id", "id")
        .values_list("item_id", "value", "count")
    )
    for item_id, value, count in rows.iterator(chunk_size=5000):
        votes[item_id].extend([value] * count)
    return votes
