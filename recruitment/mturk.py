"""MTurk's requester API through boto3: HITs whose ExternalQuestion is a study's entry link, approvals,
rejections, bonuses paid once, and a HIT's assignments page by page.

MTurk stopped taking new requesters in July 2026 and is kept in maintenance; Prolific is the main platform.
Calls go to the sandbox unless MTURK_SANDBOX is false. The keys come from the settings (or boto3's own chain)
and go to boto3 only: no message, audit detail or dry-run line carries them. The audit log names a
participant by their pseudonym (`w<account>`), never by MTurk worker or assignment ID, so that erasing them
(annotation.services.crowd.participants) leaves no ID behind.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any
from xml.sax.saxutils import escape

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, ParamValidationError
from django.conf import settings
from django.utils.crypto import salted_hmac

from annotation.models import AuditEntry, CrowdSession, Project
from annotation.services import access, audit
from annotation.services.crowd import crowd

SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
REGION = "us-east-1"  # the requester API lives in this one region
EXTERNAL_QUESTION_SCHEMA = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
)
AUDIT_ACTION = AuditEntry.Action.MTURK
# MTurk's own patterns (botocore checks lengths only, so a bad ID would otherwise travel to MTurk).
ASSIGNMENT_ID = re.compile(r"[A-Z0-9]{1,64}")
HIT_ID = ASSIGNMENT_ID
WORKER_ID = re.compile(r"A[A-Z0-9]{1,63}")
MONEY = re.compile(r"[0-9]+(\.[0-9]{1,2})?")
FEEDBACK_LIMIT = 1024  # MTurk's limit on RequesterFeedback
TOKEN_SALT = "recruitment.mturk.unique-request-token"
CENT = Decimal("0.01")
PAGE_SIZE = 100  # the most ListAssignmentsForHIT returns at once


class MTurkError(ValueError):
    """A request that cannot be sent, or that MTurk refused; the message names the field or MTurk's reason."""


@dataclass(frozen=True)
class HitRequest:
    """What a HIT offers: its listing, pay, size and timing. Money in US dollars, times in seconds."""

    title: str
    description: str
    reward: Decimal
    max_assignments: int
    lifetime_seconds: int
    assignment_duration_seconds: int
    auto_approval_delay_seconds: int = 3 * 24 * 3600  # workers paid within 3 days (MTurk would wait 30)
    keywords: str = ""
    qualification_requirements: tuple[dict, ...] = ()

    def key(self, project: Project) -> str:
        """The default key of its UniqueRequestToken: the same study and offer is the same HIT."""
        reward = money(self.reward, "the reward")
        return f"{project.slug}:{self.title}:{reward}:{self.max_assignments}:{self.lifetime_seconds}"


def endpoint() -> str:
    return SANDBOX_ENDPOINT if settings.MTURK_SANDBOX else PRODUCTION_ENDPOINT


def external_question(url: str, frame_height: int) -> str:
    """The ExternalQuestion XML MTurk shows in its frame: `url` (MTurk appends assignmentId, hitId,
    turkSubmitTo and workerId) in a frame `frame_height` pixels high (0: the worker's whole window)."""
    if not url.startswith("https://"):
        raise MTurkError(f"the entry URL must use https (MTurk frames nothing else): {url!r}")
    if frame_height < 0:
        raise MTurkError(f"the frame height must be 0 (the whole window) or more pixels, not {frame_height}")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_SCHEMA}">'
        f"<ExternalURL>{escape(url)}</ExternalURL><FrameHeight>{frame_height}</FrameHeight>"
        "</ExternalQuestion>"
    )


def money(value, what: str) -> Decimal:
    """A positive amount of US dollars with at most two decimals, as MTurk takes it."""
    text = str(value).strip()
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise MTurkError(f"{what} {text!r} is not an amount of dollars such as 0.50") from None
    if not MONEY.fullmatch(text) or amount <= 0:
        raise MTurkError(f"{what} {text!r} must be more than 0 with at most two decimals, such as 0.50")
    return amount.quantize(CENT)  # 0.5 and 0.50 are one amount, also in a bonus's key


