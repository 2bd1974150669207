"""Prolific's submission status events at POST /recruitment/webhooks/prolific/: signed and recent events
update the settle table once; a bad signature or a stale timestamp is refused (403) and stores nothing; a
repeated event id changes nothing; an event older than what is known does not move a submission back.
Subscribing from here (against the stand-in): Prolific's exact calls, the new workspace secret stored and
verifying Prolific-shaped events (X-Event-ID, X-Timestamp, the study found from the submission), removing the
subscription, and the refusals, ours and Prolific's."""

import json
import time

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.models import AuditEntry
from annotation.services.crowd import crowd
from recruitment.models import ProlificLink, ProlificSubmission, WebhookEvent
from recruitment.prolific import ProlificError
from recruitment.services import studies, webhooks
from recruitment.services.studies import RecruitmentError
from recruitment.services.webhooks import sign
from tests.recruitment.conftest import SITE, TOKEN, WEBHOOK_SECRET, arrive
from tests.recruitment.standin import Refused

pytestmark = pytest.mark.django_db
URL = "/recruitment/webhooks/prolific/"


@pytest.fixture
def on_prolific(study, author, standin):
    return studies.create_draft(studies.link_of(study), SITE, author)


def event(link, event_id: str, status: str, at: str, submission: str = "sub-1") -> bytes:
    return json.dumps(
        {
            "event_id": event_id,
            "event_type": "submission.status.change",
            "resource_id": submission,
            "study_id": link.prolific_study_id,
            "participant_id": "PONE",
            "status": status,
            "datetime_created": at,
        }
    ).encode()


def deliver(body: bytes, secret: str = WEBHOOK_SECRET, timestamp: int | None = None, signature: str | None = None):
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    return Client().post(
        URL,
        body,
        content_type="application/json",
        headers={
            "X-Prolific-Request-Timestamp": stamp,
            "X-Prolific-Request-Signature": signature if signature is not None else sign(secret, stamp, body),
        },
    )


def test_a_signed_event_updates_the_settle_table_once(on_prolific):
    body = event(on_prolific, "ev-1", "AWAITING REVIEW", "2026-03-01T10:00:00Z")
    assert deliver(body).status_code == 200
    row = ProlificSubmission.objects.get()
    assert (row.submission_id, row.participant_id, row.status) == ("sub-1", "PONE", "AWAITING REVIEW")
    again = deliver(body)  # Prolific retries a delivery it thinks failed
    assert again.status_code == 200 and again.json() == {"taken": False}
    assert WebhookEvent.objects.count() == 1


def test_an_older_event_does_not_move_a_submission_back(on_prolific):
    assert deliver(event(on_prolific, "ev-2", "APPROVED", "2026-03-01T12:00:00Z")).status_code == 200
    late = deliver(event(on_prolific, "ev-1", "AWAITING REVIEW", "2026-03-01T10:00:00Z"))
    assert late.status_code == 200 and late.json() == {"taken": True, "applied": False}
    assert ProlificSubmission.objects.get().status == "APPROVED"
    assert WebhookEvent.objects.get(event_id="ev-1").applied is False


@pytest.mark.parametrize(
    "tamper",
    [
        {"secret": "not-the-secret"},
        {"signature": ""},
        {"timestamp_offset": -301},
        {"timestamp_offset": 600},
    ],
    ids=["wrong secret", "no signature", "stale", "from the future"],
)
def test_a_bad_signature_or_timestamp_is_refused_and_stores_nothing(on_prolific, tamper):
    if "timestamp_offset" in tamper:  # from the time the test runs, not the time the suite was collected
        tamper = {"timestamp": int(time.time()) + tamper["timestamp_offset"]}
    response = deliver(event(on_prolific, "ev-9", "APPROVED", "2026-03-01T10:00:00Z"), **tamper)
    assert response.status_code == (400 if tamper == {"signature": ""} else 403)
    assert not WebhookEvent.objects.exists() and not ProlificSubmission.objects.exists()


