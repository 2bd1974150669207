"""Beyond one machine: two groups of server processes (bin/serve twice, as two hosts would run it, each
with two web processes) share one PostgreSQL and one Redis; workers spread over both claim and submit
under load, and every invariant of the crowd engine holds."""

import threading
from pathlib import Path

import pytest
from django.db.models import Count, F, Q
from rest_framework.authtoken.models import Token

from annotation.models import Annotation, Item
from benchmarks._common import AppServer
from tests.conftest import redis_url, require_service
from tests.faults.test_server_faults import assert_no_lost_or_partial_pages, call, served_database_url

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
REDIS_DB = 3  # this suite's own Redis database


def host(tmp_path: Path, name: str) -> AppServer:
    """bin/serve as one host runs it, on the database the test has already set up (no migrate)."""
    return AppServer.production(
        served_database_url(),
        tmp_path / name,
        processes=2,
        REDIS_URL=redis_url(REDIS_DB),
        TASK_WORKERS="0",
        EXPIRY_SECONDS="5",
    )


def test_two_hosts_share_one_database_and_keep_every_invariant(make_project, import_rows, make_user, tmp_path):
    require_service("Redis", "127.0.0.1", 6379)
    project = make_project("unli_slider", items_per_page=2, redundancy=2, max_annotations=2)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(120)])
    tokens = [Token.objects.create(user=make_user(f"host-worker{i}")).key for i in range(12)]
    hosts = [host(tmp_path, "host-a"), host(tmp_path, "host-b")]
    acknowledged, statuses, lock = [], [], threading.Lock()
    try:
        for server in hosts:
            server.launch()  # both start side by side
        for server in hosts:
            server.wait_until_serving()

        def work(index: int, token: str) -> None:
            # Each worker alternates between the hosts, as a load balancer would send them.
            for round_ in range(40):
                port = hosts[(index + round_) % 2].port
                status, page = call(port, "POST", f"/api/projects/{project.slug}/claim/", token)
                with lock:
                    statuses.append(status)
                if status != 201:
                    return  # 204: nothing left for this worker
                answers = {str(item["id"]): {"value": 1000 + index} for item in page["items"]}
                port = hosts[(index + round_ + 1) % 2].port  # the submit goes to the other host
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
        for server in hosts:
            server.stop()

    assert not [s for s in statuses if s >= 500], statuses
    assert len(acknowledged) >= 100  # 240 slots, 12 workers: most of the project was done through both hosts
    assert_no_lost_or_partial_pages(acknowledged)
    assert not (
        Annotation.objects.filter(item__project=project)
        .values("item", "worker")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .exists()
    ), "a worker answered an item twice"
    over = (
        Item.objects.filter(project=project)
        .annotate(
            stored=Count("annotations", distinct=True),
            held=Count("claims", filter=Q(claims__assignment__status="open"), distinct=True),
        )
        .filter(Q(stored__gt=F("target") - F("held")) | Q(stored__gt=2) | Q(annotation_count__gt=F("target")))
    )
    assert not over.exists(), "an item got more answers than its target"
