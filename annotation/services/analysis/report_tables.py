"""The report's tables: counts and shares read from the answers when the page is shown, unlike its figures
(analysis.report_job). Nothing here needs numpy, pandas or scipy, so the report page does not load them into
a web process (benchmarks/startup.py); a task type whose tables need them imports them in its own
report_tables."""

from __future__ import annotations

from annotation.models import Annotation, Project
from annotation.services import extensions, linking


def report_tables(project: Project) -> list[dict]:
    """The report's tables: the task type's own (TaskType.report_tables), for answers validated in a linked
    project the writers' validation rates (linking.report_tables), and those the features add
    (extensions.REPORT_TABLES: the label-variation app's tables for projects with explanations of their labels).
    Read when the page is shown: they follow other studies' answers too."""
    task = project.task
    return (
        task.report_tables(lambda: counted_values(project), project.options)
        + linking.report_tables(project)
        + [table for tables in extensions.REPORT_TABLES for table in tables(project)]
    )


def counted_values(project: Project) -> dict[int, list]:
    """The values of the project's answers that count (Annotation.objects.counted()), by item id in answer order."""
    rows = (
        Annotation.objects.counted()
        .filter(item__project=project, worker__isnull=False)
        .order_by("item_id", "id")
        .values_list("item_id", "value")
    )
    by_item: dict[int, list] = {}
    for item_id, value in rows.iterator(chunk_size=5000):
        by_item.setdefault(item_id, []).append(value)
    return by_item