def test_a_changed_body_does_not_pass_with_the_old_signature(on_prolific):
    stamp = str(int(time.time()))
    signed = event(on_prolific, "ev-3", "AWAITING REVIEW", "2026-03-01T10:00:00Z")
    forged = event(on_prolific, "ev-3", "APPROVED", "2026-03-01T10:00:00Z")
    assert deliver(forged, timestamp=int(stamp), signature=sign(WEBHOOK_SECRET, stamp, signed)).status_code == 403
    assert not WebhookEvent.objects.exists()


def test_an_event_of_another_study_is_answered_not_taken_when_a_secret_here_signed_it(on_prolific):
    # A subscription covers the workspace: Prolific retries refused deliveries and may disable it.
    body = json.dumps(
        {"event_id": "x", "event_type": "submission.status.change", "study_id": "someone-elses", "status": "APPROVED"}
    ).encode()
    answer = deliver(body)
    assert answer.status_code == 200 and answer.json() == {"taken": False}
    assert deliver(body, secret="a-secret-stored-nowhere-here").status_code == 403
    assert deliver(body, timestamp=int(time.time()) - 3600).status_code == 403
    assert not WebhookEvent.objects.exists()
    assert Client().get(URL).status_code == 405


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"status": "HACKED"}, "status"),
        ({"status": ["APPROVED"]}, "status"),
        ({"status": "approved"}, "status"),
        ({"status": None}, "status"),
        ({"event_type": "study.status.change"}, "event_type"),
        ({"event_type": None}, "event_type"),
        ({"event_type": ["submission.status.change"]}, "event_type"),
    ],
    ids=["unknown status", "a list", "lower case", "no status", "another event", "no event type", "a list type"],
)
def test_only_prolifics_documented_event_and_statuses_are_taken(on_prolific, change, field):
    assert deliver(event(on_prolific, "ev-1", "AWAITING REVIEW", "2026-03-01T10:00:00Z")).status_code == 200
    body = json.loads(event(on_prolific, "ev-2", "APPROVED", "2026-03-01T12:00:00Z"))
    body.update(change)
    body = {key: value for key, value in body.items() if value is not None}
    with CaptureQueriesContext(connection) as queries:
        response = deliver(json.dumps(body).encode())
    assert response.status_code == 400 and response.content.decode().startswith(f"{field}:")
    assert not [
        q["sql"] for q in queries if not q["sql"].lstrip().upper().startswith(("SELECT", "SAVEPOINT", "RELEASE"))
    ]
    assert ProlificSubmission.objects.get().status == "AWAITING REVIEW"
    assert list(WebhookEvent.objects.values_list("event_id", flat=True)) == ["ev-1"]
    # Unsigned, the same body is refused as any unsigned one: the signature is checked first.
    assert deliver(json.dumps(body).encode(), secret="not-the-secret").status_code == 403


# ---------------------------------------------------------------------------- subscribing from here

WORKSPACE = "ws000001"
TARGET = "https://studio.example.org/recruitment/webhooks/prolific/"


@pytest.fixture
def in_workspace(study, author, standin):
    return studies.save_link(study, author, workspace_id=WORKSPACE)


def prolific_event(submission: str, status: str, participant: str = "PONE") -> bytes:
    """A body as Prolific sends it (docs.prolific.com, Webhooks > Receiving): no study id, no event id."""
    return json.dumps(
        {
            "resource_id": submission,
            "event_type": "submission.status.change",
            "participant_id": participant,
            "status": status,
        }
    ).encode()


def post_event(body: bytes, headers: dict):
    return Client().post(URL, body, content_type="application/json", headers=headers)