def unique_request_token(operation: str, key: str) -> str:
    """MTurk's UniqueRequestToken for `key`: the same key gives the same token in every process, so a retry
    is refused by MTurk (for 24 hours) instead of done twice. Keyed with SECRET_KEY: the token reveals no ID."""
    return salted_hmac(TOKEN_SALT, f"{operation}:{key}", algorithm="sha256").hexdigest()  # 64 characters


def requester_client(endpoint_url: str | None = None, *, read_timeout: float = 60):
    """A boto3 client of the requester API, on the sandbox or production endpoint by MTURK_SANDBOX. botocore
    retries a call that timed out, with the same UniqueRequestToken."""
    import boto3  # loaded on use: web processes that never call MTurk do not load boto3
    from botocore.config import Config

    keys = {}
    if settings.MTURK_ACCESS_KEY_ID:  # otherwise boto3's own chain (AWS_* variables, ~/.aws, an instance role)
        keys = {
            "aws_access_key_id": settings.MTURK_ACCESS_KEY_ID,
            "aws_secret_access_key": settings.MTURK_SECRET_ACCESS_KEY,
        }
    return boto3.session.Session().client(
        "mturk",
        region_name=REGION,
        endpoint_url=endpoint_url or endpoint(),
        config=Config(read_timeout=read_timeout, retries={"mode": "standard", "max_attempts": 3}),
        **keys,
    )


def dry_run_client(echo: Callable[[str], Any]):
    """A client that checks every call against MTurk's service model as a real one does, then prints the
    request it would send (URL, operation, JSON body) instead of sending it. Nothing is signed: no keys."""
    import boto3
    from botocore.awsrequest import AWSResponse

    client = boto3.session.Session().client("mturk", region_name=REGION, endpoint_url=endpoint())

    def print_instead_of_sending(model, params, **_):
        echo(f"POST {params['url']} {params['headers']['X-Amz-Target']}\n{params['body'].decode()}")
        return AWSResponse(params["url"], 200, {}, None), {}

    client.meta.events.register("before-call.mturk.*", print_instead_of_sending)
    return client


def _refusal(operation: str, exc: BotoCoreError | ClientError) -> MTurkError:
    if isinstance(exc, ParamValidationError):
        return MTurkError(f"{operation}: {exc.kwargs.get('report', exc)}")
    if isinstance(exc, NoCredentialsError):
        return MTurkError(f"{operation}: no MTurk keys; set MTURK_ACCESS_KEY_ID and MTURK_SECRET_ACCESS_KEY")
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return MTurkError(f"MTurk refused {operation}: {error.get('Message') or error.get('Code')}")
    return MTurkError(f"{operation} did not reach MTurk: {exc}")


def _already_processed(exc: BotoCoreError | ClientError) -> bool:
    """MTurk's answer to a UniqueRequestToken it has seen in the last 24 hours: a RequestError whose message
    names the idempotency token."""
    if not isinstance(exc, ClientError):
        return False
    message = exc.response.get("Error", {}).get("Message", "").lower()
    return "idempotency token" in message or "uniquerequesttoken" in message


