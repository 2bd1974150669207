"""Benchmark: every author and worker page and the main API calls of a study of 200,000 items and 1,000,000
answers, p50 and p95 server time each, against the goals of issue 54.

Builds, in SQL (INSERT ... SELECT, no Python object per row), an unli_slider study of --items items answered
--answers times in all by --workers workers (answers / items per item; half the items done, 1 % waiting for
adjudication, the rest open for one more answer), its answers on submitted pages claimed over 30 days and each
submitted 20-200 s after its claim (the dashboard's median page time reads them), and an nli_label study of
--label-items items x 5 answers by 10 workers of differing accuracy for the annotator models. Then requests
each page --repeat times (after one unmeasured request) in-process with Django's test client: server time
without the network, as the author, a fresh worker or the API. The report's figures are computed by a report
job once first (TASKS_BACKEND=immediate: the job runs in the request that starts it, timed as report_job_s);
the report page is then timed reading them.

Goals: worker pages, the worker API calls and the dashboard p95 < 200 ms; /models/ < 300 ms; every other page
< 1 s. Prints one line per page (p50, p95, goal, ok) and exits 1 when a goal is missed.

Usage: python benchmarks/pages.py [--items 200000] [--answers 1000000] [--workers 500] [--label-items 4000]
    [--repeat 20] [--database sqlite|postgres] [--database-url postgres://.../bench_pages] [--json]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from contextlib import contextmanager
from functools import partial

from _common import (
    PRODUCTION_SECRET_KEY,
    analyze,
    argument_parser,
    bulk_items,
    django_on_scratch_database,
    emit,
    insert_select,
    load_average,
    log,
    make_author,
    make_workers,
    migrate,
    percentile,
    setup_django,
)

SLUG, LABEL_SLUG = "pages-bench", "pages-labels"
WORKER_MS, DASHBOARD_MS, MODELS_MS, PAGE_MS = 200, 200, 300, 1000
LABEL_WORKERS, LABEL_ANSWERS_PER_ITEM = 10, 5
PAGE_ITEMS = 5  # items on a submitted page of the large study
PAGE_SPREAD_DAYS = 30  # the large study's pages were claimed over this many days
# What the author (or the API as the author) asks for, with its goal; {base} is the large study's pages.
AUTHOR_PAGES = {
    "dashboard": ("{base}/", DASHBOARD_MS),
    "author_home": ("/", PAGE_MS),
    "items_search": ("{base}/items/?q=number 77777", PAGE_MS),
    "items_filter_sort": ("{base}/items/?show=done&sort=-annotations", PAGE_MS),
    "items_far_page": ("{base}/items/?page={far_page}", PAGE_MS),
    "workers_table": ("{base}/workers/", PAGE_MS),
    "worker_page": ("{base}/workers/{worker}/", PAGE_MS),
    "adjudication_queue": ("{base}/adjudication/", PAGE_MS),
    "adjudication_item": ("{base}/adjudication/{adjudicated}/", PAGE_MS),
    "report": ("{base}/report/", PAGE_MS),
    "label_report": ("{labels}/report/", PAGE_MS),
    "settings": ("{base}/settings/", PAGE_MS),
    "preview": ("{base}/preview/", PAGE_MS),
    "qualification": ("{base}/qualification/", PAGE_MS),
    "jobs": ("/jobs/", PAGE_MS),
    "models": ("/models/", MODELS_MS),
    "api_projects": ("/api/v1/projects/", PAGE_MS),
    "api_project": ("/api/v1{base}/", PAGE_MS),
    "api_progress": ("/api/v1{base}/progress/", PAGE_MS),
    "api_results": ("/api/v1{base}/results/", PAGE_MS),
    "api_adjudication": ("/api/v1{base}/adjudication/", PAGE_MS),
    # The report job's cached figures (computed once, timed as report_job_s): the API serves them.
    "api_agreement": ("/api/v1{base}/agreement/", PAGE_MS),
    "api_annotator_models": ("/api/v1{labels}/annotator-models/", PAGE_MS),
}


def build_slider_study(author, items: int, answers: int, workers: int):
    """The large study: `answers // items` answers on each item, each worker answering the same share."""
    from dashboard import _pages as put_on_pages
    from django.db import connection, transaction

    from annotation.models import Annotation
    from annotation.services.projects import create_project

    per_item = max(1, answers // items)
    if workers < per_item or workers % per_item:
        raise SystemExit(f"--workers must be a multiple of the answers per item ({per_item})")
    people = make_workers(workers)
    project = create_project(SLUG, "unli_slider", author, redundancy=per_item, max_annotations=per_item + 1)
    project.status = "published"
    project.save(update_fields=["status"])
    start = time.perf_counter()
    # Even positions done, 1 in 100 waiting for an author, the rest open for one more answer.
    status = "CASE WHEN e.position %% 2 = 0 THEN 'done' WHEN e.position %% 100 = 1 THEN 'adjudication' ELSE 'open' END"
    bulk_items(
        project,
        items,
        status=status,
        annotation_count=str(per_item),
        target=f"CASE WHEN e.position %% 2 = 1 AND e.position %% 100 <> 1 THEN {per_item + 1} ELSE {per_item} END",
        claimable=f"CASE WHEN e.position %% 2 = 1 AND e.position %% 100 <> 1 THEN {_true()} ELSE {_false()} END",
    )
    log(f"{items} items in {time.perf_counter() - start:.1f} s")
    postgres = connection.vendor == "postgresql"
    position = "((i.id * 7919 + w.id * 104729) %% 10001)"
    raw = f"jsonb_build_object('position', {position})" if postgres else f"json_object('position', {position})"
    value = f"to_jsonb({position} / 10000.0)" if postgres else f"json_quote({position} / 10000.0)"
    ids = [person.pk for person in people]
    groups = workers // per_item
    start = time.perf_counter()
    with transaction.atomic():
        created = insert_select(
            Annotation,
            {"item_id": "i.id", "worker_id": "w.id", "raw": raw, "value": value, "seconds_spent": "2.5"},
            # Each run of PAGE_ITEMS item ids is answered by the per_item workers whose rank matches the run's
            # number modulo the groups: a worker's answers then come on pages of PAGE_ITEMS items.
            f"annotation_item i JOIN auth_user w ON w.id BETWEEN {ids[0]} AND {ids[-1]} "
            f"AND (w.id - {ids[0]}) %% {groups} = (i.id / {PAGE_ITEMS}) %% {groups} "
            f"WHERE i.project_id = {int(project.pk)}",
            [],
        )
        put_on_pages(project, PAGE_ITEMS)
        time_pages(project)
    log(f"{created} answers in {time.perf_counter() - start:.1f} s")
    return project, people[0], created


def time_pages(project) -> None:
    """Claim and submit times on the study's submitted pages, as a real study has them (the dashboard's
    median page time reads them): claimed one after another over the last PAGE_SPREAD_DAYS days, each page
    submitted 20 to 200 s after its claim, spread evenly by page id."""
    from datetime import UTC, datetime, timedelta

    from django.db import connection

    first_claim = datetime.now(UTC) - timedelta(days=PAGE_SPREAD_DAYS)
    with connection.cursor() as cursor:
        cursor.execute("SELECT MIN(id), MAX(id) FROM annotation_assignment WHERE project_id = %s", [project.pk])
        low, high = cursor.fetchone()
        step = PAGE_SPREAD_DAYS * 86_400 / max(1, high - low)  # seconds between two claims
        claimed = f"(id - {low}) * {step:.6f}"
        submitted = f"{claimed} + 20 + (id * 7919) %% 181"
        if connection.vendor == "postgresql":
            start = first_claim
            moment = "%s::timestamptz + make_interval(secs => {})".format
        else:  # SQLite: Django keeps datetimes as ISO text in UTC
            start = first_claim.strftime("%Y-%m-%d %H:%M:%S")
            moment = "strftime('%%Y-%%m-%%d %%H:%%M:%%f', %s, '+' || ({}) || ' seconds')".format
        cursor.execute(
            f"UPDATE annotation_assignment SET created_at = {moment(claimed)}, submitted_at = {moment(submitted)} "
            "WHERE project_id = %s AND status = 'submitted'",
            [start, start, project.pk],
        )


def build_label_study(author, items: int):
    """The label study: LABEL_ANSWERS_PER_ITEM of LABEL_WORKERS workers on each item; worker k gives the item's
    label (its id modulo 3) on 9 - k of 10 items and the next label otherwise, so the models rate them apart."""
    from django.db import connection, transaction

    from annotation.models import Annotation
    from annotation.services.projects import create_project

    people = make_workers(LABEL_WORKERS, prefix="labeller")
    project = create_project(LABEL_SLUG, "nli_label", author, redundancy=LABEL_ANSWERS_PER_ITEM)
    bulk_items(project, items, status="'done'", annotation_count=str(LABEL_ANSWERS_PER_ITEM), claimable=_false())
    first = people[0].pk
    rank = f"(w.id - {first})"
    code = f"((i.id + CASE WHEN (i.id * 7 + {rank} * 13) %% 10 < 9 - {rank} THEN 0 ELSE 1 END) %% 3)"
    label = f"CASE {code} WHEN 0 THEN 'e' WHEN 1 THEN 'n' ELSE 'c' END"
    as_json = f"to_jsonb({label})" if connection.vendor == "postgresql" else f"json_quote({label})"
    with transaction.atomic():
        created = insert_select(
            Annotation,
            {"item_id": "i.id", "worker_id": "w.id", "raw": as_json, "value": as_json},
            f"annotation_item i JOIN auth_user w ON w.id BETWEEN {first} AND {first + LABEL_WORKERS - 1} "
            f"AND ({rank} - i.id %% {LABEL_WORKERS} + {LABEL_WORKERS}) %% {LABEL_WORKERS} < {LABEL_ANSWERS_PER_ITEM} "
            f"WHERE i.project_id = {int(project.pk)}",
            [],
        )
    log(f"label study: {items} items, {created} answers")
    return project, created


def settle() -> None:
    """Planner statistics, and on PostgreSQL the visibility map too (VACUUM ANALYZE): what autovacuum gives a
    live database, so that counts read indexes alone rather than every row of a table just loaded."""
    from django.db import connection

    if connection.vendor != "postgresql" or connection.in_atomic_block:  # VACUUM runs outside transactions only
        analyze()
        return
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def _true() -> str:
    from django.db import connection

    return "true" if connection.vendor == "postgresql" else "1"


def _false() -> str:
    from django.db import connection

    return "false" if connection.vendor == "postgresql" else "0"


class Timer:
    """Times requests of one Django test client; keeps each page's times in milliseconds."""

    def __init__(self, repeat: int):
        self.repeat = repeat
        self.times: dict[str, list[float]] = {}
        self.goals: dict[str, int] = {}

    def request(self, name: str, goal: int, call, expected: int = 200):
        """One measured request: `call()` returns the response."""
        start = time.perf_counter()
        response = call()
        elapsed = (time.perf_counter() - start) * 1000
        if response.status_code != expected:
            raise RuntimeError(f"{name}: status {response.status_code}, expected {expected}")
        self.times.setdefault(name, []).append(elapsed)
        self.goals[name] = goal
        return response

    def page(self, name: str, goal: int, client, url: str, expected: int = 200) -> None:
        client.get(url, HTTP_HOST="localhost")  # unmeasured: the first request of a page imports its modules
        for _ in range(self.repeat):
            self.request(name, goal, lambda: client.get(url, HTTP_HOST="localhost"), expected)
        log(f"{name}: p50 {percentile(self.times[name], 0.5):.0f} ms, p95 {percentile(self.times[name], 0.95):.0f} ms")