def test_subscribing_sends_prolifics_calls_and_keeps_the_secret_that_signs_events(in_workspace, author, standin):
    link = webhooks.subscribe(in_workspace, TARGET, author)
    sent = [(call.method, call.path, call.body) for call in standin.calls]
    hook = link.hook_subscription_id
    assert sent == [
        ("GET", "/api/v1/hooks/event-types/", None),
        ("POST", "/api/v1/hooks/secrets/", {"workspace_id": WORKSPACE}),
        (
            "POST",
            "/api/v1/hooks/subscriptions/",
            {"event_type": "submission.status.change", "target_url": TARGET, "workspace_id": WORKSPACE},
        ),
        ("POST", f"/api/v1/hooks/subscriptions/{hook}/", {"secret": standin.hooks[hook]["confirm"]}),
    ]
    assert standin.hooks[hook]["is_enabled"] is True
    secret = standin.hook_secrets[WORKSPACE]["value"]
    link = ProlificLink.objects.get()
    assert link.webhook_secret == secret and secret not in link.webhook_secret_encrypted
    assert link.hook_subscription_id == hook
    entry = AuditEntry.objects.filter(action="prolific").latest("pk")
    assert entry.details["operation"] == "subscribe" and entry.details["subscription"] == hook
    assert entry.details["done"] == ["secret", "subscription", "confirmed"]
    assert secret not in json.dumps(entry.details) and standin.hooks[hook]["confirm"] not in json.dumps(entry.details)

    # An event as Prolific sends it, signed with the workspace's new secret, finds its study by the submission
    # (the participant's SESSION_ID) and is taken once by its X-Event-ID.
    arrive(link.project, "PONE")
    body = prolific_event("session-PONE", "AWAITING REVIEW")
    answer = post_event(body, standin.event_headers(WORKSPACE, body, "evt-1"))
    assert answer.status_code == 200 and answer.json() == {"taken": True, "applied": True}
    row = ProlificSubmission.objects.get()
    assert (row.submission_id, row.participant_id, row.status) == ("session-PONE", "PONE", "AWAITING REVIEW")
    assert post_event(body, standin.event_headers(WORKSPACE, body, "evt-1")).json() == {"taken": False}
    # The secret pasted before no longer signs anything on Prolific: an event signed with it is refused.
    assert deliver(prolific_event("session-PONE", "APPROVED"), secret=WEBHOOK_SECRET).status_code == 403


def test_an_event_of_a_pulled_submission_is_ordered_by_x_timestamp(in_workspace, author, standin):
    webhooks.subscribe(in_workspace, TARGET, author)
    now = int(time.time())
    newer, older = prolific_event("sub-7", "APPROVED"), prolific_event("sub-7", "AWAITING REVIEW")
    ProlificSubmission.objects.create(link=in_workspace, submission_id="sub-7", participant_id="P7", status="ACTIVE")
    assert post_event(newer, standin.event_headers(WORKSPACE, newer, "e-new", sent=now)).status_code == 200
    late = post_event(older, standin.event_headers(WORKSPACE, older, "e-old", sent=now - 60))
    assert late.json() == {"taken": True, "applied": False}
    assert ProlificSubmission.objects.get().status == "APPROVED"


def test_an_event_of_a_submission_unknown_here_is_not_taken_and_a_foreign_signature_refused(
    in_workspace, author, standin
):
    webhooks.subscribe(in_workspace, TARGET, author)
    body = prolific_event("someone-elses-submission", "APPROVED")
    answer = post_event(body, standin.event_headers(WORKSPACE, body, "evt-x"))
    assert answer.status_code == 200 and answer.json() == {"taken": False}
    forged = {**standin.event_headers(WORKSPACE, body, "evt-y"), "X-Prolific-Request-Signature": sign("x", "1", body)}
    assert post_event(body, forged).status_code == 403
    assert not WebhookEvent.objects.exists()


