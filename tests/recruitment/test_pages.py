"""The study's Prolific page as an author uses it (link, create, publish, settle, bonuses, groups), who may
reach it, and the secrets test: the API token and the webhook secret appear in no page, response, export,
log line or audit entry along the way."""

import json
import logging

import pytest
from django.test import Client

from annotation.models import AuditEntry
from recruitment.models import Bonus, ProlificLink
from recruitment.services import studies
from tests.recruitment.conftest import TOKEN, WEBHOOK_SECRET, arrive

pytestmark = pytest.mark.django_db


def base(slug):
    return f"/recruitment/projects/{slug}/prolific/"


@pytest.fixture
def author_client(author):
    client = Client()
    client.force_login(author)
    return client


def test_only_the_studys_manager_reaches_its_prolific_page(study, make_user, author_client):
    assert author_client.get(base(study.slug)).status_code == 200
    other = Client()
    other.force_login(make_user("author2", "author"))
    assert other.get(base(study.slug)).status_code == 404
    worker = Client()
    worker.force_login(make_user("w1", "worker"))
    assert worker.get(base(study.slug)).status_code in (403, 404)
    assert worker.post(base(study.slug) + "study/", {"action": "create"}).status_code in (403, 404)
    assert Client().get(base(study.slug)).status_code == 302
    assert ProlificLink.objects.get().prolific_study_id == ""


def test_a_refusal_comes_back_as_a_message_naming_the_field(study, author_client):
    response = author_client.post(base(study.slug) + "link/", {"places": "many"})
    assert response.status_code == 400 and "places: a whole number" in response.content.decode()
    response = author_client.post(base(study.slug) + "link/", {"name": "x", "places": "0"})
    assert response.status_code == 400 and "places: at least one participant" in response.content.decode()
    assert ProlificLink.objects.get().places == 3


@pytest.mark.parametrize(
    ("posted", "message"),
    [
        ({"places": str(2**31)}, "places: a whole number from 0 to 2147483647"),
        ({"reward_cents": "9" * 25}, "reward_cents: a whole number (got"),
        ({"estimated_minutes": "\u00b2"}, "estimated_minutes: a whole number"),
        ({"screen_out_slots": str(2**40)}, "screen_out_slots: a whole number from 0 to 2147483647"),
        ({"minimum_approval_rate": str(2**15)}, "minimum_approval_rate: "),  # kept as created, whatever the value
        ({"name": "n" * 256}, "name: at most 255 characters"),
        ({"description": "d" * 10_001}, "description: at most 10000 characters"),
        ({"workspace_id": "w" * 65}, "workspace_id: at most 64 characters"),
        ({"token": "t" * 1001}, "token: at most 1000 characters"),
    ],
    ids=[
        "2^31 places",
        "25-digit reward",
        "a superscript",
        "2^40 slots",
        "approval 2^15",
        "long name",
        "long description",
        "long workspace",
        "long token",
    ],
)
def test_an_out_of_range_field_is_a_form_error_and_nothing_is_sent(
    study, author, author_client, standin, posted, message
):
    """For a study already on Prolific: the refusal comes before the PATCH, not after it."""
    link = studies.create_draft(studies.link_of(study), "https://testserver", author)
    before = {field.name: getattr(link, field.name) for field in ProlificLink._meta.concrete_fields}
    calls = len(standin.calls)
    response = author_client.post(base(study.slug) + "link/", posted)
    assert response.status_code == 400 and message in response.content.decode()
    link.refresh_from_db()
    assert {field.name: getattr(link, field.name) for field in ProlificLink._meta.concrete_fields} == before
    assert [call.method for call in standin.calls[calls:]] in ([], ["GET"])  # the page reads the study only


