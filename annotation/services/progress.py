"""Progress: the project's counts, shown on the dashboard and pushed live (one pass over the project's items, each
keeping its own counts, whatever the number of answers), and a worker's own, shown on each of their pages."""

from dataclasses import dataclass

from django.db.models import Count, Q, Sum
from django.template.defaultfilters import pluralize

from annotation.models import Assignment, Item, Project


def project_progress(project: Project) -> dict:
    open_item = Q(status=Item.Status.OPEN)
    counts = project.items.filter(is_gold=False).aggregate(
        items=Count("id"),
        done=Count("id", filter=Q(status=Item.Status.DONE)),
        adjudication=Count("id", filter=Q(status=Item.Status.ADJUDICATION)),
        open=Count("id", filter=open_item),
        in_progress=Count("id", filter=open_item & Q(active_claims__gt=0)),
        target=Sum("target"),
        annotations=Sum("annotation_count"),
    )
    total, done = counts["items"], counts["done"]
    return {
        "items": total,
        "done": done,
        "in_progress": counts["in_progress"],
        "adjudication": counts["adjudication"],
        "waiting": counts["open"] - counts["in_progress"],
        "annotations": counts["annotations"] or 0,  # imported votes included
        "target_annotations": counts["target"] or 0,
        "percent_done": round(100.0 * done / total, 1) if total else 0.0,
    }


@dataclass(frozen=True)
class WorkerProgress:
    """Where a worker stands in a study, as their page says: this is page `page` (of `pages_needed`, the
    crowd quota, when there is one) and they have given `answers` answers on `submitted` pages."""

    page: int
    submitted: int
    answers: int
    pages_needed: int = 0  # 0: no quota

    @property
    def text(self) -> str:
        page = f"Page {self.page} of {self.pages_needed}" if self.pages_needed else f"Page {self.page}"
        return f"{page} · {self.answers} answer{pluralize(self.answers)} so far"


def worker_progress(project: Project, worker, pages_needed: int = 0) -> WorkerProgress:
    """The worker's progress from their own submitted pages (one query on the (project, worker, status) index:
    it reads the worker's pages, never the study's, so it costs the same however large the study grows)."""
    counts = Assignment.objects.filter(project=project, worker=worker, status=Assignment.Status.SUBMITTED).aggregate(
        pages=Count("id", distinct=True), answers=Count("claims")
    )
    submitted = counts["pages"]
    # Past the quota (a worker who keeps going where the study allows it) the count goes on rather than lie.
    page = submitted + 1
    return WorkerProgress(page, submitted, counts["answers"], pages_needed if page <= pages_needed else 0)