def test_every_study_of_the_workspace_gets_the_new_secret(in_workspace, author, standin, make_project):
    other = make_project("nli_label", slug="wave-two")
    studies.save_link(other, author, token=TOKEN, webhook_secret="old-one", workspace_id=WORKSPACE)
    webhooks.subscribe(in_workspace, TARGET, author)
    secret = standin.hook_secrets[WORKSPACE]["value"]
    assert [link.webhook_secret for link in ProlificLink.objects.order_by("pk")] == [secret, secret]
    assert AuditEntry.objects.filter(action="prolific").latest("pk").details["secret_shared_with"] == 1


def test_unsubscribing_deletes_the_subscription_and_keeps_the_secret(in_workspace, author, standin):
    link = webhooks.subscribe(in_workspace, TARGET, author)
    hook = link.hook_subscription_id
    webhooks.unsubscribe(link, author)
    assert standin.calls[-1].method == "DELETE" and standin.calls[-1].path == f"/api/v1/hooks/subscriptions/{hook}/"
    assert standin.calls[-1].body is None and not standin.hooks
    link = ProlificLink.objects.get()
    assert link.hook_subscription_id == "" and link.webhook_secret == standin.hook_secrets[WORKSPACE]["value"]
    entry = AuditEntry.objects.filter(action="prolific").latest("pk")
    assert entry.details == {"operation": "unsubscribe", "subscription": hook, "already_gone": False}
    with pytest.raises(RecruitmentError, match="no subscription to remove"):
        webhooks.unsubscribe(link, author)


def test_a_subscription_already_gone_on_prolific_counts_as_removed(in_workspace, author, standin):
    link = webhooks.subscribe(in_workspace, TARGET, author)
    standin.hooks.clear()  # removed on Prolific's site
    webhooks.unsubscribe(link, author)
    assert ProlificLink.objects.get().hook_subscription_id == ""
    assert AuditEntry.objects.filter(action="prolific").latest("pk").details["already_gone"] is True


@pytest.mark.parametrize(
    ("change", "target", "message"),
    [
        ({"workspace_id": ""}, TARGET, "workspace_id: the Prolific workspace"),
        ({}, "http://studio.example.org/recruitment/webhooks/prolific/", "public https:// address"),
        ({"hook_subscription_id": "hook999999"}, TARGET, "already subscribed"),
    ],
    ids=["no workspace", "not https", "already subscribed"],
)
def test_a_subscription_this_study_cannot_make_sends_nothing(in_workspace, author, standin, change, target, message):
    ProlificLink.objects.filter(pk=in_workspace.pk).update(**change)
    with pytest.raises(RecruitmentError, match=message):
        webhooks.subscribe(ProlificLink.objects.get(), target, author)
    assert standin.calls == []
    assert ProlificLink.objects.get().webhook_secret == WEBHOOK_SECRET


def test_the_standin_refuses_other_shapes_as_prolific_does(in_workspace, standin):
    client = studies.client_for(in_workspace)
    with pytest.raises(ProlificError, match="create a secret for the workspace before subscribing"):
        client.create_hook_subscription("submission.status.change", TARGET, WORKSPACE)
    client.create_hook_secret(WORKSPACE)
    with pytest.raises(ProlificError, match=r"unknown event type submission\.changed"):
        client.create_hook_subscription("submission.changed", TARGET, WORKSPACE)
    with pytest.raises(ProlificError, match="must use https"):
        client.create_hook_subscription("submission.status.change", "http://x.example/", WORKSPACE)
    hook, _ = client.create_hook_subscription("submission.status.change", TARGET, WORKSPACE)
    with pytest.raises(ProlificError, match="does not confirm this subscription"):
        client.confirm_hook_subscription(hook.id, "guessed")
    with pytest.raises(ProlificError, match="answered 404"):
        client.delete_hook_subscription("hook424242")
    with pytest.raises(ProlificError, match="unknown field"):
        client._call("POST", "/api/v1/hooks/secrets/", {"workspace_id": WORKSPACE, "name": "x"})


