"""A worker's claims continue after the last item they claimed (so a long history costs nothing), and
items left behind them (released or expired by others) still reach them once nothing is left ahead."""

import pytest

from annotation.services.assignments import claim_page, expire_stale, release_page, submit_page

pytestmark = pytest.mark.django_db


def first_item(page) -> int:
    return page.claims.get().item_id


def answer(page):
    return {str(first_item(page)): {"value": 5000}}


def test_an_item_released_behind_the_worker_comes_back_to_them_at_the_end(make_project, import_rows, worker, make_user):
    project = make_project("unli_slider", items_per_page=1, redundancy=1, max_annotations=1)
    import_rows(project, [{"id": str(i), "premise": "P", "hypothesis": f"H{i}"} for i in range(3)])
    other = make_user("worker2")
    mine = claim_page(project, worker)
    theirs = claim_page(project, other)
    submit_page(mine.pk, worker, answer(mine))
    ahead = claim_page(project, worker)  # past the item the other worker holds
    assert first_item(mine) < first_item(theirs) < first_item(ahead)
    release_page(theirs.pk, other)  # now free again, behind this worker's last claim
    submit_page(ahead.pk, worker, answer(ahead))
    behind = claim_page(project, worker)
    assert behind is not None and first_item(behind) == first_item(theirs)
    submit_page(behind.pk, worker, answer(behind))
    assert claim_page(project, worker) is None  # all three answered, nothing left


def test_an_expired_page_frees_the_last_item_for_a_claim_when_the_pool_looks_empty(
    make_project, import_rows, worker, make_user
):
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Assignment

    project = make_project("unli_slider", items_per_page=1, redundancy=1, max_annotations=1)
    import_rows(project, [{"id": "0", "premise": "P", "hypothesis": "H"}])
    other = make_user("worker2")
    abandoned = claim_page(project, other)
    Assignment.objects.filter(pk=abandoned.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    page = claim_page(project, worker)  # no expiry loop ran: the claim itself expires the overdue page
    assert page is not None and first_item(page) == first_item(abandoned)
    assert Assignment.objects.get(pk=abandoned.pk).status == Assignment.Status.EXPIRED
    assert expire_stale() == 0
