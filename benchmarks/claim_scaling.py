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

Usage: python benchmarks/claim_scaling.py [--small 10000] [--large 1000000] [--cycles 200] [--json]
"""
from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time

from _common import (
    bulk_items,
    emit,
    load_average,
    log,
    make_author,
    make_workers,
    migrate,
    scratch_postgres,
    setup_django,
)


def run_cycles(project, worker, count: int, seed: int, timings: list[tuple[float, float]] | None) -> None:
    """`count` claim + submit cycles; appends (claim ms, submit ms) per cycle to `timings` if given."""
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
        except Exception as exc:  # noqa: BLE001  (reported below, the benchmark fails)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=10_000, help="items in the small project")
    parser.add_argument("--large", type=int, default=1_000_000, help="items in the large project")
    parser.add_argument("--cycles", type=int, default=200, help="measured claim + submit cycles per project")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured cycles per worker first")
    parser.add_argument("--threads", type=int, default=4, help="concurrent workers")
    parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
    args = parser.parse_args()
    needed = (args.cycles + args.warmup * args.threads) * 5
    if min(args.small, args.large) < needed:
        parser.error(f"each project needs at least {needed} items for these cycles")

    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="nli-bench-claims-") as var_dir, scratch_postgres("claims") as url:
        migrate(url, var_dir)
        setup_django(url, var_dir)
        from annotation.services.projects import create_project

        author = make_author()
        workers = make_workers(args.threads)
        results = {}
        for name, size in (("small", args.small), ("large", args.large)):
            project = create_project(f"scale-{name}", "unli_slider", author, redundancy=2, max_annotations=3)
            start = time.perf_counter()
            bulk_items(project, size)
            log(f"{name}: {size} items loaded in {time.perf_counter() - start:.1f} s; measuring")
            results[name] = measure(project, workers, args.warmup, args.cycles)
            log(f"{name}: " + ", ".join(f"{key} {value:.1f}" for key, value in results[name].items()))

    small, large = results["small"], results["large"]
    emit(
        {
            "small_items": args.small,
            "large_items": args.large,
            "small_ms": round(small["cycle_ms"], 1),
            "large_ms": round(large["cycle_ms"], 1),
            "ratio": round(large["cycle_ms"] / small["cycle_ms"], 2),
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
