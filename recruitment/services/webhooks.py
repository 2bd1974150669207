"""Prolific's hook events, and the subscription that makes Prolific send them.

Receiving (docs.prolific.com, API reference > Webhooks): each request is signed with the workspace's hook
secret (base64 HMAC-SHA256 of the request timestamp followed by the body, in X-Prolific-Request-Signature;
the timestamp, UNIX seconds, in X-Prolific-Request-Timestamp). The event's id comes in the X-Event-ID header
and the time it was sent in X-Timestamp; a submission.status.change body holds resource_id (the submission),
event_type, participant_id and status, and no study id: the study is found from the submission (the settle
table, else the crowd session whose Prolific SESSION_ID it is). A verified event updates the settle table; an
event id is taken once, and an event older than what is known of its submission changes nothing.

Subscribing (the official client's CreateHookSecret, CreateHookSubscription, ConfirmHookSubscription,
DeleteHookSubscription): a new signing secret for the study's workspace (it replaces the workspace's one
secret, so every study here in that workspace gets it), then a subscription of the workspace's submission
status changes to this app's webhook URL, confirmed with the one-time X-Hook-Secret Prolific answered."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import time
from datetime import UTC, datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.dateparse import parse_datetime

from annotation.models import CrowdSession
from annotation.services import audit
from common import request_json
from recruitment.models import ProlificLink, ProlificSubmission, WebhookEvent
from recruitment.prolific import SUBMISSION_STATUS_EVENT, ProlificError
from recruitment.secrets import SecretUnreadable
from recruitment.services import settle
from recruitment.services.studies import PROLIFIC, RecruitmentError, client_for

logger = logging.getLogger(__name__)
NOT_TAKEN = "no study here takes events for this Prolific study"


class WebhookRefused(Exception):
    """Not taken in (bad signature, stale timestamp, unknown study): nothing was stored."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def _submission_id(payload: dict) -> str:
    return str(payload.get("resource_id") or payload.get("submission_id") or "")


def _link_for(payload: dict) -> ProlificLink | None:
    study_id = str(payload.get("study_id") or "")
    if study_id:
        link = ProlificLink.objects.filter(prolific_study_id=study_id).exclude(prolific_study_id="").first()
    elif submission_id := _submission_id(payload):
        # Prolific's event names the submission only: a submission pulled before, else the participant's
        # arrival here (its SESSION_ID is the submission id).
        known = ProlificSubmission.objects.filter(submission_id=submission_id).select_related("link").first()
        arrival = CrowdSession.objects.filter(platform=CrowdSession.Platform.PROLIFIC, session_id=submission_id)
        project_id = known.link.project_id if known else arrival.values_list("project_id", flat=True).first()
        link = ProlificLink.objects.filter(project_id=project_id).first() if project_id else None
    else:
        link = None
    if link is None:
        return None
    try:
        secret = link.webhook_secret
    except SecretUnreadable as error:
        # The sender is told no more than for a study with no secret; the operator reads why in the log
        # (and on the study's Prolific page).
        logger.warning("Prolific event refused for the study of project %s: %s", link.project_id, error)
        secret = ""
    if not secret:
        raise WebhookRefused(NOT_TAKEN)
    return link


def _verified(link: ProlificLink, body: bytes, signature: str, timestamp: str, now: float) -> None:
    if not hmac.compare_digest(sign(link.webhook_secret, timestamp, body), signature or ""):
        raise WebhookRefused("the signature does not match")
    _recent(timestamp, now)


def _signed_by_a_workspace_here(body: bytes, signature: str, timestamp: str, now: float) -> bool:
    """Whether a secret stored here signed this delivery: an event of another study of a workspace we subscribed
    to (a subscription covers the whole workspace)."""
    for link in ProlificLink.objects.exclude(webhook_secret_encrypted=""):
        try:
            secret = link.webhook_secret
        except SecretUnreadable:
            continue
        if secret and hmac.compare_digest(sign(secret, timestamp, body), signature or ""):
            _recent(timestamp, now)
            return True
    return False


def _recent(timestamp: str, now: float) -> None:
    try:
        sent = int(timestamp)
    except ValueError:
        raise WebhookRefused("the timestamp is not a number of seconds") from None
    if abs(now - sent) > settings.PROLIFIC_WEBHOOK_TOLERANCE_SECONDS:
        raise WebhookRefused("the timestamp is too far from now")


def receive(
    body: bytes, signature: str, timestamp: str, now: float | None = None, event_id: str = "", sent_at: str = ""
) -> WebhookEvent | None:
    """Take one delivery in (`event_id` and `sent_at`: the X-Event-ID and X-Timestamp headers). Returns the
    stored event, or None when this event id was taken before or names a submission of no study here (signed
    by a workspace secret stored here: another study of a subscribed workspace)."""
    try:
        payload = request_json.loads(body)
    except ValueError:  # not JSON, or nested too deeply
        raise WebhookRefused("the body is not JSON") from None
    if not isinstance(payload, dict):
        raise WebhookRefused("the body is not a JSON object")
    now = time.time() if now is None else now
    link = _link_for(payload)
    if link is None:
        # Answered 200 "not taken", not refused: Prolific retries refused deliveries and may disable the
        # workspace's subscription, which also carries this app's studies.
        if _signed_by_a_workspace_here(body, signature, timestamp, now):
            return None
        raise WebhookRefused(NOT_TAKEN)
    _verified(link, body, signature, timestamp, now)
    event_id = event_id or str(payload.get("event_id") or payload.get("id") or "")
    if not event_id:
        raise WebhookRefused("the event has no id")
    if WebhookEvent.objects.filter(event_id=event_id).exists():
        return None
    occurred = (
        (datetime.fromtimestamp(int(sent_at), tz=UTC) if sent_at.isdigit() else None)
        or parse_datetime(str(payload.get("datetime_created") or ""))
        or datetime.fromtimestamp(int(timestamp), tz=UTC)
    )
    submission_id = _submission_id(payload)
    status = str(payload.get("status") or "")
    try:
        with transaction.atomic():
            event = WebhookEvent.objects.create(
                event_id=event_id,
                link=link,
                event_type=str(payload.get("event_type") or "")[:100],
                submission_id=submission_id,
                status=status,
                occurred_at=occurred,
            )
            if submission_id and status:
                event.applied = settle.record_status(
                    link, submission_id, status, occurred, participant_id=str(payload.get("participant_id") or "")
                )
                event.save(update_fields=["applied"])
    except IntegrityError:  # the same event delivered twice at once
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
        sharing = list(ProlificLink.objects.filter(workspace_id=link.workspace_id).exclude(pk=link.pk))
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
