"""Benchmark: many workers claiming and submitting slider pages over HTTP at once, on PostgreSQL.

Creates a scratch database nli_bench_load_<pid>, migrates it, imports the U-SNLI dev set (3040 items) into
an unli_slider project (redundancy 2, at most 3 annotations), makes one worker user with an API token per
simulated worker, and serves the app with one daphne process (DEBUG off) on a free port of 127.0.0.1.
Each simulated worker is a thread with its own keep-alive connection that claims a page
(POST /api/projects/<slug>/claim/) and submits random slider positions for it
(POST /api/assignments/<id>/submit/) until --seconds have passed (the page in hand is still submitted)
or the project has no work left for it. The clock covers the whole run, so annotations_per_s is
acknowledged annotations over the wall time until the last worker stopped.

Afterwards the database is checked against the engine's invariants, counting from the stored rows:
  over_assigned          items whose annotations + active claims exceed their target, or whose
                         annotations exceed the project's max_annotations
  duplicate_worker_item  (item, worker) pairs annotated more than once
  lost_submits           submits answered 200 whose annotations are not all stored under that page
  errors_5xx             server errors seen by the clients
and (not required, reported too) counter_mismatch: items whose annotation_count / active_claims
columns disagree with the rows. The server is stopped and the database dropped at the end, on error too.

Usage: python benchmarks/load.py [--workers 64] [--seconds 30] [--json]
Latencies are client-side (request sent to response read), in milliseconds.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

from _common import (
    bulk_items,
    PYTHON,
    REPO_ROOT,
    django_env,
    emit,
    load_average,
    log,
    make_author,
    make_workers,
    migrate,
    percentile,
    scratch_postgres,
    setup_django,
)

SLUG = "load-usnli"
REQUEST_TIMEOUT_S = 60
MAX_FAILURES_PER_WORKER = 20  # a worker whose requests keep failing stops instead of spinning


@dataclass
class WorkerLog:
    claim_ms: list[float] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)
    # (assignment id, item ids) of every submit answered 200
    acknowledged: list[tuple[int, list[int]]] = field(default_factory=list)
    annotations: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    transport_errors: int = 0
    first_error: str = ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(port: int, database_url: str, var_dir: str, log_path: str) -> subprocess.Popen:
    env = django_env(
        database_url, var_dir, DEBUG="false", SECRET_KEY="benchmark-secret-key-not-for-production",
        ALLOWED_HOSTS="127.0.0.1",
    )
    with open(log_path, "wb") as server_log:
        server = subprocess.Popen(
            [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"],
            cwd=REPO_ROOT, env=env, stdout=server_log, stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"daphne exited with {server.returncode}; see {log_path}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/api/projects/")
            connection.getresponse().read()
            connection.close()
            return server
        except OSError:
            time.sleep(0.2)
    server.terminate()
    raise RuntimeError(f"daphne did not answer on port {port} within 60 s; see {log_path}")


def stop_server(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, all cores together."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    idle = values[3] + values[4]
    ticks = os.sysconf("SC_CLK_TCK")
    return (sum(values) - idle) / ticks, sum(values) / ticks


def run_worker(port: int, token: str, slug: str, seed: int, deadline: float, record: WorkerLog) -> None:
    rng = random.Random(seed)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    failures = 0

    def call(path: str, body: bytes, timings: list[float]) -> tuple[int, bytes]:
        nonlocal connection
        start = time.perf_counter()
        try:
            connection.request("POST", path, body=body, headers=headers)
            response = connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as exc:
            record.transport_errors += 1
            record.first_error = record.first_error or repr(exc)
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
            return 0, b""
        timings.append((time.perf_counter() - start) * 1000)
        record.statuses[response.status] = record.statuses.get(response.status, 0) + 1
        return response.status, payload

    while time.monotonic() < deadline and failures < MAX_FAILURES_PER_WORKER:
        status, payload = call(f"/api/projects/{slug}/claim/", b"", record.claim_ms)
        if status == 204:
            break  # no work left for this worker
        if status != 201:
            failures += 1
            record.first_error = record.first_error or f"claim {status}: {payload[:200]!r}"
            continue
        page = json.loads(payload)
        item_ids = [item["id"] for item in page["items"]]
        answers = {str(item_id): {"value": rng.randrange(0, 10001), "seconds": 3.0} for item_id in item_ids}
        body = json.dumps({"answers": answers}).encode()
        status, payload = call(f"/api/assignments/{page['id']}/submit/", body, record.submit_ms)
        if status == 200:
            record.acknowledged.append((page["id"], item_ids))
            record.annotations += json.loads(payload)["annotations"]
        else:
            failures += 1
            record.first_error = record.first_error or f"submit {status}: {payload[:200]!r}"
    connection.close()


def prepare(workers: int, items: int, items_per_page: int, redundancy: int):
    """The project, its items and the workers' API tokens."""
    from rest_framework.authtoken.models import Token

    from annotation.services.projects import create_project

    project = create_project(SLUG, "unli_slider", make_author(), redundancy=redundancy,
                             max_annotations=redundancy + 1, items_per_page=items_per_page,
                             status="published")
    bulk_items(project, items)
    log(f"loaded {items} items ({items_per_page} per page, redundancy {redundancy})")
    users = make_workers(workers)
    tokens = Token.objects.bulk_create([Token(user=user, key=Token.generate_key()) for user in users])
    return project, [token.key for token in tokens]


