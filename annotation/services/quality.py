"""Quality control: hidden gold checks, per-worker figures and automatic suspension."""
from __future__ import annotations

from statistics import median

from django.db.models import F
from django.utils import timezone

from annotation.models import Annotation, Item, Project, WorkerStatus


def record_gold_answers(project: Project, worker, gold_results: list[bool]) -> WorkerStatus:
    """Count a page's gold answers for the worker; suspend below the project's threshold."""
    status, _ = WorkerStatus.objects.select_for_update().get_or_create(project=project, worker=worker)
    if not gold_results:
        return status
    WorkerStatus.objects.filter(pk=status.pk).update(
        gold_answered=F("gold_answered") + len(gold_results), gold_correct=F("gold_correct") + sum(gold_results)
    )
    status.refresh_from_db()
    if (
        project.suspend_below > 0
        and not status.suspended
        and status.gold_answered >= project.gold_min_checks
        and status.gold_accuracy < project.suspend_below
    ):
        status.suspended = True
        status.suspended_at = timezone.now()
        status.save(update_fields=["suspended", "suspended_at"])
    return status


def gold_reference(project: Project, example, atom) -> object:
    """The reference answer an imported row carries, for items imported as gold checks (None: it has none)."""
    return project.task.gold_reference(example, atom, project.options)


def worker_figures(project: Project) -> list[dict]:
    """Per worker: annotations, median seconds per item, gold accuracy, agreement with the final labels."""
    task = project.task
    rows = (
        Annotation.objects.filter(item__project=project, worker__isnull=False)
        .values_list("worker_id", "worker__username", "value", "seconds_spent", "item__is_gold", "item__aggregate", "item__adjudicated")
        .order_by("worker_id")
    )
    figures: dict[int, dict] = {}
    for worker_id, username, value, seconds, is_gold, aggregate, adjudicated in rows.iterator(chunk_size=5000):
        entry = figures.setdefault(worker_id, {"worker": username, "annotations": 0, "seconds": [], "agree": 0, "compared": 0})
        entry["annotations"] += 1
        if seconds is not None:
            entry["seconds"].append(seconds)
        final = adjudicated if adjudicated is not None else aggregate
        if not is_gold and final is not None:
            entry["compared"] += 1
            entry["agree"] += bool(task.matches_reference(value, final))
    statuses = {s.worker_id: s for s in WorkerStatus.objects.filter(project=project)}
    result = []
    for worker_id, entry in figures.items():
        status = statuses.get(worker_id)
        result.append(
            {
                "worker": entry["worker"],
                "annotations": entry["annotations"],
                "median_seconds": median(entry["seconds"]) if entry["seconds"] else None,
                "gold_accuracy": status.gold_accuracy if status else None,
                "agreement": entry["agree"] / entry["compared"] if entry["compared"] else None,
                "suspended": bool(status and status.suspended),
            }
        )
    return sorted(result, key=lambda r: r["worker"])


def is_gold_correct(project: Project, item: Item, value) -> bool:
    return project.task.matches_reference(value, item.gold)
