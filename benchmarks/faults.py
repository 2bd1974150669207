"""Benchmark: faults survived. The production server (bin/serve, --processes uvicorn processes, the task
worker and the expiry loop) on a scratch PostgreSQL database, with a private Redis of its own, under the
closed-loop claim + submit load of benchmarks/load.py, while three faults are injected in turn:

  kill_web      SIGKILL of one uvicorn web process (uvicorn's supervisor is to start another)
  pg_terminate  pg_terminate_backend() of every connection to the scratch database
  redis_stop    the private redis-server stopped for 10 s, then started again (empty: no persistence)

Each fault has a phase of its own: --seconds of steady load as its baseline, the fault, then --seconds
of load after the fault is over. The simulated workers retry as a browser page would: a request that gets
no answer or a 5xx is sent again after 0.2 s (claims and submits are safe to repeat: a repeated identical
submit stores nothing more). Per phase:
  lost_submits           submits answered 200 in the phase whose annotations are not all stored
  over_assigned          items whose annotations + active claims exceed their target (at the phase's end)
  duplicate_worker_item  (item, worker) pairs annotated more than once (at the phase's end)
  errors_5xx             5xx answers the clients saw during the phase
  recovery_s             seconds from the fault until the submits acknowledged in a 1 s window are back
                         to 90 % of the baseline's rate (0: they never fell below it; null: not within
                         the phase)
and, besides, baseline_rps, lowest_rps and lowest_at_s (the worst 1 s window after the fault and when
it began), submits, work_left (items still open to a claim at the phase's end) and what the fault did (the
process killed, the connections ended, the web processes alive at the phase's end). A phase that ends
with no work left measured nothing after the work ran out: the script says so and exits with status 1
(raise --items).

Usage: python benchmarks/faults.py [--workers 32] [--processes 2] [--items 100000] [--seconds 30] [--json]
With --json the last line of stdout is {"faults": {"kill_web": {...}, "pg_terminate": {...}, "redis_stop": {...}}}.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections import Counter

import psycopg
from _common import AppServer, django_on_scratch_database, emit, free_port, load_average, log, port_accepts
from load import SLUG, WorkerLog, check_invariants, check_work_arguments, prepare, run_worker, work_arguments

WARMUP_S = 5  # the server's pools and caches fill before the first baseline
REDIS_DOWN_S = 10
RETRY_FOR_S = 60  # how long a page keeps trying one request
WINDOW_S = 1.0  # throughput is counted over windows this long ...
WINDOW_STEP_S = 0.25  # ... starting this often after the fault
RECOVERED_FRACTION = 0.9
SCHEDULE_SLACK_S = 5


class PrivateRedis:
    """A redis-server of the benchmark's own on a free port, without persistence, so that stopping it
    touches nothing else on the machine."""

    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if not port_accepts(self.port, 10):
            raise RuntimeError(f"redis-server did not listen on port {self.port}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


def kill_web(server: AppServer, database_url: str, redis: PrivateRedis) -> dict:
    victim = server.web_processes()[0]
    os.kill(victim, signal.SIGKILL)
    return {"killed_pid": victim}


def pg_terminate(server: AppServer, database_url: str, redis: PrivateRedis) -> dict:
    with psycopg.connect(database_url, autocommit=True) as admin:
        ended = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [database_url.rsplit("/", 1)[1]],
        ).fetchall()
    return {"connections_ended": sum(1 for (done,) in ended if done)}


def redis_stop(server: AppServer, database_url: str, redis: PrivateRedis) -> dict:
    redis.stop()
    time.sleep(REDIS_DOWN_S)
    redis.start()
    return {"redis_down_s": REDIS_DOWN_S}


FAULTS = (kill_web, pg_terminate, redis_stop)


def rate(moments: list[float], start: float, end: float) -> float:
    return sum(1 for moment in moments if start <= moment < end) / (end - start)


def recovery(moments: list[float], fault_at: float, end: float, baseline_rps: float) -> dict:
    """recovery_s: seconds from the fault to the first window back at RECOVERED_FRACTION of the baseline
    (None: none was); lowest_rps and lowest_at_s: the worst window after the fault and when it began."""
    starts = [fault_at + step * WINDOW_STEP_S for step in range(int((end - fault_at - WINDOW_S) / WINDOW_STEP_S) + 1)]
    rates = [rate(moments, start, start + WINDOW_S) for start in starts]
    recovered = next(
        (start - fault_at for start, value in zip(starts, rates) if value >= RECOVERED_FRACTION * baseline_rps), None
    )
    lowest_rps, lowest_start = min(zip(rates, starts))
    return {
        "recovery_s": None if recovered is None else round(recovered, 2),
        "lowest_rps": round(lowest_rps, 1),
        "lowest_at_s": round(lowest_start - fault_at, 2),
    }


def acknowledged_between(logs: list[WorkerLog], start: float, end: float) -> tuple[list, list[float]]:
    """The submits acknowledged in [start, end): (page, item ids) pairs and their moments."""
    pages, moments = [], []
    for record in logs:
        answered_at = list(record.acknowledged_at)  # the page is appended before its moment: read these first
        for page, moment in zip(record.acknowledged[: len(answered_at)], answered_at):
            if start <= moment < end:
                pages.append(page)
                moments.append(moment)
    return pages, moments


def phase_figures(logs: list[WorkerLog], project, start: float, fault_at: float, end: float) -> dict:
    """The figures of one phase, read while the load goes on (the invariants hold at every commit)."""
    from django.db import connections

    _, baseline_moments = acknowledged_between(logs, start, fault_at)
    pages, moments = acknowledged_between(logs, fault_at, end)
    baseline_rps = len(baseline_moments) / (fault_at - start)
    invariants = check_invariants(project, pages)
    figures = {
        "lost_submits": invariants["lost_submits"],
        "over_assigned": invariants["over_assigned"],
        "duplicate_worker_item": invariants["duplicate_worker_item"],
        "errors_5xx": sum(1 for record in logs for moment in list(record.server_errors_at) if start <= moment < end),
        **recovery(moments, fault_at, end, baseline_rps),
        "baseline_rps": round(baseline_rps, 1),
        "submits": len(baseline_moments) + len(pages),
        "counter_mismatch": invariants["counter_mismatch"],
        "work_left": project.items.filter(claimable=True).count(),
    }
    connections.close_all()  # the next fault may end this connection
    return figures


def error_summary(server: AppServer) -> str:
    """Each distinct line of the server's log that names an exception, with how often it came."""
    named = Counter(
        line.strip()
        for line in server.log_tail(lines=None).splitlines()
        if re.match(r"^[\w.]+(Error|Exception)\b", line.strip())
    )
    return "\n".join(f"{count:6d}  {line[:300]}" for line, count in named.most_common(20))


