"""Prometheus metrics (prometheus-client). Requests, claims and submits are counted where they happen, in each
web process; jobs, queue depth and live workers are read from the database when /metrics is scraped.

With PROMETHEUS_MULTIPROC_DIR set (bin/serve sets it for its uvicorn processes), each process writes its counts
to files there and a scrape adds up every process's files; the scrape-time figures are added once, by the
process that answers the scrape, so they are never counted once per process."""

import logging
import os

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

logger = logging.getLogger(__name__)

# Methods a route is counted under; anything else a client sends is "other" (labels must stay few).
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# The routes that claim a page (the worker's page claims one when none is open; the API's claim) and those
# that submit one (the page's form, the API), by view name.
CLAIM_VIEWS = frozenset({"work", "project-claim"})
SUBMIT_VIEWS = frozenset({"submit", "assignment-submit"})
RQ_TIMEOUT_SECONDS = 1

REQUESTS = Counter(
    "nli_http_requests_total", "HTTP requests by route, method and status", ["route", "method", "status"]
)
DURATION = Histogram(
    "nli_http_request_duration_seconds",
    "Time from the request reaching Django to its response, by route, method and status",
    ["route", "method", "status"],
)
CLAIMS = Counter("nli_claims_total", "Requests that claim a page (or show the one held), by status", ["status"])
SUBMITS = Counter("nli_submits_total", "Requests that submit a page, by status", ["status"])


def observe_request(route: str, view_name: str, method: str, status: int, seconds: float) -> None:
    method = method if method in METHODS else "other"
    labels = (route, method, str(status))
    REQUESTS.labels(*labels).inc()
    DURATION.labels(*labels).observe(seconds)
    if view_name in CLAIM_VIEWS:
        CLAIMS.labels(str(status)).inc()
    elif view_name in SUBMIT_VIEWS:
        SUBMITS.labels(str(status)).inc()


class StateCollector:
    """Jobs by kind and state, queued jobs per queue, live workers per queue: read at scrape time."""

    def describe(self):
        return []  # registering runs no query

    def collect(self):
        from django.conf import settings
        from django.db import DatabaseError
        from django.db.models import Count

        from jobs.models import Job
        from operations.readiness import queue_names, workers_per_queue

        jobs = GaugeMetricFamily("nli_jobs", "Jobs by kind and state", labels=["kind", "status"])
        depth = GaugeMetricFamily("nli_queue_depth", "Queued jobs per queue (the jobs table)", labels=["queue"])
        workers = GaugeMetricFamily("nli_workers_live", "Live task workers taking each queue", labels=["queue"])
        try:
            rows = list(Job.objects.values("kind", "status", "queue").annotate(n=Count("id")).order_by())
            live = workers_per_queue()
        except DatabaseError as error:
            logger.warning("metrics: the database did not answer: %s", error)
            return
        by_kind: dict[tuple[str, str], int] = {}
        queued = dict.fromkeys(queue_names(), 0)
        for row in rows:
            by_kind[row["kind"], row["status"]] = by_kind.get((row["kind"], row["status"]), 0) + row["n"]
            if row["status"] == Job.Status.QUEUED:
                queued[row["queue"]] = queued.get(row["queue"], 0) + row["n"]
        for (kind, status), count in sorted(by_kind.items()):
            jobs.add_metric([kind, status], count)
        for queue, count in queued.items():
            depth.add_metric([queue], count)
        for queue, count in live.items():
            workers.add_metric([queue], count)
        yield from (jobs, depth, workers)
        if settings.TASKS_BACKEND == "rq":
            yield from _rq_lengths(queued)


def _rq_lengths(queues):
    """Messages waiting in RQ's Redis lists; nothing when Redis does not answer within a second."""
    import django_rq
    import redis
    from django.conf import settings

    lengths = GaugeMetricFamily("nli_rq_queue_length", "Messages waiting in RQ's queue in Redis", labels=["queue"])
    connection = redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=RQ_TIMEOUT_SECONDS, socket_connect_timeout=RQ_TIMEOUT_SECONDS
    )
    try:
        for queue in queues:
            lengths.add_metric([queue], django_rq.get_queue(queue, connection=connection).count)
    except redis.RedisError as error:
        logger.warning("metrics: Redis did not answer: %s", error)
        return
    finally:
        connection.close()
    yield lengths


def scrape() -> bytes:
    """The text exposition of every metric, across the web processes when they share a multiprocess folder."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)
    else:
        registry.register(REGISTRY)  # this one process's counts, and the library's process metrics
    registry.register(StateCollector())
    return generate_latest(registry)