def check_invariants(project, acknowledged: list[tuple[int, list[int]]]) -> dict:
    """Count violations from the stored rows, not from the denormalised counters."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH stored AS (SELECT item_id, SUM("count") AS n FROM annotation_annotation GROUP BY item_id),
                 held AS (SELECT item_id, COUNT(*) AS n FROM annotation_claim WHERE active GROUP BY item_id)
            SELECT
                COUNT(*) FILTER (WHERE COALESCE(stored.n, 0) + COALESCE(held.n, 0) > item.target
                                    OR COALESCE(stored.n, 0) > project.max_annotations),
                COUNT(*) FILTER (WHERE COALESCE(stored.n, 0) <> item.annotation_count
                                    OR COALESCE(held.n, 0) <> item.active_claims)
            FROM annotation_item item
            JOIN annotation_project project ON project.id = item.project_id
            LEFT JOIN stored ON stored.item_id = item.id
            LEFT JOIN held ON held.item_id = item.id
            WHERE item.project_id = %s
            """,
            [project.pk],
        )
        over_assigned, counter_mismatch = cursor.fetchone()
        cursor.execute(
            """
            SELECT COUNT(*) FROM (
                SELECT item_id, worker_id FROM annotation_annotation WHERE worker_id IS NOT NULL
                GROUP BY item_id, worker_id HAVING COUNT(*) > 1
            ) AS repeated
            """
        )
        duplicate_worker_item = cursor.fetchone()[0]
        cursor.execute("SELECT assignment_id, item_id FROM annotation_annotation WHERE assignment_id IS NOT NULL")
        stored_pairs = set(cursor.fetchall())
    lost_submits = sum(
        1 for page_id, item_ids in acknowledged if any((page_id, item_id) not in stored_pairs for item_id in item_ids)
    )
    return {
        "over_assigned": over_assigned,
        "duplicate_worker_item": duplicate_worker_item,
        "lost_submits": lost_submits,
        "counter_mismatch": counter_mismatch,
    }


