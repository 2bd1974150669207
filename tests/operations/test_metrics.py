"""/metrics: who may read it, what requests, claims and submits count, what is read at scrape time, and the
counts of several web processes added up."""

import os
import subprocess
import sys
from unittest import mock

import pytest
import redis
from django.test import Client
from django.utils import timezone
from prometheus_client import REGISTRY

from jobs.models import Job, WorkerHeartbeat
from operations import metrics
from tests.conftest import redis_url, require_service

pytestmark = pytest.mark.django_db
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def count(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_metrics_answer_loopback_and_the_allowed_addresses_only(settings):
    assert Client().get("/metrics").status_code == 200  # the test client is 127.0.0.1
    outside = Client(REMOTE_ADDR="203.0.113.5")
    assert outside.get("/metrics").status_code == 404
    settings.METRICS_ALLOWED_ADDRESSES = ["10.0.0.7", "203.0.113.0/24"]
    assert outside.get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="10.0.0.7").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="10.0.0.8").get("/metrics").status_code == 404


def test_a_proxy_on_this_host_does_not_make_its_clients_loopback(settings):
    settings.TRUSTED_PROXY_COUNT = 1
    relayed = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.4")
    assert relayed.get("/metrics").status_code == 404
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 200  # Prometheus on this host


def test_requests_are_counted_by_route_method_and_status(client):
    before = count("nli_http_requests_total", route="healthz", method="GET", status="200")
    unmatched = count("nli_http_requests_total", route="unmatched", method="GET", status="404")
    odd = count("nli_http_requests_total", route="healthz", method="other", status="405")
    client.get("/healthz")
    client.get("/healthz")
    client.get("/no/such/page/")
    client.generic("BREW", "/healthz")
    assert count("nli_http_requests_total", route="healthz", method="GET", status="200") == before + 2
    assert count("nli_http_requests_total", route="unmatched", method="GET", status="404") == unmatched + 1
    assert count("nli_http_requests_total", route="healthz", method="other", status="405") == odd + 1
    assert count("nli_http_request_duration_seconds_count", route="healthz", method="GET", status="200") >= 2
    body = client.get("/metrics").content.decode()
    assert 'nli_http_requests_total{method="GET",route="healthz",status="200"}' in body


def test_claims_and_submits_are_counted_on_the_pages_and_the_api(make_project, import_rows, worker):
    project = make_project("nli_label", redundancy=2, items_per_page=2)
    import_rows(project, [{"premise": f"P{n}", "hypothesis": f"H{n}"} for n in range(4)])
    claims_page, claims_api = count("nli_claims_total", status="200"), count("nli_claims_total", status="201")
    submits_api = count("nli_submits_total", status="200")
    refused_page = count("nli_submits_total", status="400")
    api = Client()
    api.force_login(worker)
    page = api.post(f"/api/v1/projects/{project.slug}/claim/", content_type="application/json").json()
    answers = {str(item["id"]): {"value": "e"} for item in page["items"]}
    submitted = api.post(
        f"/api/v1/assignments/{page['id']}/submit/", {"answers": answers}, content_type="application/json"
    )
    assert submitted.status_code == 200, submitted.content
    assert count("nli_claims_total", status="201") == claims_api + 1
    assert count("nli_submits_total", status="200") == submits_api + 1
    work = api.get(f"/work/{project.slug}/")
    assert work.status_code == 200
    assignment = work.context["assignment"]
    assert api.post(f"/work/{project.slug}/{assignment.pk}/submit/", {}).status_code == 400  # no answers
    assert count("nli_claims_total", status="200") == claims_page + 1
    assert count("nli_submits_total", status="400") == refused_page + 1


def test_jobs_queues_and_workers_are_read_at_scrape_time(author, django_assert_num_queries):
    Job.objects.create(kind="export", created_by=author)
    Job.objects.create(kind="export", created_by=author, queue="gpu")
    Job.objects.create(kind="import", created_by=author, status=Job.Status.DONE)
    now = timezone.now()
    WorkerHeartbeat.objects.create(
        name="w", host="h", pid=1, queues=["*"], backend="database", started_at=now, seen_at=now
    )
    with django_assert_num_queries(2):  # the jobs by kind, state and queue; the live workers
        body = metrics.scrape().decode()
    assert 'nli_jobs{kind="export",status="queued"} 2.0' in body
    assert 'nli_jobs{kind="import",status="done"} 1.0' in body
    assert 'nli_queue_depth{queue="default"} 1.0' in body and 'nli_queue_depth{queue="gpu"} 1.0' in body
    assert 'nli_workers_live{queue="default"} 1.0' in body and 'nli_workers_live{queue="gpu"} 1.0' in body
    assert "nli_rq_queue_length" not in body  # the database task backend has no RQ queue


@pytest.mark.redis
def test_rq_queue_lengths_come_from_redis_and_are_left_out_when_it_fails(settings):
    require_service("Redis", "127.0.0.1", 6379)
    settings.TASKS_BACKEND = "rq"
    settings.REDIS_URL = redis_url(5)
    settings.RQ_QUEUES = {name: {"URL": settings.REDIS_URL} for name in ("default", "gpu")}
    redis.Redis.from_url(settings.REDIS_URL).delete("rq:queue:default", "rq:queue:gpu")
    assert 'nli_rq_queue_length{queue="default"} 0.0' in metrics.scrape().decode()
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    body = metrics.scrape().decode()
    assert "nli_rq_queue_length" not in body and "nli_jobs" in body


def test_a_database_that_does_not_answer_leaves_the_request_counts(client):
    from django.db import OperationalError

    with mock.patch("jobs.models.Job.objects.values", side_effect=OperationalError("the database is down")):
        body = metrics.scrape().decode()
    assert "nli_http_requests_total" in body and "nli_jobs" not in body


def test_several_processes_are_added_up_and_scrape_time_figures_given_once(tmp_path, monkeypatch, author):
    """Two processes count requests into one multiprocess folder, as bin/serve's uvicorn processes do."""
    Job.objects.create(kind="export", created_by=author)
    code = (
        "from operations.metrics import observe_request; "
        "observe_request('api/v1/me/', 'api-me', 'GET', 200, 0.01); "
        "observe_request('work/<slug:slug>/', 'work', 'GET', 200, 0.02)"
    )
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, timeout=60)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    body = metrics.scrape().decode()
    assert 'nli_http_requests_total{method="GET",route="api/v1/me/",status="200"} 2.0' in body
    assert 'nli_claims_total{status="200"} 2.0' in body
    assert body.count("# TYPE nli_jobs gauge") == 1
    assert 'nli_jobs{kind="export",status="queued"} 1.0' in body
