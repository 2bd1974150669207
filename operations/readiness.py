"""Whether this host can serve: the database, Redis, the kept files' storage and the task workers, each
checked with a bound on how long it may take, so that a hung dependency answers "not ready" instead of
hanging the load balancer's probe."""

import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

from django.conf import settings
from django.db import connection, transaction

DATABASE_TIMEOUT_MS = 2000
REDIS_TIMEOUT_SECONDS = 2
# user:password@ in any URL an error message may quote.
_CREDENTIALS = re.compile(r"(\w+://[^:/@\s]*):[^@\s]*@")


def queue_names() -> list[str]:
    return list(settings.TASKS["default"]["QUEUES"])


def workers_per_queue() -> dict[str, int]:
    """Live task workers taking each queue ("*" takes them all)."""
    from jobs.workers import live_workers

    live = [worker.queues for worker in live_workers()]
    return {queue: sum(1 for queues in live if queue in queues or "*" in queues) for queue in queue_names()}


def check_database() -> dict:
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # For this transaction only: a database that accepts the connection but never answers.
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [str(DATABASE_TIMEOUT_MS)])
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"ok": True, "detail": f"{connection.vendor} answers"}


def check_redis() -> dict:
    if not settings.REDIS_URL:
        return {"ok": True, "detail": "not configured"}
    import redis

    client = redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=REDIS_TIMEOUT_SECONDS, socket_connect_timeout=REDIS_TIMEOUT_SECONDS
    )
    try:
        client.ping()
    finally:
        client.close()
    return {"ok": True, "detail": "answers PING"}


_storage_lock = threading.Lock()
_storage_probe: Future | None = None


def _start_storage_probe() -> Future:
    from jobs.files import check_storage

    future: Future = Future()

    def run():
        try:
            future.set_result(check_storage())
        except BaseException as error:
            future.set_exception(error)

    # A daemon thread: a bucket that never answers must not keep the process from exiting.
    threading.Thread(target=run, name="readyz-storage", daemon=True).start()
    return future


def check_storage() -> dict:
    """jobs.files.check_storage on a thread of its own, waited for READYZ_STORAGE_TIMEOUT seconds. While a
    probe is still out (a hung bucket), later checks wait on that same one: one stuck thread at most."""
    global _storage_probe
    timeout = settings.READYZ_STORAGE_TIMEOUT
    with _storage_lock:
        if _storage_probe is None or _storage_probe.done():
            _storage_probe = _start_storage_probe()
        probe = _storage_probe
    try:
        problem = probe.result(timeout=timeout)
    except FutureTimeout:
        return {"ok": False, "detail": f"timed out after {timeout:g} s"}
    from jobs.files import describe_storage

    return {"ok": problem is None, "detail": problem or f"{describe_storage()} can be written and read back"}


def check_workers() -> dict:
    if settings.TASKS_BACKEND == "immediate":
        return {"ok": True, "detail": "jobs run inside the request (TASKS_BACKEND=immediate)", "queues": {}}
    queues = workers_per_queue()
    counts = ", ".join(f"{count} on {queue}" for queue, count in queues.items())
    if queues.get("default", 0) < 1:
        return {"ok": False, "detail": f"no live worker takes the default queue ({counts})", "queues": queues}
    return {"ok": True, "detail": f"live workers: {counts}", "queues": queues}


COMPONENTS: dict[str, Callable[[], dict]] = {
    "database": check_database,
    "redis": check_redis,
    "storage": check_storage,
    "workers": check_workers,
}


def _masked(text: str) -> str:
    return _CREDENTIALS.sub(r"\1:***@", text)


def readiness() -> dict:
    """{"ready": bool, "components": {name: {"ok", "detail", "seconds", ...}}}; a failure's detail is the
    error's message (passwords in URLs masked)."""
    components = {}
    for name, check in COMPONENTS.items():
        started = time.perf_counter()
        try:
            state = check()
        except Exception as error:
            state = {"ok": False, "detail": str(error).strip() or type(error).__name__}
        components[name] = {
            **state,
            "detail": _masked(state["detail"]),
            "seconds": round(time.perf_counter() - started, 4),
        }
    return {"ready": all(state["ok"] for state in components.values()), "components": components}
