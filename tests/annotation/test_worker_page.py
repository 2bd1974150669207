"""The worker page's server side: drafts (save, restore, refusal, deletion), more time once, and abandoned
pages released early."""

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import Annotation, Assignment, Item, PageDraft
from annotation.services import drafts
from annotation.services.assignments import (
    SubmissionError,
    claim_page,
    extend_page,
    release_abandoned,
    release_page,
    submit_page,
)
from annotation.services.projects import update_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(make_project, import_rows):
    project = make_project("nli_label", slug="drafts", items_per_page=2, redundancy=1, max_annotations=1)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(4)])
    return project


def client_for(user):
    client = Client()
    client.force_login(user)
    return client


def post_draft(client, page, body):
    return client.post(f"/work/{page.project.slug}/{page.pk}/draft/", json.dumps(body), content_type="application/json")


def item_ids(page):
    return [str(i) for i in page.claims.order_by("position").values_list("item_id", flat=True)]


def test_a_saved_draft_comes_back_with_the_page_and_is_no_annotation(project, worker):
    page = claim_page(project, worker)
    first, second = item_ids(page)
    client = client_for(worker)
    response = post_draft(client, page, {"answers": {first: {"value": "e", "seconds": 3.5}, second: {"value": None}}})
    assert response.status_code == 200, response.content
    assert response.json()["saved"] is True
    assert Annotation.objects.count() == 0
    page.refresh_from_db()
    assert page.last_seen_at is not None  # the save is the page's heartbeat
    html = client.get(f"/work/{project.slug}/").content.decode()
    restored = html.split('id="page-draft" type="application/json">')[1].split("</script>")[0]
    assert json.loads(restored)[first] == {"value": "e", "seconds": 3.5}
    # A second save replaces the first (the same page in another tab writes the same draft).
    assert post_draft(client, page, {"answers": {second: {"value": "c"}}}).status_code == 200
    assert PageDraft.objects.get(assignment=page).data == {second: {"value": "c"}}


@pytest.mark.parametrize(
    "answers,field",
    [
        ([1, 2], "answers"),
        ({"999999": {"value": "e"}}, "answers[999999]"),
        ({"{first}": "e"}, "answers[{first}]"),
        ({"{first}": {"value": "e", "label": "x"}}, "answers[{first}].label"),
        ({"{first}": {"value": ["e"]}}, "answers[{first}].value"),
        ({"{first}": {"value": "e", "reason": "a\u0000b"}}, "answers[{first}]"),  # PostgreSQL stores no NUL
        ({"{first}": {"value": {"a\u0000": "b"}}}, "answers[{first}]"),
        ({"{first}": {"value": "x" * 6000}}, "answers[{first}].value"),
        ({"{first}": {"value": "e", "seconds": -1}}, "answers[{first}].seconds"),
        ({"{first}": {"value": "e", "reason": 5}}, "answers[{first}].reason"),
    ],
)
def test_bad_drafts_are_refused_naming_the_field_and_store_nothing(project, worker, answers, field):
    page = claim_page(project, worker)
    first = item_ids(page)[0]
    answers = json.loads(json.dumps(answers).replace("{first}", first))
    response = post_draft(client_for(worker), page, {"answers": answers})
    assert response.status_code == 400
    assert response.json()["field"] == field.replace("{first}", first)
    assert not PageDraft.objects.exists()
    page.refresh_from_db()
    assert page.last_seen_at is None


def test_a_reason_with_a_nul_character_is_refused_and_nothing_is_stored(project, worker):
    page = claim_page(project, worker)
    first, second = item_ids(page)
    answers = {first: {"value": "e", "reason": "fine"}, second: {"value": "c", "reason": "bad\u0000"}}
    response = client_for(worker).post(
        f"/api/assignments/{page.pk}/submit/", json.dumps({"answers": answers}), content_type="application/json"
    )
    assert response.status_code == 400 and response.json()["field"] == f"answers[{second}].reason"
    assert not Annotation.objects.exists()


