"""Prolific's hook events, and the subscription that makes Prolific send them.

Receiving (docs.prolific.com, API reference > Webhooks): each request is signed with the workspace's hook
secret (base64 HMAC-SHA256 of the request timestamp followed by the body, in X-Prolific-Request-Signature;
the timestamp, UNIX seconds, in X-Prolific-Request-Timestamp). The event's id comes in the X-Event-ID header
and the time it was sent in X-Timestamp; a submission.status.change body holds resource_id (the submission),
event_type, participant_id and status, and no study id: the study is found from the submission, among the
studies whose secret signed the delivery only (the settle table, else the crowd session whose Prolific
SESSION_ID it is; Prolific is asked when several could hold it). A verified event updates the settle table; an
event id is taken once, and an event older than what is known of its submission changes nothing.

What the signature does not cover (docs.prolific.com, Webhooks > Verifying: the timestamp and the body only)
is bounded here: a signed delivery is taken once whatever its X-Event-ID (a replay under a new id is refused),
its timestamp must be within PROLIFIC_WEBHOOK_TOLERANCE_SECONDS of now, and X-Timestamp may not be later than
the signed time. Malformed headers and bodies are refused with 400, never read into an error; so is a signed
event of another type, or whose status is none of Prolific's submission statuses (nothing of it stored).

Subscribing (the official client's CreateHookSecret, CreateHookSubscription, ConfirmHookSubscription,
DeleteHookSubscription): a new signing secret for the study's workspace (it replaces the workspace's one
secret, so every study here in that workspace under the same API token gets it, and so does one linked later),
then a subscription of the workspace's submission status changes to this app's webhook URL, confirmed with the
one-time X-Hook-Secret Prolific answered."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import time
from datetime import UTC, datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.dateparse import parse_datetime

from annotation.models import CrowdSession
from annotation.services import audit
from common import request_json
from recruitment.models import ProlificLink, ProlificSubmission, WebhookEvent
from recruitment.prolific import SUBMISSION_STATUS_EVENT, SUBMISSION_STATUSES, ProlificError
from recruitment.secrets import SecretUnreadable
from recruitment.services import settle
from recruitment.services.studies import PROLIFIC, RecruitmentError, client_for, same_account_links

logger = logging.getLogger(__name__)
NOT_TAKEN = "no study here takes events for this Prolific study"
# What each header may hold: anything else is refused (400) before any work, never read into a 500.
HEADER_SHAPES = {
    "X-Prolific-Request-Signature": re.compile(r"[A-Za-z0-9+/=]{1,200}"),
    "X-Prolific-Request-Timestamp": re.compile(r"\d{1,12}"),
    "X-Event-ID": re.compile(r"[!-~]{1,100}"),  # printable ASCII
    "X-Timestamp": re.compile(r"\d{1,12}"),
}


class WebhookRefused(Exception):
    """Not taken in (malformed, unsigned, stale, replayed): nothing was stored. `status` is the HTTP answer."""

    def __init__(self, message: str, status: int = 403):
        super().__init__(message)
        self.status = status


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def check_headers(headers: dict[str, str]) -> None:
    """Each header given has its shape (the two signature headers are required)."""
    for name, shape in HEADER_SHAPES.items():
        value = headers.get(name, "")
        if not value and name.startswith("X-Prolific"):
            raise WebhookRefused(f"{name}: missing", 400)
        if value and not shape.fullmatch(value):
            raise WebhookRefused(f"{name}: not a value Prolific sends", 400)


def check_event(payload: dict) -> None:
    """The event is one this app subscribes to, with a status Prolific documents: anything else would be
    written into the settle table as if Prolific had said it, so it is refused (400) before anything is stored."""
    if payload.get("event_type") != SUBMISSION_STATUS_EVENT:
        raise WebhookRefused(f"event_type: not {SUBMISSION_STATUS_EVENT}", 400)
    if payload.get("status") not in SUBMISSION_STATUSES:
        raise WebhookRefused(
            f"status: not one of Prolific's submission statuses ({', '.join(SUBMISSION_STATUSES)})", 400
        )


def _submission_id(payload: dict) -> str:
    return str(payload.get("resource_id") or payload.get("submission_id") or "")


def _links_verifying(body: bytes, signature: str, timestamp: str) -> list[ProlificLink]:
    """The linked studies whose stored secret signed this delivery (every study of one Prolific account's
    workspace shares the workspace's secret; a secret an author chose signs for their studies only)."""
    found = []
    for link in ProlificLink.objects.exclude(webhook_secret_encrypted="").select_related("project"):
        try:
            secret = link.webhook_secret
        except SecretUnreadable as error:
            # The sender is told no more than for a study with no secret; the operator reads why in the log
            # (and on the study's Prolific page).
            logger.warning("Prolific event not checked for the study of project %s: %s", link.project_id, error)
            continue
        if secret and hmac.compare_digest(sign(secret, timestamp, body), signature):
            found.append(link)
    return found


def _route(payload: dict, verifying: list[ProlificLink]) -> ProlificLink | None:
    """The study the event is about, among those whose secret signed it: the Prolific study the body names,
    else the one holding the submission (pulled from Prolific, or the participant's arrival: its SESSION_ID is
    the submission id). Nothing another study's author posted counts: only the signing studies are searched.
    Where several could hold it (a SESSION_ID is the participant's to type), Prolific is asked whose it is."""
    study_id = str(payload.get("study_id") or "")
    submission_id = _submission_id(payload)
    if study_id:
        candidates = [link for link in verifying if link.prolific_study_id == study_id]
    elif submission_id:
        pulled = set(
            ProlificSubmission.objects.filter(link__in=verifying, submission_id=submission_id).values_list(
                "link_id", flat=True
            )
        )
        arrived = set(
            CrowdSession.objects.filter(
                platform=CrowdSession.Platform.PROLIFIC,
                session_id=submission_id,
                project_id__in=[link.project_id for link in verifying],
            ).values_list("project_id", flat=True)
        )
        candidates = [link for link in verifying if link.pk in pulled or link.project_id in arrived]
    else:
        candidates = []
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    return _asked_prolific(candidates, submission_id)


def _asked_prolific(candidates: list[ProlificLink], submission_id: str) -> ProlificLink | None:
    for link in candidates:
        try:
            client = client_for(link)
            try:
                study_id = client.get_submission(submission_id).study_id
            finally:
                client.close()
        except (ProlificError, RecruitmentError):
            continue
        owner = [other for other in candidates if other.prolific_study_id and other.prolific_study_id == study_id]
        return owner[0] if owner else None
    return None


def _signed_at(timestamp: str, now: float) -> int:
    sent = int(timestamp)  # its shape was checked: digits
    if abs(now - sent) > settings.PROLIFIC_WEBHOOK_TOLERANCE_SECONDS:
        raise WebhookRefused("the timestamp is too far from now")
    return sent


def _occurred(payload: dict, sent_at: str, signed_at: int) -> datetime:
    """When Prolific says the status was set: X-Timestamp, else the body's datetime_created, else the signed
    request time. X-Timestamp is not signed (Prolific signs the request timestamp and the body only), so it
    may not be later than the signed time: a future one would make the event outrank every later one."""
    signed = datetime.fromtimestamp(signed_at, tz=UTC)
    if sent_at:
        if int(sent_at) > signed_at:
            raise WebhookRefused("X-Timestamp: later than the signed request time", 400)
        return datetime.fromtimestamp(int(sent_at), tz=UTC)
    try:
        created = parse_datetime(str(payload.get("datetime_created") or ""))
    except ValueError:
        raise WebhookRefused("datetime_created: not a date and time", 400) from None
    if created is None:
        return signed
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return min(created, signed)


def receive(
    body: bytes, signature: str, timestamp: str, now: float | None = None, event_id: str = "", sent_at: str = ""
) -> WebhookEvent | None:
    """Take one delivery in (`event_id` and `sent_at`: the X-Event-ID and X-Timestamp headers). Returns the
    stored event, or None when this event id was taken before or names a submission of no study here (signed
    by a secret stored here: another study of a subscribed workspace).

    Prolific signs the request timestamp and the body, not X-Event-ID nor X-Timestamp: a captured delivery
    sent again under a new event id carries the same signature, so a signature is taken once (within the
    timestamp window; outside it the delivery is refused as stale)."""
    check_headers(
        {
            "X-Prolific-Request-Signature": signature,
            "X-Prolific-Request-Timestamp": timestamp,
            "X-Event-ID": event_id,
            "X-Timestamp": sent_at,
        }
    )
    try:
        payload = request_json.loads(body)
    except ValueError:  # not JSON, or nested too deeply
        raise WebhookRefused("the body is not JSON (or is nested too deeply)", 400) from None
    if not isinstance(payload, dict):
        raise WebhookRefused("the body is not a JSON object", 400)
    signed_at = _signed_at(timestamp, time.time() if now is None else now)
    verifying = _links_verifying(body, signature, timestamp)
    if not verifying:
        raise WebhookRefused(NOT_TAKEN)
    check_event(payload)  # after the signature: an unsigned request learns nothing of what would be taken
    event_id = event_id or str(payload.get("event_id") or payload.get("id") or "")
    if not event_id or len(event_id) > 100:
        raise WebhookRefused("the event has no id (X-Event-ID)", 400)
    if WebhookEvent.objects.filter(event_id=event_id).exists():
        return None
    delivery = hashlib.sha256(f"{timestamp}:{signature}".encode()).hexdigest()
    if WebhookEvent.objects.filter(delivery=delivery).exists():
        raise WebhookRefused("this signed delivery was taken before under another event id", 409)
    # Answered 200 "not taken" when no study here holds it, not refused: Prolific retries refused deliveries
    # and may disable the workspace's subscription, which also carries this app's studies.
    link = _route(payload, verifying)
    if link is None:
        return None
    occurred = _occurred(payload, sent_at, signed_at)
    submission_id = _submission_id(payload)
    status = payload["status"]
    try:
        with transaction.atomic():
            event = WebhookEvent.objects.create(
                event_id=event_id,
                delivery=delivery,
                link=link,
                event_type=SUBMISSION_STATUS_EVENT,
                submission_id=submission_id[:64],
                status=status,
                occurred_at=occurred,
            )
            if submission_id:
                event.applied = settle.record_status(
                    link,
                    submission_id[:64],
                    status,
                    occurred,
                    participant_id=str(payload.get("participant_id") or "")[:100],
                )
                event.save(update_fields=["applied"])
    except IntegrityError:  # the same event (or delivery) taken at the same moment
        return None
    return event


# ---------------------------------------------------------------------------- subscribing


def subscribe(link: ProlificLink, target_url: str, by) -> ProlificLink:
    """Make Prolific send the workspace's submission status changes to `target_url` (this app's webhook, an
    absolute https address), signed with a new secret stored here, encrypted. The audit entry names the
    subscription, the event and the target, never a secret."""
    if link.hook_subscription_id:
        raise RecruitmentError(
            f"already subscribed (subscription {link.hook_subscription_id}): remove it first to subscribe again"
        )
    if not link.workspace_id:
        raise RecruitmentError("workspace_id: the Prolific workspace whose events to subscribe")
    if not target_url.startswith("https://"):
        raise RecruitmentError(
            f"Prolific sends events only to a public https:// address; this app's webhook is {target_url}"
        )
    client = client_for(link)
    steps: list[str] = []
    try:
        if SUBMISSION_STATUS_EVENT not in client.hook_event_types():
            raise RecruitmentError(f"Prolific offers no {SUBMISSION_STATUS_EVENT} event to this account")
        secret = client.create_hook_secret(link.workspace_id)
        if not secret:
            raise RecruitmentError("Prolific answered no hook secret")
        # Prolific has replaced the workspace's secret: every study here in that workspace signs with it now.
        sharing = same_account_links(link)
        for other in [link, *sharing]:
            other.webhook_secret = secret
            other.save(update_fields=["webhook_secret_encrypted"])
        steps.append("secret")
        hook, confirm = client.create_hook_subscription(SUBMISSION_STATUS_EVENT, target_url, link.workspace_id)
        link.hook_subscription_id = hook.id
        link.save(update_fields=["hook_subscription_id"])  # kept at once: an unconfirmed one can be removed
        steps.append("subscription")
        if not confirm:
            raise RecruitmentError(f"Prolific gave no X-Hook-Secret to confirm subscription {hook.id}")
        client.confirm_hook_subscription(hook.id, confirm)
        steps.append("confirmed")
    except (ProlificError, RecruitmentError) as error:
        audit.record(by, PROLIFIC, link.project, operation="subscribe", done=steps, error=str(error)[:300])
        raise
    finally:
        client.close()
    audit.record(
        by,
        PROLIFIC,
        link.project,
        operation="subscribe",
        done=steps,
        subscription=link.hook_subscription_id,
        event_type=SUBMISSION_STATUS_EVENT,
        target_url=target_url,
        workspace_id=link.workspace_id,
        secret_shared_with=len(sharing),
    )
    return link


def unsubscribe(link: ProlificLink, by) -> ProlificLink:
    """Delete the subscription on Prolific (one already gone there counts as removed). The secret stays: the
    workspace's other subscriptions, and events already on their way, are signed with it."""
    subscription = link.hook_subscription_id
    if not subscription:
        raise RecruitmentError("no subscription to remove")
    client = client_for(link)
    gone = False
    try:
        client.delete_hook_subscription(subscription)
    except ProlificError as error:
        if error.status != 404:
            audit.record(
                by, PROLIFIC, link.project, operation="unsubscribe", subscription=subscription, error=str(error)[:300]
            )
            raise
        gone = True
    finally:
        client.close()
    link.hook_subscription_id = ""
    link.save(update_fields=["hook_subscription_id"])
    audit.record(by, PROLIFIC, link.project, operation="unsubscribe", subscription=subscription, already_gone=gone)
    return link
