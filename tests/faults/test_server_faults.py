"""Faults under load, on PostgreSQL: the server killed mid-run, database connections cut mid-run, and one
web process of two killed (its replacement must get clients back).

bin/serve, as deployed, serves the test database; worker threads claim and submit over HTTP. Afterwards every
acknowledged submit must be stored, no page may be half written, and expired claims go back to the pool."""

import json
import os
import signal
import threading
import time
from contextlib import contextmanager
from datetime import timedelta
from http.client import HTTPConnection

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.models import Count
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotation.models import Annotation, Assignment, Claim, Item
from benchmarks._common import AppServer, free_port

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def served_database_url() -> str:
    """The database this test run set up, for a server process started beside it."""
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@contextmanager
def crowd_on_server(tmp_path, project, tokens):
    """bin/serve as deployed (one web process) and a crowd of claim/submit threads on it; yields the server
    and what the crowd saw (acknowledged submits, every status), then stops both."""
    server = AppServer.production(served_database_url(), tmp_path, processes=1).start()
    stop, acknowledged, statuses = threading.Event(), [], []
    threads = crowd(server.port, project, tokens, stop, acknowledged, statuses)
    try:
        yield server, acknowledged, statuses
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        server.stop()


def call(port, method, path, token, body=None):
    conn = HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = conn.getresponse()
        data = response.read()
        return response.status, (
            json.loads(data) if data and response.getheader("Content-Type", "").startswith("application/json") else None
        )
    finally:
        conn.close()