def run_phases(
    server: AppServer, database_url: str, redis: PrivateRedis, project, tokens: list[str], seconds: float
) -> tuple[dict, list[WorkerLog]]:
    """Start the workers, then each fault on its schedule; returns the figures per fault."""
    first = time.monotonic() + WARMUP_S
    # The workers stop once every phase is over; the faults' and checks' own moments make the phases a
    # little longer than their schedule.
    deadline = first + len(FAULTS) * 2 * seconds + REDIS_DOWN_S + SCHEDULE_SLACK_S
    logs = [WorkerLog() for _ in tokens]
    threads = [
        threading.Thread(
            target=run_worker,
            args=(server.port, token, SLUG, index, deadline, logs[index]),
            kwargs={"retry_for": RETRY_FOR_S},
            daemon=True,
        )
        for index, token in enumerate(tokens)
    ]
    for thread in threads:
        thread.start()
    results, start = {}, first
    for fault in FAULTS:
        fault_at = start + seconds
        time.sleep(max(0.0, fault_at - time.monotonic()))
        log(f"{fault.__name__}: baseline done, injecting")
        details = fault(server, database_url, redis)
        end = time.monotonic() + seconds  # the load after the fault is over (Redis back)
        time.sleep(max(0.0, end - time.monotonic()))
        figures = phase_figures(logs, project, start, fault_at, end)
        results[fault.__name__] = {**figures, **details, "web_processes_after": len(server.web_processes())}
        log(f"{fault.__name__}: {results[fault.__name__]}")
        start = end
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()) + 2 * RETRY_FOR_S + 5)
    return results, logs


def main():
    parser = work_arguments(
        __doc__, "seconds of load before each fault, and again after it", default_workers=32, default_items=100_000
    )
    args = parser.parse_args()
    check_work_arguments(parser, args)

    load_before = load_average()
    redis = PrivateRedis()
    with django_on_scratch_database("faults") as (url, var_dir):
        project, tokens = prepare(args.workers, args.items, args.items_per_page, args.redundancy)
        from django.db import connections

        connections.close_all()
        redis.start()
        server = AppServer.production(url, var_dir, args.processes, REDIS_URL=redis.url)
        try:
            server.start()
            log(
                f"bin/serve ({args.processes} web processes, Redis on port {redis.port}) serves "
                f"127.0.0.1:{server.port}; {args.workers} workers, {args.seconds:g} s before and after each fault"
            )
            results, logs = run_phases(server, url, redis, project, tokens, args.seconds)
        finally:
            server.stop()
            redis.stop()
        overall = check_invariants(project, [page for record in logs for page in record.acknowledged])
        connections.close_all()
        log(
            f"after the run, all submits: {overall}; transport errors "
            f"{sum(record.transport_errors for record in logs)}; load average before {load_before}"
        )
        errors = [record.first_error for record in logs if record.first_error]
        if errors:
            log(f"first client error: {errors[0]}")
        if any(figures["errors_5xx"] for figures in results.values()):
            log("the errors in the server's log, most frequent first:\n" + error_summary(server))
    emit({"faults": results}, args.json)
    ran_dry = [name for name, figures in results.items() if not figures["work_left"]]
    if ran_dry:
        log(
            f"the project ran out of work by the end of {', '.join(ran_dry)}: those figures are not "
            f"measurements of a fault; run again with more than --items {args.items}"
        )
        raise SystemExit(1)


if __name__ == "__main__":
    main()
