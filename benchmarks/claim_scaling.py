"""Benchmark: does claiming and submitting a page stay fast as the project grows?

In a scratch PostgreSQL database (nli_bench_claims_<pid>) it bulk-loads an unli_slider project of
--small items (10,000 by default) and measures, then bulk-loads a second project of --large items
(1,000,000) in the same database and measures it the same way. Items are inserted in SQL
(INSERT ... SELECT over generate_series, then ANALYZE), not through the importer.

A measurement: --threads workers (threads in this process, each with its own connection) each run
warm-up cycles, then together --cycles measured cycles; a cycle is claim_page() then submit_page()
of the page with random slider positions, called directly (no HTTP). Reported: the median cycle in
milliseconds for each size and their ratio (goal <= 1.5); the medians of claim and submit alone, and of
one project_progress() call (what every submit computes to push the live dashboard), go along.

The worker-history case: a third project of --history + --small items (redundancy 2), where one worker
already answered the first --history items (10,000 one-item pages, submitted; the items stay claimable
for others, so a claim must pass over them); that worker and a new one then claim and submit
--history-cycles pages each, one after the other. history_ratio = the veteran's median claim / the new
worker's (goal <= 1.5).

Usage: python benchmarks/claim_scaling.py [--small 10000] [--large 1000000] [--cycles 200] [--json]
"""

from __future__ import annotations

import random
import statistics
import threading
import time

from _common import (
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
    series_sql,
)


def run_cycles(project, worker, count: int, seed: int, timings: list[tuple[float, float]] | None) -> None:
    """`count` claim + submit cycles; appends (claim ms, submit ms) per cycle to `timings` if given."""
    from django.db import connection

    from annotation.services.assignments import claim_page, submit_page

    rng = random.Random(seed)
    for _ in range(count):
        start = time.perf_counter()
        page = claim_page(project, worker)
        claimed = time.perf_counter()
        if page is None:
            raise RuntimeError(f"{project.slug} ran out of work; use fewer cycles or more items")
        item_ids = page.claims.values_list("item_id", flat=True)
        answers = {str(item_id): {"value": rng.randrange(0, 10001)} for item_id in item_ids}
        submit_page(page.pk, worker, answers)
        done = time.perf_counter()
        if timings is not None:
            timings.append(((claimed - start) * 1000, (done - claimed) * 1000))
        connection.close()  # as at the end of a request: back to the pool, which has fewer slots than threads


