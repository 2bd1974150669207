"""Benchmark: many workers claiming and submitting pages over HTTP at once, on PostgreSQL, against the
app served the production way (bin/serve: --processes uvicorn processes on one port, pooled connections,
the task worker and the expiry loop alongside, DEBUG off).

Creates a scratch database nli_bench_load_<pid>, migrates it, bulk-loads --items items into a published
unli_slider project (--items-per-page, --redundancy; at most redundancy + 1 annotations), makes one worker
user with an API token per simulated worker. Each simulated worker is a thread with its own keep-alive
connection that claims a page (POST /api/projects/<slug>/claim/) and submits random slider positions for
it (POST /api/assignments/<id>/submit/) until --seconds have passed (the page in hand is still submitted)
or the project has no work left for it.

Closed loop (default): each worker sends its next request when the previous one is answered.
Open loop (--rate R): requests arrive at R per second in all (claims and submits), whatever the answers;
each worker's claims are due on a fixed schedule, and a claim's latency counts from when it was due, so
a server that falls behind shows it (no coordinated omission). A submit is due half a period after its
claim (or when the claim is answered, if later).

The ceiling: before the work, the same server, workers, connections and token authentication call
GET /api/me/ (the cheapest authenticated JSON endpoint) in a closed loop for --ceiling-seconds:
  ceiling_rps     those calls answered per second
  cycle_rps       claim + submit requests answered per second during the work
  ceiling_ratio   cycle_rps / ceiling_rps
  cpu_ceiling_ratio  the whole machine's CPU per ceiling call / its CPU per claim or submit answered:
                  what ceiling_ratio would be with the machine as busy in both phases. Steadier than the
                  rates where the machine's speed drifts between the two phases (a shared host, a cold
                  server's first seconds): each side is measured over its own phase.
sql_per_claim and sql_per_submit: statements (transaction control left out) of one claim and one submit
of a one-worker page, session-authenticated, run in this process through Django's test client.

machine_cpu_ms_per_annotation and server_cpu_ms_per_annotation: CPU time (the whole machine: server,
PostgreSQL, Redis, this client; the web processes alone) per stored annotation during the work, a figure
that moves less than the rates when the machine's speed drifts.

Afterwards the database is checked against the engine's invariants, counting from the stored rows:
  over_assigned          items whose annotations + active claims exceed their target, or whose
                         annotations exceed the project's max_annotations
  duplicate_worker_item  (item, worker) pairs annotated more than once
  lost_submits           submits answered 200 whose annotations are not all stored under that page
  errors_5xx             server errors seen by the clients
and (not required, reported too) counter_mismatch: items whose annotation_count / active_claims
columns disagree with the rows. The server is stopped and the database dropped at the end, on error too.

Usage: python benchmarks/load.py [--items 10000] [--items-per-page 1] [--redundancy 1] [--processes 2]
                                 [--workers 64] [--seconds 20] [--rate R] [--json]
Latencies are client-side, in milliseconds.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import threading
import time
from dataclasses import dataclass, field

from _common import (
    AppServer,
    argument_parser,
    bulk_items,
    django_on_scratch_database,
    emit,
    load_average,
    log,
    make_author,
    make_workers,
    percentile,
    session_processes,
)

SLUG = "load-usnli"
REQUEST_TIMEOUT_S = 60
MAX_FAILURES_PER_WORKER = 20  # a worker whose requests keep failing stops instead of spinning


@dataclass
class WorkerLog:
    claim_ms: list[float] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)
    # (assignment id, item ids) of every submit answered 200, and when (time.monotonic()) each was answered
    acknowledged: list[tuple[int, list[int]]] = field(default_factory=list)
    acknowledged_at: list[float] = field(default_factory=list)
    server_errors_at: list[float] = field(default_factory=list)  # when each 5xx answer came
    annotations: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    transport_errors: int = 0
    first_error: str = ""


def cpu_seconds(session: int) -> float:
    """User + system CPU time the processes of a session have used so far (Linux /proc); the time of
    processes that already ended is not counted."""
    ticks = sum(int(fields[11]) + int(fields[12]) for fields in session_processes(session).values())
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, all cores together."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    idle = values[3] + values[4]
    ticks = os.sysconf("SC_CLK_TCK")
    return (sum(values) - idle) / ticks, sum(values) / ticks


class Client:
    """One simulated worker's keep-alive connection; records latencies, statuses and transport errors.

    With retry_for > 0 it behaves like a browser page that tries again: a request that gets no answer or
    a 5xx is sent again after retry_pause seconds, for up to retry_for seconds (claims and submits are
    safe to repeat); each attempt is recorded."""

    def __init__(self, port: int, token: str, record: WorkerLog, retry_for: float = 0, retry_pause: float = 0.2):
        self.port, self.record = port, record
        self.retry_for, self.retry_pause = retry_for, retry_pause
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)

    def call(
        self, method: str, path: str, body: bytes | None, timings: list[float], since: float | None = None
    ) -> tuple[int, bytes]:
        """since: when the request was due (open loop); the latency counts from then."""
        give_up_at = time.monotonic() + self.retry_for
        while True:
            status, payload = self._attempt(method, path, body, timings, since)
            if 0 < status < 500 or time.monotonic() + self.retry_pause > give_up_at:
                return status, payload
            time.sleep(self.retry_pause)

    def _attempt(
        self, method: str, path: str, body: bytes | None, timings: list[float], since: float | None
    ) -> tuple[int, bytes]:
        start = time.perf_counter() if since is None else since
        for attempt in range(2):
            try:
                self.connection.request(method, path, body=body, headers=self.headers)
                response = self.connection.getresponse()
                payload = response.read()
                break
            except (OSError, http.client.HTTPException) as exc:
                self.connection.close()
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S)
                # A keep-alive connection the server closed while idle fails at once: like a browser, send
                # the request again on a new connection (claims and submits are safe to repeat).
                stale = isinstance(exc, (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected))
                if attempt == 0 and stale:
                    continue
                self.record.transport_errors += 1
                self.record.first_error = self.record.first_error or repr(exc)
                return 0, b""
        timings.append((time.perf_counter() - start) * 1000)
        self.record.statuses[response.status] = self.record.statuses.get(response.status, 0) + 1
        if response.status >= 500:
            self.record.server_errors_at.append(time.monotonic())
        return response.status, payload

    def close(self) -> None:
        self.connection.close()


def wait_until(moment: float) -> float:
    """Sleep until the perf_counter reads `moment` (if it is still ahead); returns `moment`."""
    delay = moment - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
    return moment


def run_worker(
    port: int,
    token: str,
    slug: str,
    seed: int,
    deadline: float,
    record: WorkerLog,
    period: float | None = None,
    first_due: float | None = None,
    retry_for: float = 0,
) -> None:
    """Claim and submit until the deadline; with a period (open loop), one claim is due every period;
    retry_for: see Client."""
    rng = random.Random(seed)
    client = Client(port, token, record, retry_for=retry_for)
    failures = 0
    due = first_due
    while time.monotonic() < deadline and failures < MAX_FAILURES_PER_WORKER:
        if period is not None:
            wait_until(due)
        status, payload = client.call("POST", f"/api/projects/{slug}/claim/", b"", record.claim_ms, since=due)
        if status == 204:
            break  # no work left for this worker
        if status != 201:
            failures += 1
            record.first_error = record.first_error or f"claim {status}: {payload[:200]!r}"
            due = due + period if period is not None else None
            continue
        page = json.loads(payload)
        item_ids = [item["id"] for item in page["items"]]
        answers = {str(item_id): {"value": rng.randrange(0, 10001), "seconds": 3.0} for item_id in item_ids}
        body = json.dumps({"answers": answers}).encode()
        submit_due = None
        if period is not None:
            submit_due = max(due + period / 2, time.perf_counter())
            wait_until(submit_due)
            due += period
        status, payload = client.call(
            "POST", f"/api/assignments/{page['id']}/submit/", body, record.submit_ms, since=submit_due
        )
        if status == 200:
            record.acknowledged.append((page["id"], item_ids))
            record.acknowledged_at.append(time.monotonic())
            record.annotations += json.loads(payload)["annotations"]
        else:
            failures += 1
            record.first_error = record.first_error or f"submit {status}: {payload[:200]!r}"
    client.close()


def run_ceiling(port: int, token: str, deadline: float, record: WorkerLog) -> None:
    """The cheapest authenticated call, again and again, on the same kind of connection."""
    client = Client(port, token, record)
    timings: list[float] = []
    while time.monotonic() < deadline:
        client.call("GET", "/api/me/", None, timings)
    record.claim_ms = timings
    client.close()


def sql_per_request(project) -> tuple[int, int]:
    """Statements of one claim and one submit (session authentication), in this process."""
    from django.db import connection
    from django.test import Client as TestClient
    from django.test.utils import CaptureQueriesContext

    def statements(captured) -> int:
        control = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")
        return sum(1 for query in captured.captured_queries if not query["sql"].startswith(control))

    client = TestClient(HTTP_HOST="127.0.0.1")
    client.force_login(make_workers(1, prefix="sql-probe")[0])
    counts = (0, 0)
    for _ in range(2):  # the second cycle is counted (the first warms the process's caches)
        with CaptureQueriesContext(connection) as claim_sql:
            page = client.post(f"/api/projects/{project.slug}/claim/").json()
        answers = {str(item["id"]): {"value": 5000} for item in page["items"]}
        with CaptureQueriesContext(connection) as submit_sql:
            response = client.post(
                f"/api/assignments/{page['id']}/submit/", {"answers": answers}, content_type="application/json"
            )
        if response.status_code != 200:
            raise RuntimeError(f"the SQL probe's submit failed: {response.status_code} {response.content[:200]!r}")
        counts = (statements(claim_sql), statements(submit_sql))
    return counts


def prepare(workers: int, items: int, items_per_page: int, redundancy: int):
    """The project, its items and the workers' API tokens."""
    from rest_framework.authtoken.models import Token

    from annotation.services.projects import create_project

    project = create_project(
        SLUG,
        "unli_slider",
        make_author(),
        redundancy=redundancy,
        max_annotations=redundancy + 1,
        items_per_page=items_per_page,
        status="published",
    )
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
                 held AS (SELECT claim.item_id, COUNT(*) AS n FROM annotation_claim claim
                          JOIN annotation_assignment page ON page.id = claim.assignment_id
                          WHERE page.status = 'open' GROUP BY claim.item_id)
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


