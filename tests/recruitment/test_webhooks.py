"""Prolific's submission status events at POST /recruitment/webhooks/prolific/: signed and recent events
update the settle table once; a bad signature or a stale timestamp is refused (403) and stores nothing; a
repeated event id changes nothing; an event older than what is known does not move a submission back."""

import json
import time

import pytest
from django.test import Client

from recruitment.models import ProlificSubmission, WebhookEvent
from recruitment.services import studies
from recruitment.services.webhooks import sign
from tests.recruitment.conftest import SITE, WEBHOOK_SECRET

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
        {"timestamp": int(time.time()) - 301},
        {"timestamp": int(time.time()) + 600},
    ],
    ids=["wrong secret", "no signature", "stale", "from the future"],
)
def test_a_bad_signature_or_timestamp_is_refused_and_stores_nothing(on_prolific, tamper):
    response = deliver(event(on_prolific, "ev-9", "APPROVED", "2026-03-01T10:00:00Z"), **tamper)
    assert response.status_code == 403
    assert not WebhookEvent.objects.exists() and not ProlificSubmission.objects.exists()


def test_a_changed_body_does_not_pass_with_the_old_signature(on_prolific):
    stamp = str(int(time.time()))
    signed = event(on_prolific, "ev-3", "AWAITING REVIEW", "2026-03-01T10:00:00Z")
    forged = event(on_prolific, "ev-3", "APPROVED", "2026-03-01T10:00:00Z")
    assert deliver(forged, timestamp=int(stamp), signature=sign(WEBHOOK_SECRET, stamp, signed)).status_code == 403
    assert not WebhookEvent.objects.exists()


def test_an_event_for_a_study_not_linked_here_is_refused(on_prolific):
    body = json.dumps({"event_id": "x", "study_id": "someone-elses", "status": "APPROVED"}).encode()
    assert deliver(body).status_code == 403
    assert Client().get(URL).status_code == 405
