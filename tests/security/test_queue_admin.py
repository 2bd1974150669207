"""The task queue's dashboard (django_rq, with TASKS_BACKEND=rq) is for superusers only: to the admin role and
every other signed-in user its pages do not exist (404), so no one else empties, requeues or deletes; a page
that names a queue, job or worker that does not exist answers 404, not a 500. The suite runs with the database
task backend: the first test runs the second in a process of its own with the Redis one."""

import os
import subprocess
import sys

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.test import Client

from tests.conftest import REPO, redis_url, require_service

DASHBOARD = "/admin/django_rq/dashboard/"
PAGES = ["", "queues/0/", "queues/0/failed/", "queues/0/empty/", "queues/0/requeue-all/", "workers/0/", "schedulers/0/"]
MISSING = [
    "queues/99/",
    "queues/99/empty/",
    "workers/99/",
    "schedulers/99/",
    "queues/0/no-such-job/",
    "queues/0/no-such-job/delete/",
    "queues/0/no-such-job/requeue/",
    "queues/0/no-such-job/enqueue/",
    "workers/0/not-a-key/",
    "workers/0/rq:worker:gone/",
]


@pytest.mark.skipif(apps.is_installed("django_rq"), reason="this run has the Redis task backend")
def test_the_queue_dashboard_with_the_redis_task_backend():
    require_service("Redis", "127.0.0.1", 6379)
    environment = {
        **os.environ,
        "TASKS_BACKEND": "rq",
        "REDIS_URL": redis_url(6),
        "DATABASE_URL": "",  # its own SQLite test database, whichever pass starts it (the same settings)
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider", "-k", "only_superusers"],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


@pytest.mark.skipif(not apps.is_installed("django_rq"), reason="run by the test above, with the Redis backend")
@pytest.mark.django_db
def test_only_superusers_reach_the_queue_dashboard(make_user):
    import django_rq

    queue = django_rq.get_queue("default", commit_mode="auto")  # the test never commits its transaction
    queue.empty()
    queue.enqueue("os.getcwd")
    signed_in = {}
    for name, user in (
        ("superuser", get_user_model().objects.create_superuser("root", password="a-root-password")),
        *((role, make_user(f"a-{role}", role)) for role in ("admin", "author", "worker")),
    ):
        signed_in[name] = Client()
        signed_in[name].force_login(user)
    job = queue.job_ids[0]
    for page in [*PAGES, f"queues/0/{job}/"]:
        assert signed_in["superuser"].get(DASHBOARD + page).status_code == 200, page
        for role in ("admin", "author", "worker"):
            assert signed_in[role].get(DASHBOARD + page).status_code == 404, (role, page)
        assert Client().get(DASHBOARD + page)["Location"].startswith("/admin/login/"), page
    for page in MISSING:
        assert signed_in["superuser"].get(DASHBOARD + page).status_code == 404, page
    assert 'href="/admin/django_rq/' not in signed_in["admin"].get("/admin/").text
    # Only a superuser empties a queue.
    assert signed_in["admin"].post(DASHBOARD + "queues/0/empty/").status_code == 404 and queue.count == 1
    assert signed_in["superuser"].post(DASHBOARD + "queues/0/empty/").status_code == 302 and queue.count == 0
