"""The budget planner: from the disagreement of a pilot (the study's items that have two or more answers so
far), how many labels an item needs for its label distribution to be known to a target precision, and what
the whole study would then cost. The precision is the stability strategy's: the expected JS distance between
an item's collected distribution and its full one (metrics.stability). Beside it, the labels an item needs
under majority-decided stopping (the label fixed-k collection would give, for fewer labels)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Sum

from annotation.models import Annotation, Item, Project
from common.schema import Schema, Setting

# The planner looks this far; an item still unstable here counts this many labels (and is reported).
MOST_LABELS_PLANNED = 100
PILOT_MINIMUM_ANSWERS = 2

PLAN_SETTINGS = Schema(
    (
        Setting(
            "target_error",
            "float",
            0.15,
            "the precision to reach: expected JS distance between an item's collected label distribution and "
            "its full one (0.15 is about what 10 labels an item give on ChaosNLI-SNLI)",
            label="Target error",
            minimum=0.01,
            maximum=0.5,
        ),
        Setting(
            "price_per_label",
            "float",
            0.0,
            "what one label costs, in your currency (0: plan labels only)",
            label="Price per label",
            minimum=0,
            maximum=10000,
        ),
    )
)


@dataclass(frozen=True)
class BudgetPlan:
    target_error: float
    price_per_label: float
    items: int  # the study's items, gold checks left out
    pilot_items: int  # items with PILOT_MINIMUM_ANSWERS or more answers, whose disagreement the plan reads
    labels_per_item: float  # mean over the pilot
    unsettled_share: float  # share of pilot items still unstable at MOST_LABELS_PLANNED labels
    labels_total: int
    labels_collected: int
    labels_to_go: int
    cost_total: float | None  # None without a price per label
    cost_to_go: float | None
    # Majority-decided stopping (the study's `decided_within` labels): expected labels per item over the pilot
    decided_within: int
    majority_decided_labels_per_item: float


def applies(project: Project) -> bool:
    """Plans need categorical answers (a label distribution per item)."""
    return project.task.categories(project.options) is not None


def plan(project: Project, target_error: float, price_per_label: float = 0.0) -> BudgetPlan | None:
    """The plan for `project` at the given precision and price (checked with PLAN_SETTINGS first); None while
    no item has PILOT_MINIMUM_ANSWERS answers. Raises ValueError for a task type without categories."""
    from annotation.tasktypes.base import decided_within
    from metrics.stability import labels_to_decide_majority, labels_to_settle  # numpy: not at start-up

    categories = project.task.categories(project.options)
    if categories is None:
        raise ValueError(f"a {project.task.label} study has no label distributions to plan from")
    column = {category: index for index, category in enumerate(categories)}
    counts: dict[int, list[int]] = {}
    rows = (
        Annotation.objects.counted()
        .filter(item__project=project)
        .values("item_id", "value")
        .annotate(n=Sum("count"))
        .values_list("item_id", "value", "n")
    )
    for item_id, value, n in rows.iterator(chunk_size=5000):
        if value in column:
            counts.setdefault(item_id, [0] * len(categories))[column[value]] += n
    pilot = [row for row in counts.values() if sum(row) >= PILOT_MINIMUM_ANSWERS]
    if not pilot:
        return None
    needed = labels_to_settle(pilot, target_error, minimum=project.redundancy, maximum=MOST_LABELS_PLANNED)
    within = decided_within(project.options)
    to_decide = labels_to_decide_majority(pilot, within)
    items = Item.objects.filter(project=project, is_gold=False).count()
    labels_per_item = float(needed.mean())
    labels_total = round(labels_per_item * items)
    collected = sum(sum(row) for row in counts.values())
    to_go = max(labels_total - collected, 0)
    priced = price_per_label > 0
    return BudgetPlan(
        target_error=target_error,
        price_per_label=price_per_label,
        items=items,
        pilot_items=len(pilot),
        labels_per_item=round(labels_per_item, 2),
        unsettled_share=round(float((needed >= MOST_LABELS_PLANNED).mean()), 4),
        labels_total=labels_total,
        labels_collected=collected,
        labels_to_go=to_go,
        cost_total=round(labels_total * price_per_label, 2) if priced else None,
        cost_to_go=round(to_go * price_per_label, 2) if priced else None,
        decided_within=within,
        majority_decided_labels_per_item=round(float(to_decide.mean()), 2),
    )