class Requester:
    """MTurk operations done by one actor (None: the command line). Each call is checked before it is sent;
    each one MTurk accepted is written to the audit log. With dry_run the requests are printed, not sent."""

    def __init__(self, actor=None, *, client=None, dry_run: bool = False, echo: Callable[[str], Any] = print):
        self.actor = actor
        self.dry_run = dry_run
        self.client = client if client is not None else dry_run_client(echo) if dry_run else requester_client()

    # ------------------------------------------------------------------------------------------- HITs

    def create_hit(self, project: Project, offer: HitRequest, site: str, key: str = "") -> str | None:
        """Create a HIT whose ExternalQuestion is the study's entry link on `site` (this server's public
        https address); its HITId (None on a dry run). The same study and offer (or `key`) make one HIT
        however often this is retried."""
        if CrowdSession.Platform.MTURK not in access.admitted_platforms(project.audience):
            raise MTurkError(
                f"study {project.slug} takes no MTurk arrivals (its audience: {project.get_audience_display()})"
            )
        if not self.dry_run and project.status != Project.Status.PUBLISHED:
            raise MTurkError(f"study {project.slug} is {project.status}: publish it before workers are sent to it")
        if offer.max_assignments < 1:
            raise MTurkError("assignments must be 1 or more")
        token = unique_request_token("CreateHIT", key or offer.key(project))
        earlier = self._accepted("CreateHIT", token)
        if earlier is not None:
            raise MTurkError(
                f"HIT {earlier.details.get('hit')} was already created for {project.slug} with this offer "
                f"on {earlier.created_at:%Y-%m-%d %H:%M}; give another key to create one more"
            )
        params: dict[str, Any] = {
            "Title": offer.title,
            "Description": offer.description,
            "Reward": str(money(offer.reward, "the reward")),
            "MaxAssignments": offer.max_assignments,
            "LifetimeInSeconds": offer.lifetime_seconds,
            "AssignmentDurationInSeconds": offer.assignment_duration_seconds,
            "AutoApprovalDelayInSeconds": offer.auto_approval_delay_seconds,
            "Question": external_question(
                crowd.entry_url(project, site, CrowdSession.Platform.MTURK), settings.MTURK_FRAME_HEIGHT
            ),
            "RequesterAnnotation": project.slug,
            "UniqueRequestToken": token,
        }
        if offer.keywords:
            params["Keywords"] = offer.keywords
        if offer.qualification_requirements:
            params["QualificationRequirements"] = list(offer.qualification_requirements)
        response = self._send("CreateHIT", self.client.create_hit, params)
        if self.dry_run:
            return None
        hit_id = response["HIT"]["HITId"]
        self._record(
            project,
            "CreateHIT",
            token=token,
            hit=hit_id,
            reward=params["Reward"],
            assignments=offer.max_assignments,
            lifetime_seconds=offer.lifetime_seconds,
        )
        return hit_id

    def assignments(self, hit_id: str, statuses: tuple[str, ...] = ()) -> Iterator[dict]:
        """Every assignment of a HIT (optionally only those in `statuses`: Submitted, Approved, Rejected),
        fetched PAGE_SIZE at a time."""
        _check(HIT_ID, hit_id, "HIT ID")
        query: dict[str, Any] = {"HITId": hit_id, "PaginationConfig": {"PageSize": PAGE_SIZE}}
        if statuses:
            query["AssignmentStatuses"] = list(statuses)
        try:
            for page in self.client.get_paginator("list_assignments_for_hit").paginate(**query):
                yield from page.get("Assignments", [])
        except (BotoCoreError, ClientError) as exc:
            raise _refusal("ListAssignmentsForHIT", exc) from exc

    # ------------------------------------------------------------------------------------ assignments

    def approve(self, assignment_id: str, feedback: str = "") -> None:
        _check(ASSIGNMENT_ID, assignment_id, "assignment ID")
        params = {"AssignmentId": assignment_id}
        if feedback.strip():
            params["RequesterFeedback"] = _feedback(feedback)
        self._send("ApproveAssignment", self.client.approve_assignment, params)
        self._record_for(assignment_id, "", "ApproveAssignment", feedback=params.get("RequesterFeedback", ""))

    def reject(self, assignment_id: str, feedback: str) -> None:
        """Reject with the message MTurk shows the worker (required: a rejection says why)."""
        _check(ASSIGNMENT_ID, assignment_id, "assignment ID")
        if not feedback.strip():
            raise MTurkError("a rejection needs feedback telling the worker why")
        params = {"AssignmentId": assignment_id, "RequesterFeedback": _feedback(feedback)}
        self._send("RejectAssignment", self.client.reject_assignment, params)
        self._record_for(assignment_id, "", "RejectAssignment", feedback=params["RequesterFeedback"])

    def send_bonus(self, worker_id: str, assignment_id: str, amount, reason: str, key: str = "") -> bool:
        """Pay a bonus once. True: MTurk took this request. False: a request with the same key had been
        taken already (the audit log has it, or MTurk refused the token as already processed: an earlier
        run's, or this run's own first try whose answer timed out). The default key is the worker, the
        assignment and the amount: a second bonus of that amount to that assignment needs a key of its own."""
        _check(WORKER_ID, worker_id, "worker ID")
        _check(ASSIGNMENT_ID, assignment_id, "assignment ID")
        dollars = money(amount, "the bonus")
        if not reason.strip():
            raise MTurkError("a bonus needs a reason (MTurk shows it to the worker)")
        token = unique_request_token("SendBonus", key or f"{worker_id}:{assignment_id}:{dollars}")
        if self._accepted("SendBonus", token) is not None:
            return False
        params = {
            "WorkerId": worker_id,
            "AssignmentId": assignment_id,
            "BonusAmount": str(dollars),
            "Reason": reason.strip(),
            "UniqueRequestToken": token,
        }
        try:
            self._send("SendBonus", self.client.send_bonus, params, repeat_is_done=True)
            repeat = False
        except _AlreadyDone:
            repeat = True
        self._record_for(
            assignment_id, worker_id, "SendBonus", token=token, amount=str(dollars), already_processed=repeat
        )
        return not repeat

    # --------------------------------------------------------------------------------------- plumbing

    def _send(self, operation: str, call, params: dict, repeat_is_done: bool = False) -> dict:
        try:
            return call(**params)
        except (BotoCoreError, ClientError) as exc:
            if repeat_is_done and _already_processed(exc):
                raise _AlreadyDone from exc
            raise _refusal(operation, exc) from exc

    def _accepted(self, operation: str, token: str) -> AuditEntry | None:
        """The audit entry of an earlier call MTurk accepted with this token on this endpoint (a sandbox
        rehearsal does not count in production); it outlasts MTurk's 24 hours."""
        return (
            AuditEntry.objects.filter(
                action=AUDIT_ACTION,
                details__operation=operation,
                details__token=token,
                details__sandbox=settings.MTURK_SANDBOX,
            )
            .order_by("created_at")
            .first()
        )

    def _record_for(self, assignment_id: str, worker_id: str, operation: str, **details) -> None:
        if self.dry_run:
            return
        session = _session_of(assignment_id, worker_id)
        participant = f"w{session.worker_id}" if session else "not matched to a participant"
        self._record(session.project if session else None, operation, participant=participant, **details)

    def _record(self, project: Project | None, operation: str, **details) -> None:
        if not self.dry_run:
            audit.record(
                self.actor, AUDIT_ACTION, project, operation=operation, sandbox=settings.MTURK_SANDBOX, **details
            )