def test_a_body_that_is_not_json_is_refused(project, worker):
    page = claim_page(project, worker)
    response = client_for(worker).post(f"/work/{project.slug}/{page.pk}/draft/", "value=e", content_type="text/plain")
    assert response.status_code == 400 and response.json()["field"] == "body"
    assert not PageDraft.objects.exists()


def test_only_the_pages_owner_saves_its_draft(project, worker, make_user, author):
    page = claim_page(project, worker)
    body = {"answers": {item_ids(page)[0]: {"value": "e"}}}
    for other in (make_user("worker2"), author):
        assert post_draft(client_for(other), page, body).status_code == 404
    with pytest.raises(SubmissionError) as refused:
        drafts.save_draft(page.pk, make_user("worker3"), body["answers"])
    assert refused.value.status == 404
    assert not PageDraft.objects.exists()


def test_submit_and_release_delete_the_draft(project, worker, make_user):
    page = claim_page(project, worker)
    drafts.save_draft(page.pk, worker, {item_ids(page)[0]: {"value": "e"}})
    submit_page(page.pk, worker, {i: {"value": "n"} for i in item_ids(page)})
    assert not PageDraft.objects.exists()
    other = make_user("worker2")
    second = claim_page(project, other)
    drafts.save_draft(second.pk, other, {item_ids(second)[0]: {"value": "e"}})
    release_page(second.pk, other)
    assert not PageDraft.objects.exists()
    # A closed page takes no more drafts.
    with pytest.raises(SubmissionError) as refused:
        drafts.save_draft(second.pk, other, {})
    assert refused.value.status == 409


def test_a_page_gets_more_time_once(project, worker):
    page = claim_page(project, worker)
    deadline = page.expires_at
    client = client_for(worker)
    response = client.post(f"/work/{project.slug}/{page.pk}/extend/")
    assert response.status_code == 200
    page.refresh_from_db()
    assert page.extended and page.expires_at == deadline + timedelta(minutes=project.claim_timeout_minutes)
    assert response.json()["expires_at"] == page.expires_at.isoformat()
    again = client.post(f"/work/{project.slug}/{page.pk}/extend/")
    assert again.status_code == 409 and "once" in again.json()["error"]
    page.refresh_from_db()
    assert page.expires_at == deadline + timedelta(minutes=project.claim_timeout_minutes)


def test_an_expired_page_cannot_be_extended(project, worker):
    page = claim_page(project, worker)
    with pytest.raises(SubmissionError) as refused:
        extend_page(page.pk, worker, now=page.expires_at + timedelta(seconds=1))
    assert refused.value.status == 409
    page.refresh_from_db()
    assert not page.extended


def test_an_abandoned_page_returns_its_items_within_the_set_minutes_plus_one(project, worker, make_user):
    update_project(project, abandon_after_minutes=7)
    page = claim_page(project, worker)
    held = set(page.claims.values_list("item_id", flat=True))
    assert not Item.objects.filter(id__in=held, claimable=True).exists()  # redundancy 1: the items are taken
    drafts.save_draft(page.pk, worker, {}, now=page.created_at + timedelta(minutes=3))  # a heartbeat at 3 min
    assert release_abandoned(now=page.created_at + timedelta(minutes=3 + 6)) == 0  # 6 silent minutes: kept
    assert release_abandoned(now=page.created_at + timedelta(minutes=3 + 7 + 1)) == 1
    page.refresh_from_db()
    assert page.status == Assignment.Status.EXPIRED
    assert not project.items.filter(active_claims__gt=0).exists()  # the page's items are free again
    assert Item.objects.filter(id__in=held, claimable=True).count() == len(held)
    # Back in the pool: another worker's claim takes them.
    other_page = claim_page(project, make_user("worker2"))
    assert set(other_page.claims.values_list("item_id", flat=True)) <= held | set(
        Item.objects.values_list("id", flat=True)
    )
    assert held & set(other_page.claims.values_list("item_id", flat=True))