def test_a_refused_confirmation_is_audited_and_the_subscription_kept_to_remove(in_workspace, author, standin):
    original = standin._confirm_hook

    def refuse(body, query, hook):
        raise Refused(400, {"secret": ["does not confirm this subscription"]})

    standin._confirm_hook = refuse
    try:
        with pytest.raises(ProlificError, match="does not confirm"):
            webhooks.subscribe(in_workspace, TARGET, author)
    finally:
        standin._confirm_hook = original
    link = ProlificLink.objects.get()
    assert link.hook_subscription_id in standin.hooks  # kept: it can be removed from the page
    entry = AuditEntry.objects.filter(action="prolific").latest("pk")
    assert entry.details["done"] == ["secret", "subscription"] and "does not confirm" in entry.details["error"]
    webhooks.unsubscribe(link, author)
    assert not standin.hooks


# ---------------------------------------------------------------------------- what the signature does not cover


def test_a_study_linked_after_the_subscription_verifies_the_workspaces_events(
    in_workspace, author, standin, make_project
):
    webhooks.subscribe(in_workspace, TARGET, author)
    later = make_project("nli_label", slug="wave-late")
    studies.save_link(later, author, token=TOKEN, workspace_id=WORKSPACE, name="Later wave")
    assert studies.link_of(later).webhook_secret == standin.hook_secrets[WORKSPACE]["value"]
    arrive(later, "PLATE")
    body = prolific_event("session-PLATE", "AWAITING REVIEW", participant="PLATE")
    answer = post_event(body, standin.event_headers(WORKSPACE, body, "evt-late"))
    assert answer.status_code == 200 and answer.json() == {"taken": True, "applied": True}
    assert ProlificSubmission.objects.get().link == studies.link_of(later)
    # Naming the workspace under another account's token gives no secret (anyone can type a workspace id).
    stranger = make_project("nli_label", slug="stranger")
    studies.save_link(stranger, author, token="another-account", workspace_id=WORKSPACE, name="Stranger")
    assert studies.link_of(stranger).webhook_secret == ""


def test_a_delivery_replayed_under_a_new_event_id_is_refused(in_workspace, author, standin):
    webhooks.subscribe(in_workspace, TARGET, author)
    arrive(in_workspace.project, "PONE")
    body = prolific_event("session-PONE", "AWAITING REVIEW")
    headers = standin.event_headers(WORKSPACE, body, "evt-1")
    assert post_event(body, headers).json() == {"taken": True, "applied": True}
    replay = post_event(body, {**headers, "X-Event-ID": "evt-2"})
    assert replay.status_code == 409
    assert list(WebhookEvent.objects.values_list("event_id", flat=True)) == ["evt-1"]


def test_a_future_or_stale_timestamp_is_refused(in_workspace, author, standin):
    webhooks.subscribe(in_workspace, TARGET, author)
    arrive(in_workspace.project, "PONE")
    body = prolific_event("session-PONE", "APPROVED")
    now = int(time.time())
    future = {**standin.event_headers(WORKSPACE, body, "evt-f"), "X-Timestamp": str(now + 86400 * 365)}
    assert post_event(body, future).status_code == 400
    stale = standin.event_headers(WORKSPACE, body, "evt-s", sent=now - 3600)
    assert post_event(body, stale).status_code == 403
    ahead = standin.event_headers(WORKSPACE, body, "evt-a", sent=now + 3600)
    assert post_event(body, ahead).status_code == 403
    assert not WebhookEvent.objects.exists() and not ProlificSubmission.objects.exists()