def measure(project, workers, warmup: int, cycles: int) -> dict:
    from django.db import connection

    from annotation.services.progress import project_progress

    timings: list[tuple[float, float]] = []
    errors: list[str] = []
    ready = threading.Barrier(len(workers))
    share = [cycles // len(workers) + (index < cycles % len(workers)) for index in range(len(workers))]

    def work(index: int) -> None:
        try:
            run_cycles(project, workers[index], warmup, seed=index, timings=None)
            ready.wait(timeout=600)
            run_cycles(project, workers[index], share[index], seed=1000 + index, timings=timings)
        except Exception as exc:
            errors.append(repr(exc))
            ready.abort()
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(index,)) for index in range(len(workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(f"a worker failed: {errors[0]}")

    progress_ms = []
    for _ in range(5):
        start = time.perf_counter()
        project_progress(project)
        progress_ms.append((time.perf_counter() - start) * 1000)
    return {
        "cycle_ms": statistics.median(claim + submit for claim, submit in timings),
        "claim_ms": statistics.median(claim for claim, _ in timings),
        "submit_ms": statistics.median(submit for _, submit in timings),
        "progress_ms": statistics.median(progress_ms),
        "cycles": len(timings),
    }


def give_history(project, worker, answered: int) -> None:
    """`answered` submitted one-item pages of `worker` over the project's first items, written in SQL."""
    from django.db import connection, transaction
    from django.utils import timezone

    from annotation.models import Annotation, Assignment

    earlier = timezone.now() - timezone.timedelta(days=1)
    with transaction.atomic():
        insert_select(
            Assignment,
            {
                "project_id": str(int(project.pk)),
                "worker_id": str(int(worker.pk)),
                "status": "'submitted'",
                "expires_at": f"'{earlier.isoformat()}'",
                "submitted_at": f"'{earlier.isoformat()}'",
            },
            series_sql(),
            [answered],
        )
        with connection.cursor() as cursor:
            cursor.execute(
                """
                INSERT INTO annotation_claim (assignment_id, item_id, worker_id, position)
                SELECT a.id, i.id, %s, 0
                FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM annotation_assignment
                      WHERE project_id = %s AND worker_id = %s) a
                JOIN (SELECT id, row_number() OVER (ORDER BY id) AS n FROM annotation_item
                      WHERE project_id = %s ORDER BY id LIMIT %s) i ON i.n = a.n
                """,
                [worker.pk, project.pk, worker.pk, project.pk, answered],
            )
        insert_select(
            Annotation,
            {
                "item_id": "c.item_id",
                "worker_id": "c.worker_id",
                "assignment_id": "c.assignment_id",
                "raw": "'{\"position\": 5000}'::jsonb",
                "value": "'0.5'::jsonb",
            },
            f"annotation_claim c WHERE c.worker_id = {int(worker.pk)}",
            [],
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE annotation_item SET annotation_count = 1 WHERE id IN "
                "(SELECT item_id FROM annotation_claim WHERE worker_id = %s)",
                [worker.pk],
            )
    analyze()


def measure_history(project, veteran, newcomer, cycles: int) -> dict:
    """Median claim and cycle of the veteran and of the new worker, each alone, after 3 warm-up cycles."""
    result = {}
    for name, worker in (("veteran", veteran), ("new", newcomer)):
        run_cycles(project, worker, 3, seed=7, timings=None)
        timings: list[tuple[float, float]] = []
        run_cycles(project, worker, cycles, seed=8, timings=timings)
        result[f"{name}_claim_ms"] = statistics.median(claim for claim, _ in timings)
        result[f"{name}_cycle_ms"] = statistics.median(claim + submit for claim, submit in timings)
    return result


def main():
    parser = argument_parser(__doc__)
    parser.add_argument("--small", type=int, default=10_000, help="items in the small project")
    parser.add_argument("--large", type=int, default=1_000_000, help="items in the large project")
    parser.add_argument("--cycles", type=int, default=200, help="measured claim + submit cycles per project")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured cycles per worker first")
    parser.add_argument("--threads", type=int, default=4, help="concurrent workers")
    parser.add_argument("--history", type=int, default=10_000, help="earlier answers of the veteran worker")
    parser.add_argument("--history-cycles", type=int, default=100, help="measured cycles of each worker")
    args = parser.parse_args()
    needed = (args.cycles + args.warmup * args.threads) * 5
    if min(args.small, args.large) < needed:
        parser.error(f"each project needs at least {needed} items for these cycles")

    load_before = load_average()
    with django_on_scratch_database("claims"):
        from annotation.services.projects import create_project

        author = make_author()
        workers = make_workers(args.threads)
        results = {}
        for name, size in (("small", args.small), ("large", args.large)):
            project = create_project(
                f"scale-{name}", "unli_slider", author, redundancy=2, max_annotations=3, status="published"
            )
            start = time.perf_counter()
            bulk_items(project, size)
            log(f"{name}: {size} items loaded in {time.perf_counter() - start:.1f} s; measuring")
            results[name] = measure(project, workers, args.warmup, args.cycles)
            log(f"{name}: " + ", ".join(f"{key} {value:.1f}" for key, value in results[name].items()))
        project = create_project(
            "scale-history", "unli_slider", author, redundancy=2, max_annotations=3, status="published"
        )
        bulk_items(project, args.history + args.small)
        veteran, newcomer = make_workers(2, prefix="history")
        give_history(project, veteran, args.history)
        log(f"history: {args.history} earlier answers written; measuring")
        history = measure_history(project, veteran, newcomer, args.history_cycles)
        log("history: " + ", ".join(f"{key} {value:.1f}" for key, value in history.items()))

    small, large = results["small"], results["large"]
    emit(
        {
            "small_items": args.small,
            "large_items": args.large,
            "small_ms": round(small["cycle_ms"], 1),
            "large_ms": round(large["cycle_ms"], 1),
            "ratio": round(large["cycle_ms"] / small["cycle_ms"], 2),
            "history_ratio": round(history["veteran_claim_ms"] / history["new_claim_ms"], 2),
            "history_veteran_claim_ms": round(history["veteran_claim_ms"], 1),
            "history_new_claim_ms": round(history["new_claim_ms"], 1),
            "history_answers": args.history,
            "small_claim_ms": round(small["claim_ms"], 1),
            "large_claim_ms": round(large["claim_ms"], 1),
            "small_submit_ms": round(small["submit_ms"], 1),
            "large_submit_ms": round(large["submit_ms"], 1),
            "small_progress_ms": round(small["progress_ms"], 1),
            "large_progress_ms": round(large["progress_ms"], 1),
            "cycles": args.cycles,
            "threads": args.threads,
            "database": "postgresql",
            "load_average_before": load_before,
        },
        args.json,
    )


if __name__ == "__main__":
    main()