def worker_cycles(timer: Timer, project, workers) -> None:
    """Each fresh worker opens the work page (a claim, the page shown) and submits it through the API, then
    claims and submits a page through the API alone, then opens their home page. The first worker's cycle
    is not measured (it imports the modules)."""
    import random

    from django.test import Client

    from annotation.models import Assignment

    rng = random.Random(0)
    for index, worker in enumerate(workers):
        client = Client(HTTP_HOST="localhost")
        client.force_login(worker)

        def timed(name: str, call, expected: int = 200, measured: bool = index > 0):
            return timer.request(name, WORKER_MS, call, expected) if measured else call()

        timed("work_page", partial(client.get, f"/work/{project.slug}/"))
        shown = Assignment.objects.get(worker=worker, status="open").pk
        timed("api_submit", partial(_submit, client, shown, _answers(shown, rng)))
        claimed = timed("api_claim", partial(client.post, f"/api/v1/projects/{project.slug}/claim/"), 201).json()["id"]
        timed("api_submit", partial(_submit, client, claimed, _answers(claimed, rng)))
        timed("worker_home", partial(client.get, "/"))


def _answers(page_id: int, rng) -> dict:
    """A random slider position for each item of the page."""
    from annotation.models import Claim

    item_ids = Claim.objects.filter(assignment_id=page_id).values_list("item_id", flat=True)
    return {str(item_id): {"value": rng.randrange(0, 10001)} for item_id in item_ids}