def test_another_authors_event_naming_a_submission_never_diverts_its_studys_events(
    in_workspace, author, standin, make_project, make_user
):
    webhooks.subscribe(in_workspace, TARGET, author)
    arrive(in_workspace.project, "PONE")
    # Another lab's author chooses a secret, arrives in their own study under the victim's submission id and
    # posts an event naming it, signed with their secret.
    other = make_user("author2", "author")
    theirs = make_project("nli_label", slug="theirs", owner=other)
    studies.save_link(theirs, other, token="their-token", webhook_secret="chosen-secret", name="Theirs")
    crowd.enter(theirs, {"PROLIFIC_PID": "PTHIEF", "STUDY_ID": "S", "SESSION_ID": "session-PONE"})
    planted = prolific_event("session-PONE", "RETURNED", participant="PTHIEF")
    stamp = str(int(time.time()))
    headers = {
        "X-Prolific-Request-Timestamp": stamp,
        "X-Prolific-Request-Signature": sign("chosen-secret", stamp, planted),
        "X-Event-ID": "evt-planted",
    }
    assert post_event(planted, headers).json() == {"taken": True, "applied": True}
    # Prolific's genuine event still reaches the victim's study.
    body = prolific_event("session-PONE", "AWAITING REVIEW")
    answer = post_event(body, standin.event_headers(WORKSPACE, body, "evt-genuine"))
    assert answer.status_code == 200 and answer.json() == {"taken": True, "applied": True}
    victim = ProlificSubmission.objects.get(link=in_workspace)
    assert (victim.participant_id, victim.status) == ("PONE", "AWAITING REVIEW")


def test_when_two_studies_could_hold_a_submission_prolific_is_asked(in_workspace, author, standin, make_project):
    webhooks.subscribe(in_workspace, TARGET, author)
    studies.create_draft(in_workspace, SITE, author)
    sibling = make_project("nli_label", slug="sibling")
    studies.save_link(sibling, author, token=TOKEN, workspace_id=WORKSPACE, name="Sibling", reward_cents=150)
    studies.create_draft(studies.link_of(sibling), SITE, author)
    sibling.refresh_from_db()
    submission = standin.add_submission(in_workspace.prolific_study_id, "PONE", "ACTIVE")
    for project in (in_workspace.project, sibling):  # a SESSION_ID is the participant's to type
        study_id = crowd.platform_study(project, "prolific").study_id
        crowd.enter(project, {"PROLIFIC_PID": "PONE", "STUDY_ID": study_id, "SESSION_ID": submission})
    body = prolific_event(submission, "AWAITING REVIEW")
    assert post_event(body, standin.event_headers(WORKSPACE, body, "evt-both")).json()["taken"] is True
    assert ProlificSubmission.objects.get().link == in_workspace
    assert standin.calls_to("GET", f"/api/v1/submissions/{submission}/")


@pytest.mark.parametrize(
    "header, value",
    [
        ("X-Prolific-Request-Signature", "sïgnature"),
        ("X-Prolific-Request-Signature", "A" * 5000),
        ("X-Prolific-Request-Timestamp", "9" * 40),
        ("X-Prolific-Request-Timestamp", "-5"),
        ("X-Event-ID", "évènement"),
        ("X-Event-ID", "e" * 1000),
        ("X-Timestamp", "9" * 40),
        ("X-Timestamp", "tomorrow"),
    ],
)
def test_hostile_headers_are_refused_with_a_4xx(in_workspace, author, standin, header, value):
    webhooks.subscribe(in_workspace, TARGET, author)
    body = prolific_event("session-PONE", "APPROVED")
    response = post_event(body, {**standin.event_headers(WORKSPACE, body, "evt-h"), header: value})
    assert 400 <= response.status_code < 500
    assert not WebhookEvent.objects.exists()


def test_deeply_nested_or_huge_bodies_are_refused_with_a_4xx(on_prolific):
    nested = b"[" * 200_000 + b"]" * 200_000
    assert deliver(nested).status_code in (400, 413)
    deep_but_small = b'{"a":' * 5000 + b"1" + b"}" * 5000
    assert deliver(deep_but_small).status_code == 400
    assert deliver(b"not json").status_code == 400
    assert not WebhookEvent.objects.exists()
