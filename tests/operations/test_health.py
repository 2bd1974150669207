"""/healthz answers while the process lives, whatever else is down; /readyz names each component's state."""

import threading
from unittest import mock

import pytest
from django.db import OperationalError, connection
from django.test import Client
from django.utils import timezone

from jobs.models import WorkerHeartbeat
from operations import readiness
from tests.conftest import redis_url, require_service

pytestmark = pytest.mark.django_db


def beat(name: str, queues: list[str]) -> None:
    now = timezone.now()
    WorkerHeartbeat.objects.create(
        name=name, host="h", pid=1, queues=queues, backend="database", started_at=now, seen_at=now
    )


def test_healthz_asks_no_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        answer = client.get("/healthz")
    assert answer.status_code == 200 and answer.json() == {"status": "ok"}
    with mock.patch.object(connection, "ensure_connection", side_effect=OperationalError("the database is down")):
        assert client.get("/healthz").status_code == 200


def test_healthz_needs_no_csrf_token_nor_tls(settings):
    settings.SECURE_SSL_REDIRECT = True
    client = Client(enforce_csrf_checks=True)
    assert client.get("/healthz").status_code == 200  # a plain-HTTP probe: not redirected
    assert client.get("/readyz").status_code in (200, 503)
    assert client.get("/accounts/login/").status_code == 301  # the rest of the site is
    assert client.post("/healthz").status_code == 405  # refused for its method, not for a missing token


def test_readyz_is_ready_when_every_component_is(client):
    beat("w1", ["default"])
    beat("w2", ["*"])
    answer = client.get("/readyz")
    assert answer.status_code == 200
    state = answer.json()
    assert state["ready"] is True
    assert set(state["components"]) == {"database", "redis", "storage", "workers"}
    for component in state["components"].values():
        assert component["ok"] is True and isinstance(component["detail"], str)
        assert isinstance(component["seconds"], float)
    assert state["components"]["redis"]["detail"] == "not configured"
    assert state["components"]["workers"]["queues"] == {"default": 2, "gpu": 1}


def test_readyz_without_a_default_worker_is_not_ready(client):
    beat("gpu-host", ["gpu"])
    answer = client.get("/readyz")
    assert answer.status_code == 503 and answer.json()["ready"] is False
    workers = answer.json()["components"]["workers"]
    assert workers["ok"] is False and workers["queues"] == {"default": 0, "gpu": 1}
    assert "default" in workers["detail"]


def test_readyz_names_a_database_that_does_not_answer(client):
    refused = OperationalError('connection to server at "db", port 5432 failed: Connection refused')
    with mock.patch.object(connection, "cursor", side_effect=refused):
        answer = client.get("/readyz")
    assert answer.status_code == 503
    database = answer.json()["components"]["database"]
    assert database["ok"] is False and "Connection refused" in database["detail"]


def test_readyz_names_an_unreachable_redis_without_its_password(client, settings):
    beat("w1", ["default"])
    settings.REDIS_URL = "redis://:hunter2-secret@127.0.0.1:1/0"
    answer = client.get("/readyz")
    assert answer.status_code == 503
    redis = answer.json()["components"]["redis"]
    assert redis["ok"] is False and "127.0.0.1:1" in redis["detail"]
    assert b"hunter2" not in answer.content


def test_messages_quoting_a_url_lose_its_password():
    assert (
        readiness._masked("cannot reach postgres://nli:pw@db:5432/nli") == "cannot reach postgres://nli:***@db:5432/nli"
    )


@pytest.mark.redis
def test_readyz_pings_redis(client, settings):
    require_service("Redis", "127.0.0.1", 6379)
    settings.REDIS_URL = redis_url(0)
    redis = client.get("/readyz").json()["components"]["redis"]
    assert redis["ok"] is True


def test_readyz_names_a_storage_problem(client):
    beat("w1", ["default"])
    with mock.patch("jobs.files.check_storage", return_value="bucket 'gone' at http://s3: NoSuchBucket"):
        answer = client.get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["components"]["storage"] == {
        "ok": False,
        "detail": "bucket 'gone' at http://s3: NoSuchBucket",
        "seconds": answer.json()["components"]["storage"]["seconds"],
    }


def test_a_hung_storage_times_out_and_probes_stay_one(client, settings):
    settings.READYZ_STORAGE_TIMEOUT = 0.2
    released = threading.Event()
    calls = []

    def hung():
        calls.append(1)
        released.wait(10)

    try:
        with mock.patch("jobs.files.check_storage", side_effect=hung):
            for _ in range(3):
                storage = client.get("/readyz").json()["components"]["storage"]
                assert storage == {"ok": False, "detail": "timed out after 0.2 s", "seconds": storage["seconds"]}
                assert storage["seconds"] < 1
            assert calls == [1]  # later checks waited on the probe still out
    finally:
        released.set()
        readiness._storage_probe.result(timeout=5)  # gone before the next test asks
