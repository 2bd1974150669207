"""`manage.py check` on Redis persistence and on the metrics addresses; JSON log lines, one per request."""

import io
import json
import logging
import os
import subprocess
import sys
from unittest import mock

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from operations.checks import redis_persistence
from tests.conftest import redis_url, require_service

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.redis
def test_a_redis_that_keeps_nothing_on_disk_is_warned_about(settings):
    require_service("Redis", "127.0.0.1", 6379)  # the test server runs with save "" and appendonly no
    settings.TASKS_BACKEND = "rq"
    settings.REDIS_URL = redis_url(0)
    out = io.StringIO()
    call_command("check", stdout=out, stderr=out)
    assert "operations.W001" in out.getvalue() and "--appendonly yes" in out.getvalue()


def test_a_redis_with_aof_passes(settings):
    settings.TASKS_BACKEND = "rq"
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    persistent = {"appendonly": {"appendonly": "yes"}, "save": {"save": ""}}
    with mock.patch.object(redis.Redis, "config_get", side_effect=lambda name: persistent[name]):
        assert redis_persistence() == []


def test_a_refused_config_or_an_unreachable_redis_is_no_error(settings):
    settings.TASKS_BACKEND = "rq"
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    with mock.patch.object(redis.Redis, "config_get", side_effect=redis.ResponseError("unknown command 'CONFIG'")):
        [message] = redis_persistence()
    assert message.id == "operations.I001" and not message.is_serious()
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    assert redis_persistence() == []
    settings.TASKS_BACKEND = "database"
    assert redis_persistence() == []


def test_a_metrics_address_that_is_no_address_is_refused(settings):
    settings.METRICS_ALLOWED_ADDRESSES = ["10.0.0.0/8", "prometheus.local"]
    with pytest.raises(SystemCheckError, match=r"operations\.E001.*prometheus\.local"):
        call_command("check", stdout=io.StringIO(), stderr=io.StringIO())


@pytest.mark.django_db
def test_each_request_is_one_log_line_with_its_fields(client, author, caplog):
    client.force_login(author)
    with caplog.at_level(logging.INFO, logger="nli.requests"):
        client.get("/jobs/")
    [record] = [record for record in caplog.records if record.name == "nli.requests"]
    assert (record.method, record.route, record.path, record.status) == ("GET", "jobs/", "/jobs/", 200)
    assert record.user_id == author.pk and record.duration_ms > 0


def test_log_format_json_writes_one_object_a_line(tmp_path):
    """As a deployment runs: the settings read LOG_FORMAT from the environment."""
    code = (
        "import django, logging; django.setup(); "
        "logging.getLogger('nli.jobs').info('job 7 done', extra={'job_id': 7, 'kind': 'export', 'status': 'done', 'queue': 'default'}); "
        "logging.getLogger('nli.requests').info('GET / 200')"
    )
    env = {
        **os.environ,
        "LOG_FORMAT": "json",
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "NLI_STUDIO_VAR": str(tmp_path),
    }
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    assert [line["logger"] for line in lines] == ["nli.jobs", "nli.requests"], done.stderr
    job = lines[0]
    assert {"time", "level", "logger", "message"} <= set(job) and job["level"] == "INFO"
    assert (job["message"], job["job_id"], job["kind"], job["status"], job["queue"]) == (
        "job 7 done",
        7,
        "export",
        "done",
        "default",
    )


def test_text_logs_stay_quiet_about_requests(tmp_path):
    code = "import django, logging; django.setup(); print(logging.getLogger('nli.requests').isEnabledFor(logging.INFO))"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "NLI_STUDIO_VAR": str(tmp_path)}
    env.pop("LOG_FORMAT", None)
    env.pop("LOG_REQUESTS", None)
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