def test_the_whole_run_from_the_page_never_shows_a_secret(study, author, make_user, standin, caplog, settings):
    caplog.set_level(logging.DEBUG)
    client = Client()
    client.force_login(author)
    seen = []

    def visit(method, path, data=None):
        response = getattr(client, method)(path, data or {}, follow=True)
        assert response.status_code == 200, (path, response.status_code)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        seen.append(body.decode())
        return response

    page = visit("get", base(study.slug))
    assert "(set: type a new one to replace it)" in page.content.decode()
    assert "{{%PROLIFIC_PID%}}" in page.content.decode()
    visit(
        "post",
        base(study.slug) + "link/",
        {
            "token": TOKEN,
            "name": "Judge pairs",
            "places": "3",
            "reward_cents": "150",
            "currency": "gbp",
            "estimated_minutes": "8",
            "screen_out_reward_cents": "20",
            "screen_out_slots": "2",
            "workspace_id": "ws000001",
        },
    )
    visit("post", base(study.slug) + "study/", {"action": "create"})
    page = visit("post", base(study.slug) + "study/", {"action": "publish"})
    assert "published here" in page.content.decode()
    link = ProlificLink.objects.get()
    assert link.currency == "GBP" and link.state == "active"
    study.refresh_from_db()
    session = arrive(study, "PDONE", pages=1, gold=[True, True])
    done = standin.add_submission(link.prolific_study_id, "PDONE", "AWAITING REVIEW", session.completion_code)
    page = visit("post", base(study.slug) + "pull/")
    assert "1 submissions read" in page.content.decode() and "PDONE" in page.content.decode()
    visit("post", base(study.slug) + "decide/", {"decision": "approve", "submission": [done]})
    assert standin.submissions[done]["status"] == "APPROVED"
    visit(
        "post",
        base(study.slug) + "bonuses/",
        {"rule": "manual", "participant": "PDONE", "amount": "0.50", "reason": "clear comments", "key": "k1"},
    )
    visit(
        "post",
        base(study.slug) + "bonuses/",
        {"rule": "manual", "participant": "PDONE", "amount": "0.50", "reason": "clear comments", "key": "k1"},
    )  # submitted twice
    page = visit("post", base(study.slug) + "bonuses/pay/")
    assert "Paid 1" in page.content.decode() and len(standin.payments) == 1 and Bonus.objects.count() == 1
    page = visit("post", base(study.slug) + "groups/", {"name": "good", "minimum": "0.8"})
    assert "holds 1 participant" in page.content.decode()
    visit("get", f"/projects/{study.slug}/")
    for fmt in ("jsonl", "csv"):
        visit("get", f"/projects/{study.slug}/export/{fmt}/")
    root = make_user("root", "admin")
    root.is_superuser = True  # the admin's model pages ask for model permissions
    root.save()
    admin = Client()
    admin.force_login(root)
    for path in ("/admin/recruitment/prolificlink/", f"/admin/recruitment/prolificlink/{link.pk}/change/", "/audit/"):
        response = admin.get(path)
        assert response.status_code == 200, path
        seen.append(response.content.decode())
    audit = json.dumps(list(AuditEntry.objects.values("action", "details")), default=str)
    assert '"operation": "link"' in audit and '"replaced": ["token"]' in audit
    seen += [audit, caplog.text]
    for secret in (TOKEN, WEBHOOK_SECRET):
        assert not [text for text in seen if secret in text]


def test_the_reward_form_suggests_an_amount_and_warns_below_prolifics_minimum(study, author_client):
    arrive(study, "PPILOT", pages=1)
    page = author_client.get(base(study.slug), {"hourly_rate": "5"}).content.decode()
    assert "below Prolific&#x27;s minimum" in page or "below Prolific's minimum" in page
    assert 'id="suggested-reward"' in page
    refused = author_client.get(base(study.slug), {"hourly_rate": "lots"}).content.decode()
    assert "hourly_rate: &#x27;lots&#x27; is not an amount" in refused


