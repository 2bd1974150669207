"""Prolific's hook events: signed with the workspace's hook secret (base64 HMAC-SHA256 of the request
timestamp followed by the body, in X-Prolific-Request-Signature; the timestamp, UNIX seconds, in
X-Prolific-Request-Timestamp). A verified submission status event updates the settle table; an event id
is taken once, and an event older than what is known of its submission changes nothing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from datetime import UTC, datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.dateparse import parse_datetime

from recruitment.models import ProlificLink, WebhookEvent
from recruitment.secrets import SecretUnreadable
from recruitment.services import settle

logger = logging.getLogger(__name__)
NOT_TAKEN = "no study here takes events for this Prolific study"


class WebhookRefused(Exception):
    """Not taken in (bad signature, stale timestamp, unknown study): nothing was stored."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def _link_for(payload: dict) -> ProlificLink:
    study_id = str(payload.get("study_id") or "")
    link = (
        ProlificLink.objects.filter(prolific_study_id=study_id).exclude(prolific_study_id="").first()
        if study_id
        else None
    )
    if link is None:
        raise WebhookRefused(NOT_TAKEN)
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
    try:
        sent = int(timestamp)
    except ValueError:
        raise WebhookRefused("the timestamp is not a number of seconds") from None
    if abs(now - sent) > settings.PROLIFIC_WEBHOOK_TOLERANCE_SECONDS:
        raise WebhookRefused("the timestamp is too far from now")


def receive(body: bytes, signature: str, timestamp: str, now: float | None = None) -> WebhookEvent | None:
    """Take one delivery in. Returns the stored event, or None when this event id was taken before."""
    try:
        payload = json.loads(body)
    except ValueError:
        raise WebhookRefused("the body is not JSON") from None
    if not isinstance(payload, dict):
        raise WebhookRefused("the body is not a JSON object")
    link = _link_for(payload)
    _verified(link, body, signature, timestamp, time.time() if now is None else now)
    event_id = str(payload.get("event_id") or payload.get("id") or "")
    if not event_id:
        raise WebhookRefused("the event has no id")
    if WebhookEvent.objects.filter(event_id=event_id).exists():
        return None
    occurred = parse_datetime(str(payload.get("datetime_created") or "")) or datetime.fromtimestamp(
        int(timestamp), tz=UTC
    )
    submission_id = str(payload.get("resource_id") or payload.get("submission_id") or "")
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
