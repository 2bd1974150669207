from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from annotation.models import Annotation, Assignment, Claim, Item
from annotation.services.assignments import SubmissionError, claim_page, expire_stale, release_page, submit_page

pytestmark = pytest.mark.django_db


@pytest.fixture
def slider(make_project, import_rows):
    project = make_project("unli_slider", items_per_page=3)
    import_rows(project, [{"id": str(i), "premise": f"P{i // 2}", "hypothesis": f"H{i}"} for i in range(6)])
    return project


def answer_all(assignment, value):
    return {str(c.item_id): {"value": value, "seconds": 1.5} for c in assignment.claims.all()}


def test_claim_gives_k_items_and_resumes_the_open_page(slider, worker):
    page = claim_page(slider, worker)
    assert page.claims.count() == 3
    assert claim_page(slider, worker).pk == page.pk
    for item in Item.objects.filter(id__in=page.claims.values("item")):
        assert item.active_claims == 1 and item.claimable  # target 2: one slot left


def test_non_workers_cannot_claim(slider, author):
    with pytest.raises(PermissionDenied):
        claim_page(slider, author)


def test_submit_stores_raw_and_probability_and_timings(slider, worker):
    page = claim_page(slider, worker)
    result = submit_page(page.pk, worker, answer_all(page, 6000))
    assert result.created == 3 and not result.late
    annotation = Annotation.objects.filter(worker=worker).first()
    assert annotation.raw == {"position": 6000}
    assert annotation.value == pytest.approx(0.607838, abs=1e-6)
    assert annotation.seconds_spent == 1.5 and annotation.started_at == page.created_at


def test_bad_submission_names_the_field_and_stores_nothing(slider, worker):
    page = claim_page(slider, worker)
    answers = answer_all(page, 5000)
    bad_item = sorted(answers)[1]
    answers[bad_item] = {"value": 10001}
    with pytest.raises(SubmissionError) as error:
        submit_page(page.pk, worker, answers)
    assert error.value.field == f"answers[{bad_item}].value" and error.value.status == 400
    del answers[bad_item]
    with pytest.raises(SubmissionError) as error:
        submit_page(page.pk, worker, answers)
    assert error.value.field == f"answers[{bad_item}]"
    assert not Annotation.objects.exists()
    assert Assignment.objects.get(pk=page.pk).status == "open"


def test_repeated_submit_is_stored_once(slider, worker):
    page = claim_page(slider, worker)
    answers = answer_all(page, 4000)
    first = submit_page(page.pk, worker, answers)
    second = submit_page(page.pk, worker, answers)
    assert second.repeated and second.as_dict()["annotations"] == first.as_dict()["annotations"]
    assert Annotation.objects.count() == 3
    with pytest.raises(SubmissionError) as error:
        submit_page(page.pk, worker, answer_all(page, 9000))
    assert error.value.status == 409


def test_another_worker_cannot_submit_my_page(slider, worker, make_user):
    page = claim_page(slider, worker)
    other = make_user("other")
    with pytest.raises(SubmissionError) as error:
        submit_page(page.pk, other, answer_all(page, 4000))
    assert error.value.status == 404


def test_a_worker_never_gets_an_item_twice(slider, worker):
    seen = []
    while (page := claim_page(slider, worker)) is not None:
        ids = list(page.claims.values_list("item_id", flat=True))
        seen += ids
        submit_page(page.pk, worker, answer_all(page, 5000))
    assert len(seen) == len(set(seen)) == 6


def test_slider_third_annotation_only_on_disagreement(slider, make_user):
    workers = [make_user(f"w{i}") for i in range(4)]
    positions = {workers[0]: 1000, workers[1]: 3500, workers[2]: 2000, workers[3]: 2000}
    for worker in workers:
        while (page := claim_page(slider, worker)) is not None:
            submit_page(page.pk, worker, answer_all(page, positions[worker]))
    for item in Item.objects.filter(project=slider):
        assert item.annotation_count == 3 and item.status == "done"  # 1000 vs 3500 differ by > 2000
        values = sorted(Annotation.objects.filter(item=item).values_list("value", flat=True))
        assert item.aggregate == values[1]


def test_expired_page_returns_items_and_late_submit_is_kept(slider, worker, make_user):
    page = claim_page(slider, worker)
    Assignment.objects.filter(pk=page.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert expire_stale() == 1
    assert not Claim.objects.filter(assignment__status="open").exists()
    assert all(item.active_claims == 0 and item.claimable for item in Item.objects.all())
    result = submit_page(page.pk, worker, answer_all(page, 7000))
    assert result.late
    assert Annotation.objects.filter(worker=worker, late=True).count() == 3


def test_release_returns_items_to_others(slider, worker, make_user):
    page = claim_page(slider, worker)
    release_page(page.pk, worker)
    assert Item.objects.filter(active_claims=0).count() == 6
    with pytest.raises(SubmissionError):
        submit_page(page.pk, worker, answer_all(page, 7000))
    nxt = claim_page(slider, worker)
    assert not set(nxt.claims.values_list("item_id", flat=True)) & set(page.claims.values_list("item_id", flat=True))


def test_coherence_groups_are_never_on_one_page(make_project, import_rows, worker):
    project = make_project("unli_slider", items_per_page=4)
    import_rows(project, [{"id": str(i), "premise": "P", "hypothesis": f"H{i}"} for i in range(6)])
    Item.objects.filter(project=project).update(coherence_group="set-a")
    page = claim_page(project, worker)
    assert page.claims.count() == 1
    assert claim_page(project, worker).pk == page.pk
