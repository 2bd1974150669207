"""Project progress counts, shown on the dashboard and pushed live."""
from django.db.models import Count, Sum

from annotation.models import Annotation, Item, Project


def project_progress(project: Project) -> dict:
    data_items = project.items.filter(is_gold=False)
    by_status = dict(data_items.values("status").annotate(n=Count("id")).values_list("status", "n"))
    in_progress = data_items.filter(status=Item.Status.OPEN, active_claims__gt=0).count()
    total = sum(by_status.values())
    done = by_status.get(Item.Status.DONE, 0)
    collected = Annotation.objects.filter(item__project=project, item__is_gold=False, imported=False).count()
    target = data_items.aggregate(t=Sum("target"))["t"] or 0
    return {
        "items": total,
        "done": done,
        "in_progress": in_progress,
        "adjudication": by_status.get(Item.Status.ADJUDICATION, 0),
        "waiting": by_status.get(Item.Status.OPEN, 0) - in_progress,
        "annotations": collected,
        "target_annotations": target,
        "percent_done": round(100.0 * done / total, 1) if total else 0.0,
    }
