"""Many workers claiming and submitting at once, on PostgreSQL (SQLite ignores SELECT ... FOR UPDATE)."""

import random
import threading
from collections import Counter

import pytest
from django.db import connection
from django.db.models import Count

from annotation.models import Annotation, Claim, Item
from annotation.services.assignments import claim_page, submit_page

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def run_threads(target, count):
    errors = []

    def wrapped(index):
        try:
            target(index)
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors[:3]


def test_simultaneous_claims_never_over_assign(make_project, import_rows, make_user):
    project = make_project("nli_label", items_per_page=3, redundancy=1, max_annotations=1)
    import_rows(project, [{"id": str(i), "premise": "P", "hypothesis": f"H{i}"} for i in range(30)])
    workers = [make_user(f"w{i}") for i in range(20)]
    barrier = threading.Barrier(20)
    claimed = Counter()

    def claim(index):
        barrier.wait()
        page = claim_page(project, workers[index])
        if page is not None:
            for item_id in page.claims.values_list("item_id", flat=True):
                claimed[item_id] += 1

    run_threads(claim, 20)
    assert sum(claimed.values()) == 30  # 20 workers x 3 slots > 30 items: every item taken exactly once
    assert max(claimed.values()) == 1
    assert not Item.objects.filter(project=project, claimable=True).exists()


def test_crowd_claims_and_submits_keep_every_invariant(make_project, import_rows, make_user):
    project = make_project("unli_slider", items_per_page=4)
    import_rows(project, [{"id": str(i), "premise": f"P{i % 7}", "hypothesis": f"H{i}"} for i in range(80)])
    workers = [make_user(f"crowd{i}") for i in range(12)]
    acknowledged = Counter()

    def work(index):
        rng = random.Random(index)
        worker = workers[index]
        while (page := claim_page(project, worker)) is not None:
            answers = {str(c.item_id): {"value": rng.randrange(0, 10001)} for c in page.claims.all()}
            result = submit_page(page.pk, worker, answers)
            acknowledged[worker.pk] += result.created
            if rng.random() < 0.3:  # a double click: the same submission again stores nothing
                assert submit_page(page.pk, worker, answers).repeated

    run_threads(work, 12)
    annotations = Annotation.objects.filter(item__project=project)
    assert annotations.count() == sum(acknowledged.values())  # no acknowledged submit is lost
    duplicates = annotations.values("item", "worker").annotate(n=Count("id")).filter(n__gt=1)
    assert not duplicates.exists()
    for item in Item.objects.filter(project=project):
        stored = annotations.filter(item=item).count()
        assert stored == item.annotation_count <= item.target <= project.max_annotations
        assert item.active_claims == 0
        assert item.status == "done"  # enough workers to finish every item
    assert not Claim.objects.filter(assignment__status="open").exists()
