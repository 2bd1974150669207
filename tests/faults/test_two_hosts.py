"""Beyond one machine: two groups of server processes (bin/serve twice, as two hosts would run it, each
with two web processes) share one PostgreSQL and one Redis; workers spread over both claim and submit
under load, and every invariant of the crowd engine holds."""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import Count, F, Q
from rest_framework.authtoken.models import Token

from annotation.models import Annotation, Item
from tests.conftest import require_service
from tests.faults.test_server_faults import assert_no_lost_or_partial_pages, call, free_port

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
REPO = Path(__file__).resolve().parents[2]
REDIS_DB = 3  # this suite's own Redis database


def start_host(tmp_path: Path, name: str) -> tuple[subprocess.Popen, int]:
    """bin/serve in production mode on a database the test has already set up (no migrate)."""
    db = connection.settings_dict
    port = free_port()
    env = dict(
        os.environ, PY=sys.executable, HOST="127.0.0.1", PORT=str(port),
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        REDIS_URL=f"redis://127.0.0.1:6379/{REDIS_DB}", WEB_CONCURRENCY="2", DEMO="0", MIGRATE="0",
        TASK_WORKERS="0", EXPIRY_SECONDS="5", DEBUG="false", SECRET_KEY="two-hosts-" + "k" * 40,
        ALLOWED_HOSTS="127.0.0.1", NLI_STUDIO_VAR=str(tmp_path / name),
    )
    (tmp_path / name).mkdir()
    log = open(tmp_path / f"{name}.log", "w")
    process = subprocess.Popen([str(REPO / "bin" / "serve")], cwd=REPO, env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    return process, port


def wait_until_serving(process: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.time() + 180
    while time.time() < deadline:
        assert process.poll() is None, log.read_text()[-2000:]
        try:
            if call(port, "GET", "/api/me/", "no-such-token")[0] == 401:
                time.sleep(1)  # the host's second process is a moment behind its first
                return
        except OSError:
            time.sleep(0.3)
    raise AssertionError("a host did not start: " + log.read_text()[-2000:])


def stop_host(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_two_hosts_share_one_database_and_keep_every_invariant(make_project, import_rows, make_user, tmp_path):
    require_service("Redis", "127.0.0.1", 6379)
    project = make_project("unli_slider", items_per_page=2, redundancy=2, max_annotations=2)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(120)])
    tokens = [Token.objects.create(user=make_user(f"host-worker{i}")).key for i in range(12)]
    hosts = [start_host(tmp_path, "host-a"), start_host(tmp_path, "host-b")]
    acknowledged, statuses, lock = [], [], threading.Lock()
    try:
        for (process, port), name in zip(hosts, ("host-a", "host-b")):
            wait_until_serving(process, port, tmp_path / f"{name}.log")

        def work(index: int, token: str) -> None:
            # Each worker alternates between the hosts, as a load balancer would send them.
            for round_ in range(40):
                port = hosts[(index + round_) % 2][1]
                status, page = call(port, "POST", f"/api/projects/{project.slug}/claim/", token)
                with lock:
                    statuses.append(status)
                if status != 201:
                    return  # 204: nothing left for this worker
                answers = {str(item["id"]): {"value": 1000 + index} for item in page["items"]}
                port = hosts[(index + round_ + 1) % 2][1]  # the submit goes to the other host
                status, _ = call(port, "POST", f"/api/assignments/{page['id']}/submit/", token, {"answers": answers})
                with lock:
                    statuses.append(status)
                    if status == 200:
                        acknowledged.append((page["id"], sorted(int(i) for i in answers)))

        threads = [threading.Thread(target=work, args=(i, token)) for i, token in enumerate(tokens)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=240)
        assert not any(thread.is_alive() for thread in threads)
    finally:
        for process, _ in hosts:
            stop_host(process)

    assert not [s for s in statuses if s >= 500], statuses
    assert len(acknowledged) >= 100  # 240 slots, 12 workers: most of the project was done through both hosts
    assert_no_lost_or_partial_pages(acknowledged)
    assert not (
        Annotation.objects.filter(item__project=project).values("item", "worker").annotate(n=Count("id"))
        .filter(n__gt=1).exists()
    ), "a worker answered an item twice"
    over = Item.objects.filter(project=project).annotate(
        stored=Count("annotations", distinct=True), held=Count("claims", filter=Q(claims__active=True), distinct=True),
    ).filter(Q(stored__gt=F("target") - F("held")) | Q(stored__gt=2) | Q(annotation_count__gt=F("target")))
    assert not over.exists(), "an item got more answers than its target"