def test_subscribing_to_submission_events_from_the_page(study, author_client, standin):
    page = author_client.get(base(study.slug), secure=True).content.decode()
    assert "Not subscribed. Enter the Prolific workspace id above first." in page
    assert 'id="webhook-url">https://testserver/recruitment/webhooks/prolific/<' in page
    refused = author_client.post(base(study.slug) + "hooks/", {"operation": "subscribe"}, secure=True, follow=True)
    assert "workspace_id: the Prolific workspace" in refused.content.decode() and standin.calls == []
    author_client.post(base(study.slug) + "link/", {"workspace_id": "ws000001"}, secure=True)
    plain = author_client.post(base(study.slug) + "hooks/", {"operation": "subscribe"}, follow=True)
    assert "public https:// address" in plain.content.decode() and standin.calls == []

    page = author_client.post(base(study.slug) + "hooks/", {"operation": "subscribe"}, secure=True, follow=True)
    link = ProlificLink.objects.get()
    text = page.content.decode()
    assert f"Subscribed to submission events ({link.hook_subscription_id})" in text
    assert "Remove the subscription" in text and link.hook_subscription_id in text
    hook = standin.hooks[link.hook_subscription_id]
    assert hook["target_url"] == "https://testserver/recruitment/webhooks/prolific/" and hook["is_enabled"]
    secret = standin.hook_secrets["ws000001"]["value"]
    assert link.webhook_secret == secret
    assert "(set: type a new one to replace it)" in text

    page = author_client.post(base(study.slug) + "hooks/", {"operation": "unsubscribe"}, secure=True, follow=True)
    assert "Subscription removed" in page.content.decode() and not standin.hooks
    audit = json.dumps(list(AuditEntry.objects.values("details")), default=str)
    assert '"operation": "subscribe"' in audit and '"operation": "unsubscribe"' in audit
    for shown in (text, page.content.decode(), audit):
        assert secret not in shown and hook["confirm"] not in shown and TOKEN not in shown


def test_only_the_studys_manager_subscribes(study, make_user, standin):
    other = Client()
    other.force_login(make_user("author2", "author"))
    assert other.post(base(study.slug) + "hooks/", {"operation": "subscribe"}, secure=True).status_code == 404
    assert Client().post(base(study.slug) + "hooks/", {"operation": "subscribe"}).status_code == 302
    assert standin.calls == []


@pytest.mark.parametrize(
    ("path", "posted", "message"),
    [
        ("bonuses/", {"rule": "gold", "minimum": "nan", "amount": "1"}, "minimum accuracy: a number between 0 and 1"),
        ("bonuses/", {"rule": "gold", "minimum": "0.5", "amount": "NaN"}, "amount: between 0.01 and"),
        ("bonuses/", {"rule": "page", "amount": "1e999999999"}, "amount: "),
        ("groups/", {"name": "g" * 201, "minimum": "0.5"}, "name: at most 200 characters"),
        ("groups/", {"name": "good", "minimum": "1e999"}, "minimum accuracy: a number between 0 and 1"),
        ("groups/use/", {"group": "\u00b2", "mode": "allow"}, "group: choose one of your participant groups"),
        ("groups/use/", {"group": "9" * 30, "mode": "allow"}, "group: choose one of your participant groups"),
        ("bonuses/pay/", {"release": "1", "bonus": ["\u00b2", "9" * 30]}, "0 bonus(es) will be paid"),
    ],
    ids=[
        "NaN accuracy",
        "NaN amount",
        "huge amount",
        "long group name",
        "infinite accuracy",
        "superscript group",
        "30-digit group",
        "odd bonus ids",
    ],
)
def test_the_other_prolific_forms_refuse_out_of_range_values_before_calling_prolific(
    study, author, author_client, standin, path, posted, message
):
    studies.save_link(study, author, workspace_id="ws000001")
    calls = len(standin.calls)
    response = author_client.post(base(study.slug) + path, posted, follow=True)
    assert response.status_code == 200 and message in response.content.decode()
    assert standin.calls[calls:] == [] and not Bonus.objects.exists()