def drive(
    target, port: int, tokens: list[str], seconds: float, rate: float | None = None
) -> tuple[list[WorkerLog], float, dict]:
    logs = [WorkerLog() for _ in tokens]
    start = time.monotonic()
    deadline = start + seconds
    extra = {}
    if rate is not None:
        # Each worker's claims are due every `period`; the workers' schedules are spread over one period.
        period = 2 * len(tokens) / rate
        now = time.perf_counter()
        extra = [{"period": period, "first_due": now + period * index / len(tokens)} for index in range(len(tokens))]
    threads = [
        threading.Thread(
            target=target,
            args=(port, token, SLUG, index, deadline, logs[index]),
            kwargs=extra[index] if extra else {},
            daemon=True,
        )
        if target is run_worker
        else threading.Thread(target=target, args=(port, token, deadline, logs[index]), daemon=True)
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


def work_arguments(doc: str, seconds_help: str, default_workers: int, default_items: int) -> argparse.ArgumentParser:
    """The command line of a benchmark that runs this load: workers, project shape, server processes."""
    parser = argument_parser(doc)
    parser.add_argument(
        "--workers", type=int, default=default_workers, help="simulated workers (threads), one user each"
    )
    parser.add_argument("--seconds", type=float, default=30, help=seconds_help)
    parser.add_argument("--items", type=int, default=default_items, help="items in the project")
    parser.add_argument("--items-per-page", type=int, default=1, help="items on one page (k)")
    parser.add_argument("--redundancy", type=int, default=1, help="annotations wanted per item")
    parser.add_argument("--processes", type=int, default=2, help="web processes of the server (WEB_CONCURRENCY)")
    return parser


def check_work_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if not 1 <= args.workers <= 512 or not 0 < args.seconds <= 600:
        parser.error("--workers must be 1..512 and --seconds 0..600")
    if args.items < 1 or not 1 <= args.items_per_page <= 50 or not 1 <= args.redundancy <= 20:
        parser.error("--items must be >= 1, --items-per-page 1..50 and --redundancy 1..20")
    if not 1 <= args.processes <= 16:
        parser.error("--processes must be 1..16")


def main():
    parser = work_arguments(__doc__, "how long workers keep claiming", default_workers=64, default_items=10_000)
    parser.add_argument(
        "--rate",
        type=float,
        default=None,
        help="open loop: claims + submits sent per second in all (default: closed loop)",
    )
    parser.add_argument("--ceiling-seconds", type=float, default=8, help="how long to measure the ceiling")
    args = parser.parse_args()
    check_work_arguments(parser, args)
    if args.rate is not None and args.rate <= 0:
        parser.error("--rate must be above 0")

    load_before = load_average()
    with django_on_scratch_database("load") as (url, var_dir):
        from django.db import connections

        project, tokens = prepare(args.workers, args.items, args.items_per_page, args.redundancy)
        sql_per_claim, sql_per_submit = sql_per_request(project)
        connections.close_all()

        server = AppServer.production(url, var_dir, args.processes).start()
        port = server.port
        try:
            log(
                f"bin/serve ({args.processes} web processes) serves 127.0.0.1:{port}; ceiling for "
                f"{args.ceiling_seconds:g} s, then {args.workers} workers for {args.seconds:g} s"
                + (f" at {args.rate:g} requests/s" if args.rate else " (closed loop)")
            )
            server_cpu_before, (busy_before, total_before) = cpu_seconds(server.process.pid), machine_busy_seconds()
            ceiling_logs, ceiling_elapsed, _ = drive(run_ceiling, port, tokens, args.ceiling_seconds)
            server_cpu, client_cpu = cpu_seconds(server.process.pid), time.process_time()
            busy, total = machine_busy_seconds()
            ceiling_server_cpu, ceiling_busy, ceiling_total = (
                server_cpu - server_cpu_before,
                busy - busy_before,
                total - total_before,
            )
            logs, elapsed, extra = drive(run_worker, port, tokens, args.seconds, args.rate)
            server_cpu, client_cpu = cpu_seconds(server.process.pid) - server_cpu, time.process_time() - client_cpu
            busy_after, total_after = machine_busy_seconds()
        finally:
            server.stop()
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
            log("server log tail:\n" + server.log_tail())

        claim_ms = [ms for record in logs for ms in record.claim_ms]
        submit_ms = [ms for record in logs for ms in record.submit_ms]
        annotations = sum(record.annotations for record in logs)
        ceiling_calls = sum(1 for record in ceiling_logs for _ in record.claim_ms)
        ceiling_ok = sum(record.statuses.get(200, 0) for record in ceiling_logs)
        ceiling_rps = ceiling_ok / ceiling_elapsed
        cycle_answered = sum(record.statuses.get(201, 0) + record.statuses.get(200, 0) for record in logs)
        cycle_rps = cycle_answered / elapsed
        ceiling_cpu_ms = ceiling_busy * 1000 / ceiling_ok if ceiling_ok else None
        cycle_cpu_ms = (busy_after - busy) * 1000 / cycle_answered if cycle_answered else None
        figures = {
            "database": "postgresql",
            "mode": f"open loop at {args.rate:g} requests/s" if args.rate else "closed loop",
            "annotations_per_s": round(annotations / elapsed, 1),
            "ceiling_rps": round(ceiling_rps, 1),
            "cycle_rps": round(cycle_rps, 1),
            "ceiling_ratio": round(cycle_rps / ceiling_rps, 2) if ceiling_rps else None,
            "cpu_ceiling_ratio": round(ceiling_cpu_ms / cycle_cpu_ms, 2) if ceiling_cpu_ms and cycle_cpu_ms else None,
            "sql_per_claim": sql_per_claim,
            "sql_per_submit": sql_per_submit,
            "ceiling_p50_ms": round(percentile([ms for r in ceiling_logs for ms in r.claim_ms], 0.50), 1),
            "ceiling_errors": ceiling_calls - ceiling_ok,
            "ceiling_machine_busy_fraction": round(ceiling_busy / max(ceiling_total, 1e-9), 2),
            "ceiling_server_cpu_ms_per_call": round(ceiling_server_cpu * 1000 / ceiling_ok, 2) if ceiling_ok else None,
            "ceiling_machine_cpu_ms_per_call": round(ceiling_cpu_ms, 2) if ceiling_cpu_ms else None,
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
            "status_counts": {str(code): count for code, count in sorted(statuses.items())},
            "transport_errors": sum(record.transport_errors for record in logs),
            "workers": args.workers,
            "server_processes": args.processes,
            "items": args.items,
            "items_per_page": args.items_per_page,
            "redundancy": args.redundancy,
            "seconds": round(elapsed, 1),
            "annotations": annotations,
            "claims": len(claim_ms),
            "submits": len(submit_ms),
            "server_cpu_s": round(server_cpu, 1),
            "client_cpu_s": round(client_cpu, 1),
            "machine_busy_fraction": round((busy_after - busy) / max(total_after - total, 1e-9), 2),
            # Steadier than annotations_per_s where the machine's speed drifts: what one annotation costs.
            "machine_cpu_ms_per_annotation": round((busy_after - busy) * 1000 / annotations, 2)
            if annotations
            else None,
            "server_cpu_ms_per_annotation": round(server_cpu * 1000 / annotations, 2) if annotations else None,
            "cpu_count": os.cpu_count(),
            "load_average_before": load_before,
            **extra,
        }
    emit(figures, args.json)


if __name__ == "__main__":
    main()