class _AlreadyDone(Exception):
    """MTurk refused a repeat of a request it had already carried out."""


def _check(pattern: re.Pattern, value: str, what: str) -> None:
    if not pattern.fullmatch(value or ""):
        raise MTurkError(f"{what} {value!r} is not an MTurk {what} ({pattern.pattern})")


def _feedback(text: str) -> str:
    text = text.strip()
    if len(text) > FEEDBACK_LIMIT:
        raise MTurkError(f"feedback has {len(text)} characters; MTurk takes at most {FEEDBACK_LIMIT}")
    return text


def _session_of(assignment_id: str, worker_id: str) -> CrowdSession | None:
    """The crowd session an assignment belongs to: the one it opened, else the worker's only MTurk session."""
    sessions = CrowdSession.objects.select_related("project").filter(platform=CrowdSession.Platform.MTURK)
    opened = sessions.filter(session_id=assignment_id).first()
    if opened is not None or not worker_id:
        return opened
    workers = list(sessions.filter(participant_id=worker_id)[:2])
    return workers[0] if len(workers) == 1 else None


def qualification_requirements(text: str) -> tuple[dict, ...]:
    """QualificationRequirements from JSON (a list of MTurk's objects); the shape is checked by botocore."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MTurkError(f"qualification requirements: not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
        raise MTurkError('qualification requirements: give a JSON list of objects such as {"QualificationTypeId": ...}')
    return tuple(value)
