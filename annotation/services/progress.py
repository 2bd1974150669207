"""Project progress counts, shown on the dashboard and pushed live: one pass over the project's items (each
keeps its own counts), whatever the number of answers."""

from django.db.models import Count, Q, Sum

from annotation.models import Item, Project


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
