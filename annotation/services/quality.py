"""Quality control: hidden gold checks, per-worker figures and automatic suspension."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, F, JSONField
from django.db.models.functions import Coalesce, TruncHour
from django.utils import timezone

from annotation.models import Annotation, AuditEntry, Item, Project, WorkerStatus
from annotation.services import audit
from common.rows import plain_frame


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


def worker_figures(project: Project, worker_ids=None) -> list[dict]:
    """Per worker (all, or those in `worker_ids`): annotations, median seconds per item, gold accuracy,
    agreement with the final labels, and the flags an author acts on (speeder, suspended, blocked).

    Read as plain rows and reduced with pandas: one pass over the annotations, no model objects."""
    import pandas as pd

    task = project.task
    # Unordered: with the model's ordering SQLite scans every item of the project instead of the workers'
    # answers through their index.
    rows = Annotation.objects.filter(item__project=project, worker__isnull=False).order_by()
    if worker_ids is not None:
        rows = rows.filter(worker_id__in=list(worker_ids))
    final_label = Coalesce("item__adjudicated", "item__aggregate", output_field=JSONField())
    frame = plain_frame(
        rows.values_list("worker_id", "value", "seconds_spent", "item__is_gold", final_label),
        ["worker", "value", "seconds", "is_gold", "final"],
        json_columns=("value", "final"),
    )
    if frame.empty:
        return []
    final = frame["final"]
    frame["is_gold"] = frame["is_gold"].astype(bool)
    compared = ~frame["is_gold"] & final.notna()
    frame["agrees"] = [
        bool(task.matches_reference(value, reference)) if keep else False
        for value, reference, keep in zip(frame["value"], final, compared)
    ]
    frame["compared"] = compared
    grouped = frame.groupby("worker")
    table = pd.DataFrame(
        {
            "annotations": grouped.size(),
            "median_seconds": grouped["seconds"].median(),
            "agree": grouped["agrees"].sum(),
            "compared": grouped["compared"].sum(),
        }
    )
    names = dict(get_user_model().objects.filter(pk__in=table.index.tolist()).values_list("pk", "username"))
    statuses = {
        s.worker_id: s for s in WorkerStatus.objects.filter(project=project, worker_id__in=table.index.tolist())
    }
    threshold = project.options.get("speeder_seconds", 0) or 0
    result = []
    for worker_id, entry in table.iterrows():
        status = statuses.get(worker_id)
        median_seconds = None if pd.isna(entry["median_seconds"]) else float(entry["median_seconds"])
        result.append(
            {
                "worker_id": int(worker_id),
                "worker": names.get(worker_id, f"#{worker_id}"),
                "annotations": int(entry["annotations"]),
                "median_seconds": median_seconds,
                "gold_accuracy": status.gold_accuracy if status else None,
                "gold_answered": status.gold_answered if status else 0,
                "agreement": float(entry["agree"] / entry["compared"]) if entry["compared"] else None,
                "speeder": median_seconds is not None and median_seconds < threshold,
                "suspended": bool(status and status.suspended),
                "blocked": bool(status and status.blocked),
                "answers_excluded": bool(status and status.exclude_answers),
            }
        )
    return sorted(result, key=lambda r: r["worker"])


MAX_REASON = 2000


def block(project: Project, worker, by, exclude_answers: bool = False, reason: str = "") -> WorkerStatus:
    """Stop a worker's work on a project (no more pages); optionally take their answers out of the
    aggregates, agreement figures, reports and exports' aggregates (every per-annotation export then flags
    them with `reason` and who decided). Reversible with unblock; who, when and why are recorded."""
    if not isinstance(reason, str) or len(reason) > MAX_REASON:
        raise ValueError(f"reason: must be text of at most {MAX_REASON} characters")
    return _set_blocked(project, worker, by, blocked=True, exclude_answers=exclude_answers, reason=reason.strip())


def unblock(project: Project, worker, by) -> WorkerStatus:
    return _set_blocked(project, worker, by, blocked=False, exclude_answers=False, reason="")


def _set_blocked(project: Project, worker, by, blocked: bool, exclude_answers: bool, reason: str) -> WorkerStatus:
    with transaction.atomic():
        status, _ = WorkerStatus.objects.select_for_update().get_or_create(project=project, worker=worker)
        status.blocked, status.blocked_at, status.blocked_by = blocked, timezone.now(), by
        status.exclude_answers, status.block_reason = exclude_answers, reason
        status.save(update_fields=["blocked", "blocked_at", "blocked_by", "exclude_answers", "block_reason"])
        _mark_excluded(project, worker, exclude_answers)
        if blocked:
            audit.record(
                by,
                AuditEntry.Action.BLOCK,
                project,
                worker=f"w{worker.pk}",
                exclude_answers=exclude_answers,
                reason=reason,
            )
        else:
            audit.record(by, AuditEntry.Action.UNBLOCK, project, worker=f"w{worker.pk}")
    return status


def _mark_excluded(project: Project, worker, excluded: bool) -> None:
    """Flag the worker's answers in or out and settle again every item they answered."""
    from annotation.services.redundancy import resettle

    answers = Annotation.objects.filter(item__project=project, worker=worker).exclude(excluded=excluded)
    item_ids = list(answers.values_list("item_id", flat=True))
    answers.update(excluded=excluded)
    resettle(project, item_ids)


def worker_detail(project: Project, worker) -> dict:
    """One worker's figures, standing and answers (newest first) for the worker page."""
    figures = worker_figures(project, [worker.pk])
    answers = (
        Annotation.objects.filter(item__project=project, worker=worker)
        .select_related("item__example", "item__atom")
        .order_by("-submitted_at", "-id")
    )
    return {
        "figures": figures[0] if figures else None,
        "status": WorkerStatus.objects.filter(project=project, worker=worker).select_related("blocked_by").first(),
        "answers": answers,
        # Answers per hour of work, oldest first: when they worked, and in what bursts.
        "timeline": list(
            Annotation.objects.filter(item__project=project, worker=worker)
            .order_by()
            .annotate(hour=TruncHour("submitted_at"))
            .values("hour")
            .annotate(answers=Count("id"))
            .order_by("hour")
        ),
    }


def is_gold_correct(project: Project, item: Item, value) -> bool:
    return project.task.matches_reference(value, item.gold)