def test_a_page_shown_and_then_silent_is_released_within_the_set_minutes_plus_one(project, worker):
    client = client_for(worker)
    assert client.get(f"/work/{project.slug}/").status_code == 200  # shown; then no heartbeat at all
    page = Assignment.objects.get(worker=worker)
    shown = page.last_seen_at
    assert shown is not None
    assert release_abandoned(now=shown + timedelta(minutes=9)) == 0  # default: 10 minutes
    assert release_abandoned(now=shown + timedelta(minutes=10 + 1)) == 1
    page.refresh_from_db()
    assert page.status == Assignment.Status.EXPIRED
    assert Item.objects.filter(claims__assignment=page, claimable=True).count() == 2
    assert release_abandoned(now=shown + timedelta(minutes=10 + 1)) == 0  # nothing left to release


def test_a_page_taken_through_the_api_keeps_its_deadline(project, worker):
    page = claim_page(project, worker)  # never shown in a browser: it sends no heartbeats
    assert release_abandoned(now=page.expires_at - timedelta(minutes=1)) == 0
    page.refresh_from_db()
    assert page.status == Assignment.Status.OPEN


def test_the_abandon_setting_is_declared_and_checked(project):
    from common.schema import SettingError

    with pytest.raises(SettingError) as refused:
        update_project(project, abandon_after_minutes=0)
    assert "abandon_after_minutes" in refused.value.errors


def test_slider_ticks_sit_where_the_map_gives_their_probability(make_project):
    from annotation.tasktypes.unli_slider import MAX_POSITION, TASK, TICK_PROBABILITIES, position_to_probability

    ticks = TASK.widget_context(TASK.default_options())["ticks"]
    assert [tick["probability"] for tick in ticks] == list(TICK_PROBABILITIES)
    assert [tick["label"] for tick in ticks] == ["never", "1%", "10%", "50%", "90%", "99%", "sure"]
    for tick in ticks:
        position = round(tick["percent"] / 100 * MAX_POSITION)
        assert position_to_probability(position) == pytest.approx(tick["probability"], abs=0.002)
    assert [tick["percent"] for tick in ticks] == sorted(tick["percent"] for tick in ticks)
    assert ticks[3]["percent"] == 50.0 and ticks[0]["percent"] == 0.0 and ticks[-1]["percent"] == 100.0
    # The page gets the project's own labels and its untouched-slider rule.
    project = make_project("unli_slider", tick_labels="0,a,b,c,d,e,1", allow_untouched=True)
    context = project.task.widget_context(project.options)
    assert [tick["label"] for tick in context["ticks"]] == ["0", "a", "b", "c", "d", "e", "1"]
    assert context["allow_untouched"] is True


@pytest.mark.parametrize("labels", ["0,1", "0,1%,10%,,90%,99%,1", "0,1%,10%,50%,90%,99%,certainly"])
def test_bad_tick_labels_are_refused(make_project, labels):
    from common.schema import SettingError

    with pytest.raises(SettingError) as refused:
        make_project("unli_slider", tick_labels=labels)
    assert "tick_labels" in refused.value.errors


def test_the_slider_page_starts_unset_and_shows_the_ticks(make_project, import_rows, worker):
    project = make_project("unli_slider", items_per_page=2)
    import_rows(project, [{"id": str(i), "premise": "P", "hypothesis": f"H{i}"} for i in range(2)])
    html = client_for(worker).get(f"/work/{project.slug}/").content.decode()
    assert html.count('class="slider unset"') == 2
    assert html.count('class="slider-value"') == 2 and 'value="" class="slider-value"' in html
    assert ">99%</span>" in html and 'style="left: 50.00%"' in html


def test_the_expiry_command_releases_abandoned_pages(project, worker):
    from io import StringIO

    from django.core.management import call_command

    client_for(worker).get(f"/work/{project.slug}/")
    page = Assignment.objects.get(worker=worker)
    Assignment.objects.filter(pk=page.pk).update(last_seen_at=timezone.now() - timedelta(minutes=11))
    out = StringIO()
    call_command("expire_claims", "--json", stdout=out)
    assert json.loads(out.getvalue()) == {"expired": 1}
    page.refresh_from_db()
    assert page.status == Assignment.Status.EXPIRED