def drive(port: int, tokens: list[str], seconds: float) -> tuple[list[WorkerLog], float, dict]:
    logs = [WorkerLog() for _ in tokens]
    start = time.monotonic()
    deadline = start + seconds
    threads = [
        threading.Thread(target=run_worker, args=(port, token, SLUG, index, deadline, logs[index]), daemon=True)
        for index, token in enumerate(tokens)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        # A worker sends at most one more claim and submit after the deadline, each bounded by the timeout.
        thread.join(timeout=max(0.0, deadline - time.monotonic()) + 2 * REQUEST_TIMEOUT_S + 5)
    elapsed = time.monotonic() - start
    stuck = sum(thread.is_alive() for thread in threads)
    return logs, elapsed, {"stuck_workers": stuck}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=64, help="simulated workers (threads), one user each")
    parser.add_argument("--seconds", type=float, default=30, help="how long workers keep claiming")
    parser.add_argument("--items", type=int, default=10_000, help="items in the project")
    parser.add_argument("--items-per-page", type=int, default=1, help="items on one page (k)")
    parser.add_argument("--redundancy", type=int, default=1, help="annotations wanted per item")
    parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
    args = parser.parse_args()
    if not 1 <= args.workers <= 512 or not 0 < args.seconds <= 600:
        parser.error("--workers must be 1..512 and --seconds 0..600")

    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="nli-bench-load-") as var_dir, scratch_postgres("load") as url:
        migrate(url, var_dir)
        setup_django(url, var_dir)
        from django.db import connections

        project, tokens = prepare(args.workers, args.items, args.items_per_page, args.redundancy)
        connections.close_all()

        port = free_port()
        server_log = os.path.join(var_dir, "daphne.log")
        server = start_server(port, url, var_dir, server_log)
        try:
            log(f"daphne (1 process, pid {server.pid}) serves 127.0.0.1:{port}; "
                f"{args.workers} workers for {args.seconds:g} s")
            server_cpu, client_cpu = cpu_seconds(server.pid), time.process_time()
            busy, total = machine_busy_seconds()
            logs, elapsed, extra = drive(port, tokens, args.seconds)
            server_cpu, client_cpu = cpu_seconds(server.pid) - server_cpu, time.process_time() - client_cpu
            busy_after, total_after = machine_busy_seconds()
        finally:
            stop_server(server)
        log(f"load done in {elapsed:.1f} s; server stopped; checking the database")

        acknowledged = [page for record in logs for page in record.acknowledged]
        invariants = check_invariants(project, acknowledged)
        connections.close_all()

        statuses: dict[int, int] = {}
        for record in logs:
            for code, count in record.statuses.items():
                statuses[code] = statuses.get(code, 0) + count
        errors = [record.first_error for record in logs if record.first_error]
        if errors:
            log(f"first client error: {errors[0]}")
        if any(code >= 500 for code in statuses):
            with open(server_log, errors="replace") as lines:
                log("server log tail:\n" + "".join(lines.readlines()[-30:]))

        claim_ms = [ms for record in logs for ms in record.claim_ms]
        submit_ms = [ms for record in logs for ms in record.submit_ms]
        annotations = sum(record.annotations for record in logs)
        figures = {
            "database": "postgresql",
            "annotations_per_s": round(annotations / elapsed, 1),
            "claim_p50_ms": round(percentile(claim_ms, 0.50), 1),
            "claim_p99_ms": round(percentile(claim_ms, 0.99), 1),
            "submit_p50_ms": round(percentile(submit_ms, 0.50), 1),
            "submit_p99_ms": round(percentile(submit_ms, 0.99), 1),
            "over_assigned": invariants["over_assigned"],
            "duplicate_worker_item": invariants["duplicate_worker_item"],
            "lost_submits": invariants["lost_submits"],
            "errors_5xx": sum(count for code, count in statuses.items() if code >= 500),
            "counter_mismatch": invariants["counter_mismatch"],
            "errors_4xx": sum(count for code, count in statuses.items() if 400 <= code < 500),
            "transport_errors": sum(record.transport_errors for record in logs),
            "workers": args.workers,
            "server_processes": 1,
            "seconds": round(elapsed, 1),
            "annotations": annotations,
            "claims": len(claim_ms),
            "submits": len(submit_ms),
            "server_cpu_s": round(server_cpu, 1),
            "client_cpu_s": round(client_cpu, 1),
            "machine_busy_fraction": round((busy_after - busy) / max(total_after - total, 1e-9), 2),
            "cpu_count": os.cpu_count(),
            "load_average_before": load_before,
            **extra,
        }
    emit(figures, args.json)


if __name__ == "__main__":
    main()