def crowd(port, project, tokens, stop, acknowledged, statuses):
    """Each thread claims and submits until told to stop; records every acknowledged submit."""

    def work(token):
        while not stop.is_set():
            try:
                status, page = call(port, "POST", f"/api/projects/{project.slug}/claim/", token)
                statuses.append(status)
                if status != 201:
                    time.sleep(0.05)
                    continue
                answers = {str(item["id"]): {"value": 7000} for item in page["items"]}
                status, _result = call(
                    port, "POST", f"/api/assignments/{page['id']}/submit/", token, {"answers": answers}
                )
                statuses.append(status)
                if status == 200:
                    acknowledged.append((page["id"], sorted(int(i) for i in answers)))
            except OSError:
                time.sleep(0.05)  # server down or connection cut: keep trying until told to stop

    threads = [threading.Thread(target=work, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    return threads


def wait_for(condition, seconds: float) -> None:
    deadline = time.time() + seconds
    while not condition() and time.time() < deadline:
        time.sleep(0.1)


def assert_no_lost_or_partial_pages(acknowledged):
    for assignment_id, item_ids in acknowledged:
        stored = sorted(Annotation.objects.filter(assignment_id=assignment_id).values_list("item_id", flat=True))
        assert stored == item_ids, f"acknowledged page {assignment_id} lost annotations"
    for assignment in Assignment.objects.annotate(
        n=Count("annotations", distinct=True), k=Count("claims", distinct=True)
    ):
        if assignment.status == Assignment.Status.SUBMITTED:
            assert assignment.n == assignment.k, f"page {assignment.pk} half written"
        else:
            assert assignment.n == 0, f"unsubmitted page {assignment.pk} has annotations"


@pytest.fixture
def loaded_project(make_project, import_rows, make_user):
    project = make_project("unli_slider", items_per_page=3)
    # Enough work that the crowd cannot finish the project while the faults are under way.
    import_rows(project, [{"id": str(i), "premise": f"P{i % 9}", "hypothesis": f"H{i}"} for i in range(2000)])
    tokens = [Token.objects.create(user=make_user(f"load{i}")).key for i in range(6)]
    return project, tokens


def established_connections(pid: int, port: int) -> int:
    """The process's TCP connections accepted on 127.0.0.1:port and still open (from /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    with open("/proc/net/tcp") as table:
        rows = [line.split() for line in table.readlines()[1:]]
    # local address is hex ip:port; state 01 is ESTABLISHED; field 9 is the socket's inode
    return sum(1 for row in rows if int(row[1].split(":")[1], 16) == port and row[3] == "01" and row[9] in inodes)


def test_a_replaced_web_process_gets_keep_alive_clients_back(tmp_path, make_user):
    """Clients that keep their connections open land on the surviving process when one dies; the server
    closes a connection now and then (REQUESTS_PER_CONNECTION), so some of them come to the new process."""
    token = Token.objects.create(user=make_user("keeps-alive")).key
    server = AppServer.production(served_database_url(), tmp_path, processes=2, REQUESTS_PER_CONNECTION="5").start()
    stop = threading.Event()

    def keep_asking():
        conn = HTTPConnection("127.0.0.1", server.port, timeout=10)
        while not stop.is_set():
            try:  # one connection for as long as the server keeps it (http.client reopens a closed one)
                conn.request("GET", "/api/me/", headers={"Authorization": f"Token {token}"})
                conn.getresponse().read()
            except OSError:
                conn.close()
                time.sleep(0.05)

    clients = [threading.Thread(target=keep_asking) for _ in range(6)]
    for client in clients:
        client.start()
    try:
        wait_for(lambda: len(server.web_processes()) == 2, 30)
        victim, survivor = server.web_processes()
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: len(set(server.web_processes()) - {victim, survivor}) == 1, 60)
        (replacement,) = set(server.web_processes()) - {victim, survivor}
        wait_for(lambda: established_connections(replacement, server.port) > 0, 60)
        assert established_connections(replacement, server.port) > 0, "every client stayed on the survivor"
    finally:
        stop.set()
        for client in clients:
            client.join(timeout=30)
        server.stop()


def test_killed_server_keeps_every_acknowledged_submit_and_claims_expire(loaded_project, tmp_path):
    project, tokens = loaded_project
    with crowd_on_server(tmp_path, project, tokens) as (server, acknowledged, statuses):
        wait_for(lambda: len(acknowledged) >= 10, 30)
        server.kill()  # mid-run: requests in flight are cut
        before_restart = len(acknowledged)
        time.sleep(0.5)
        server.start()
        wait_for(lambda: len(acknowledged) >= before_restart + 10, 30)
    assert before_restart >= 10 and len(acknowledged) >= before_restart + 10
    assert not [s for s in statuses if s >= 500]
    assert_no_lost_or_partial_pages(acknowledged)
    # Pages claimed before the kill and never submitted expire back to the pool.
    open_pages = Assignment.objects.filter(status=Assignment.Status.OPEN)
    open_pages.update(expires_at=timezone.now() - timedelta(minutes=1))
    call_command("expire_claims")
    assert not Claim.objects.filter(assignment__status="open").exists()
    for item in Item.objects.filter(project=project):
        assert item.active_claims == 0
        assert item.claimable == (item.status == "open" and item.annotation_count < item.target)


def test_lost_database_connections_give_clean_errors_and_no_half_written_page(loaded_project, tmp_path):
    project, tokens = loaded_project
    name = connection.settings_dict["NAME"]
    with crowd_on_server(tmp_path, project, tokens) as (_server, acknowledged, statuses):
        for _ in range(8):  # cut every other connection to the database, repeatedly, while pages are written
            time.sleep(0.4)
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                    [name],
                )
        time.sleep(1.0)
        recovered = len(acknowledged)
        wait_for(lambda: len(acknowledged) >= recovered + 5, 20)
    assert len(acknowledged) >= recovered + 5, "the server did not recover after the connections were cut"
    assert_no_lost_or_partial_pages(acknowledged)
    errors = [s for s in statuses if s >= 500]
    # A cut connection is retried once; if that fails too, the request gets a plain JSON error (503: the
    # database is unavailable, or 500; no debug page); nothing else breaks.
    assert all(s in (500, 503) for s in errors), errors


def test_claim_and_submit_go_on_while_the_throttle_cache_is_unreachable(loaded_project, settings, client):
    """The API throttles count in Redis; with Redis down (nothing listens on the port) a worker's claim and
    submit still succeed, unthrottled, instead of answering 500 (benchmarks/faults.py, redis_stop)."""
    project, tokens = loaded_project
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        }
    }
    auth = {"HTTP_AUTHORIZATION": f"Token {tokens[0]}"}
    claimed = client.post(f"/api/projects/{project.slug}/claim/", **auth)
    assert claimed.status_code == 201, claimed.content
    answers = {str(item["id"]): {"value": 5000} for item in claimed.json()["items"]}
    submitted = client.post(
        f"/api/assignments/{claimed.json()['id']}/submit/",
        {"answers": answers},
        content_type="application/json",
        **auth,
    )
    assert submitted.status_code == 200, submitted.content
    assert Annotation.objects.filter(assignment_id=claimed.json()["id"]).count() == len(answers)
