"""Benchmark: server time of the dashboard pages of a study with 100,000 items.

Builds an unli_slider study of --items items in SQL (half done, half collecting), each answered by 2 of
--workers workers (every worker answers items / workers * 2 of them), on SQLite in a temporary
NLI_STUDIO_VAR folder (default) or in a scratch PostgreSQL database (--database postgres). Then renders each
dashboard page in-process with Django's test client as the study's author, --repeat times, and prints the
median and worst server time per page in milliseconds (no network: what the server spends on the page).

Pages: the dashboard, the item table searched / filtered / sorted / paged far, the worker table, one
worker's page. Goal: every page under 300 ms at 100,000 items.

Usage: python benchmarks/dashboard.py [--items 100000] [--workers 200] [--repeat 5] [--database sqlite|postgres] [--json]
"""

from __future__ import annotations

import argparse
import statistics
import time

from _common import (
    analyze,
    bulk_items,
    django_on_scratch_database,
    emit,
    insert_select,
    load_average,
    log,
    make_author,
    make_workers,
)

SLUG = "dashboard-bench"


def build(items: int, workers: int):
    from django.db import connection, transaction

    from annotation.models import Annotation
    from annotation.services.projects import create_project

    author = make_author()
    people = make_workers(workers)
    project = create_project(SLUG, "unli_slider", author, redundancy=2, max_annotations=3, status="published")
    start = time.perf_counter()
    bulk_items(
        project,
        items,
        status="CASE WHEN e.position %% 2 = 0 THEN 'done' ELSE 'open' END",
        annotation_count="2",
        claimable="false",
    )
    log(f"{items} items in {time.perf_counter() - start:.1f} s")
    postgres = connection.vendor == "postgresql"
    position = "((i.id * 7919 + w.id * 104729) %% 10001)"
    raw = f"jsonb_build_object('position', {position})" if postgres else f"json_object('position', {position})"
    value = f"to_jsonb({position} / 10000.0)" if postgres else f"json_quote({position} / 10000.0)"
    ids = [person.pk for person in people]
    half = len(ids) // 2
    start = time.perf_counter()
    with transaction.atomic():
        created = insert_select(
            Annotation,
            {
                "item_id": "i.id",
                "worker_id": "w.id",
                "raw": raw,
                "value": value,
                "seconds_spent": "1.5 + (i.id + w.id) %% 30",
            },
            # Each item is answered by the two workers whose rank matches its id modulo half the workers.
            f"annotation_item i JOIN auth_user w ON w.id IN ({', '.join(map(str, ids))}) "
            f"AND (w.id - {ids[0]}) %% {half} = i.id %% {half} WHERE i.project_id = {int(project.pk)}",
            [],
        )
        _pages(project)
    analyze()
    log(f"{created} annotations in {time.perf_counter() - start:.1f} s")
    return project, author, people[0], created


def _pages(project, per_page: int = 5) -> None:
    """The submitted pages the answers came on: one per worker and run of 5 item ids (the bucket is kept
    in submission_digest while the answers are pointed at their pages)."""
    from django.db import connection

    from annotation.models import Assignment

    with connection.cursor() as cursor:
        # Made before the rows go in: PostgreSQL refuses CREATE INDEX on a table with pending FK trigger events.
        cursor.execute("CREATE INDEX bench_pages ON annotation_assignment (worker_id, submission_digest)")
    insert_select(
        Assignment,
        {
            "project_id": str(int(project.pk)),
            "worker_id": "w",
            "status": "'submitted'",
            "submission_digest": "'b' || b",
            "expires_at": "CURRENT_TIMESTAMP",
        },
        f"(SELECT DISTINCT worker_id AS w, item_id / {per_page} AS b FROM annotation_annotation) AS pages",
        [],
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE annotation_annotation SET assignment_id = (SELECT s.id FROM annotation_assignment s "
            "WHERE s.worker_id = annotation_annotation.worker_id "
            f"AND s.submission_digest = 'b' || (annotation_annotation.item_id / {per_page}))"
        )
        cursor.execute("DROP INDEX bench_pages")


def measure(args) -> dict:
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    project, author, worker, annotations = build(args.items, args.workers)
    client = Client()
    client.force_login(author)
    base = f"/projects/{project.slug}"
    pages = {
        "dashboard": f"{base}/",
        "items_search": f"{base}/items/?q=number 77777",
        "items_filter_sort": f"{base}/items/?show=done&sort=-annotations",
        "items_far_page": f"{base}/items/?page=3000",
        "workers_table": f"{base}/workers/",
        "worker_page": f"{base}/workers/{worker.pk}/",
    }
    figures = {"items": args.items, "annotations": annotations, "workers": args.workers}
    for name, url in pages.items():
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            response = client.get(url, HTTP_HOST="localhost")
            times.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        figures[f"{name}_median_ms"] = round(statistics.median(times), 1)
        figures[f"{name}_max_ms"] = round(max(times), 1)
        log(f"{name}: median {statistics.median(times):.0f} ms")
    figures["worst_median_ms"] = max(value for key, value in figures.items() if key.endswith("_median_ms"))
    figures["load_average"] = load_average()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with django_on_scratch_database("dashboard", args.database):
        figures = measure(args)
        figures["database"] = args.database
    emit(figures, args.json)


if __name__ == "__main__":
    main()