def _submit(client, page_id: int, answers: dict):
    return client.post(f"/api/v1/assignments/{page_id}/submit/", {"answers": answers}, content_type="application/json")


def measure(args) -> dict:
    """Build both studies in the database Django is set up on, time every page; the figures, with `missed`
    naming each page over its goal ("none" when all meet theirs)."""
    from django.test import Client

    from annotation.models import Item

    author = make_author()
    project, answered_worker, answers = build_slider_study(author, args.items, args.answers, args.workers)
    labels, label_answers = build_label_study(author, args.label_items)
    settle()
    timer = Timer(args.repeat)
    client = Client()
    client.force_login(author)

    figures = {"items": args.items, "answers": answers, "label_items": args.label_items, "label_answers": label_answers}
    for study, name in ((project, "report_job_s"), (labels, "label_report_job_s")):
        start = time.perf_counter()
        first = client.get(f"/projects/{study.slug}/report/", HTTP_HOST="localhost")
        assert first.status_code == 200 and b'id="computed-at"' in first.content, first.content[:500]
        figures[name] = round(time.perf_counter() - start, 2)
        log(f"{study.slug}: the report's figures computed in {figures[name]} s")

    urls = {
        "base": f"/projects/{project.slug}",
        "labels": f"/projects/{labels.slug}",
        "far_page": max(1, args.items // 100),
        "worker": answered_worker.pk,
        "adjudicated": Item.objects.filter(project=project, status="adjudication").values_list("pk", flat=True)[0],
    }
    for name, (url, goal) in AUTHOR_PAGES.items():
        timer.page(name, goal, client, url.format(**urls))
    worker_cycles(timer, project, make_workers(args.repeat + 1, prefix="newcomer"))

    missed = []
    for name, times in timer.times.items():
        p50, p95 = percentile(times, 0.5), percentile(times, 0.95)
        figures[f"{name}_p50_ms"] = round(p50, 1)
        figures[f"{name}_p95_ms"] = round(p95, 1)
        if p95 >= timer.goals[name]:
            missed.append(f"{name} (p95 {p95:.0f} ms, goal {timer.goals[name]} ms)")
    figures["requests_per_page"] = args.repeat
    figures["missed"] = "; ".join(missed) or "none"
    figures["load_average"] = load_average()
    return figures


@contextmanager
def django_on_named_database(url: str):
    """The PostgreSQL database at `url` dropped and made again (a benchmark's own), migrated, with this
    process's Django on it; left in place afterwards for a look at its queries (the next run drops it)."""
    import psycopg

    server, name = url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    with tempfile.TemporaryDirectory(prefix="nli-bench-pages-") as var_dir:
        migrate(url, var_dir)
        setup_django(url, var_dir)
        yield url, var_dir


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--answers", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=500)
    parser.add_argument("--label-items", type=int, default=4_000, help="items of the label study (5 answers each)")
    parser.add_argument("--repeat", type=int, default=20, help="measured requests per page")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--database-url", help="a PostgreSQL database of its own, dropped and made again")
    args = parser.parse_args()
    if args.items < 200:
        parser.error("--items must be 200 or more (the pages need items in every state)")
    # Production settings (DEBUG off: no query log, cached templates). The report job runs in the request
    # that starts it, so its time is measured once, apart from the page's.
    os.environ.update(
        DEBUG="false",
        SECRET_KEY=PRODUCTION_SECRET_KEY,
        ALLOWED_HOSTS="localhost",
        TASKS_BACKEND="immediate",
    )
    databases = (
        django_on_named_database(args.database_url)
        if args.database_url
        else django_on_scratch_database("pages", args.database)
    )
    with databases as (url, _):
        from django.test.utils import setup_test_environment

        setup_test_environment()
        figures = measure(args)
        figures["database"] = url.split(":", 1)[0]
    emit(figures, args.json)
    if figures["missed"] != "none":
        print(f"goals missed: {figures['missed']}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
