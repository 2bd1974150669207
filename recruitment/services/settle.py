"""Settling a Prolific study: the submissions Prolific reports joined with what each participant did here,
the researcher's decisions on them (approve, reject, screen out, ask for a return), each in the audit log,
and the mismatches between the two sides."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.models import Annotation, AuditEntry, CrowdSession, WorkerStatus
from annotation.services import audit
from annotation.services.assignments import open_assignment, release_page
from annotation.services.crowd.crowd import is_screen_out_code, leaving_code, submitted_pages
from annotation.services.qualification import attempts_left, has_passed
from annotation.services.quality import block, worker_figures
from recruitment.models import ProlificLink, ProlificSubmission
from recruitment.prolific import REJECTION_CATEGORIES, REJECTION_MESSAGE_MIN, ProlificClient, Submission
from recruitment.services.studies import RecruitmentError, client_for

AWAITING_REVIEW = "AWAITING REVIEW"
FINISHED_THERE = (AWAITING_REVIEW, "APPROVED", "PARTIALLY APPROVED")

PROLIFIC = AuditEntry.Action.PROLIFIC


@dataclass
class Row:
    """One participant: Prolific's submission (or None) and their work here (None: never arrived)."""

    participant_id: str
    submission: ProlificSubmission | None
    arrived: datetime | None = None
    qualified: bool | None = None
    pages: int = 0
    code_shown: str = ""
    code_kind: str = ""  # completed, screened out or returned
    answers_kept: int = 0
    gold_accuracy: float | None = None
    speeder: bool = False

    @property
    def status(self) -> str:
        return self.submission.status if self.submission else ""

    @property
    def mismatch(self) -> str:
        """What is owed and not matched: a completion code shown with no submission, or the reverse (a code
        for leaving owes nothing)."""
        completed = self.code_kind == "completed"
        if completed and self.submission is None:
            return "shown the completion code here, no submission on Prolific"
        if self.submission and self.submission.status in FINISHED_THERE and not completed:
            return "finished on Prolific, never shown the completion code here"
        return ""


def _when(value) -> datetime | None:
    if not value:
        return None
    return parse_datetime(value) if isinstance(value, str) else value


def _bonus_cents(submission: Submission) -> int:
    """Bonuses Prolific lists on a submission: amounts in cents (or objects with an amount)."""
    total = 0
    for payment in submission.bonus_payments:
        amount = payment.get("amount", 0) if isinstance(payment, dict) else payment
        total += int(amount or 0)
    return total


def pull(link: ProlificLink, client: ProlificClient | None = None) -> int:
    """Read every submission of the study from Prolific into the table; returns how many there are."""
    if not link.prolific_study_id:
        raise RecruitmentError("create the study on Prolific first")
    now = timezone.now()
    count = 0
    for submission in (client or client_for(link)).submissions(link.prolific_study_id):
        values = {
            "participant_id": submission.participant_id,
            "study_code": submission.study_code,
            "started_at": _when(submission.started_at),
            "completed_at": _when(submission.completed_at),
            "time_taken": submission.time_taken,
            "bonus_cents": _bonus_cents(submission),
        }
        record_status(link, submission.id, submission.status, now, **values)
        count += 1
    return count


REJECTED = "REJECTED"  # a participant Prolific rejected: their answers are excluded here
RETURNED = "RETURNED"
# Prolific statuses whose participant takes no more work here: the page they hold goes back to the pool.
GONE = (RETURNED, "TIMED-OUT", REJECTED)


def record_status(link: ProlificLink, submission_id: str, status: str, at: datetime, **values) -> bool:
    """Take in what Prolific says of a submission at `at`; the status moves only if `at` is newer than
    what is known. Returns whether the status was applied."""
    applied = _record_status(link, submission_id, status, at, **values)
    if applied and status in GONE:
        participant = ProlificSubmission.objects.filter(link=link, submission_id=submission_id).first()
        if participant is not None:
            release_pages(link, participant.participant_id)
    return applied


def _session(link: ProlificLink, participant_id: str) -> CrowdSession | None:
    return (
        CrowdSession.objects.select_related("worker")
        .filter(project=link.project, platform=CrowdSession.Platform.PROLIFIC, participant_id=participant_id)
        .first()
        if participant_id
        else None
    )


def release_pages(link: ProlificLink, participant_id: str) -> None:
    """A participant who returned, timed out or was rejected holds no page: its items go back to the pool
    (Prolific reopens their place itself)."""
    session = _session(link, participant_id)
    if session is not None and (page := open_assignment(link.project, session.worker)) is not None:
        release_page(page.pk, session.worker)


def _record_status(link: ProlificLink, submission_id: str, status: str, at: datetime, **values) -> bool:
    with transaction.atomic():
        row = ProlificSubmission.objects.select_for_update().filter(link=link, submission_id=submission_id).first()
        if row is None:
            ProlificSubmission.objects.create(
                link=link,
                submission_id=submission_id,
                status=status,
                status_at=at,
                participant_id=values.pop("participant_id", "") or "",
                **values,
            )
            return True
        for name, value in values.items():
            if value not in (None, "") and name != "participant_id":
                setattr(row, name, value)
        if values.get("participant_id") and not row.participant_id:
            row.participant_id = values["participant_id"]
        applied = row.status_at is None or at >= row.status_at
        if applied:
            row.status, row.status_at = status, at
        row.save()
        return applied


def _code_shown(link: ProlificLink, session: CrowdSession, qualified: bool | None) -> tuple[str, str]:
    """The code this participant was given here and its kind: the completion code, else the code they leave
    with (the screen-out code after failing the qualification, the returned code once they passed it, or had
    none to take, and hold no page: they stopped, or no work was left), or ("", "") while they are still at
    the test or at work."""
    if session.completion_code:
        return session.completion_code, "completed"
    project = link.project
    failed = qualified is False and not attempts_left(project.qualification, session.worker)
    if qualified is False and not failed:  # still at the qualification test
        return "", ""
    if not failed and open_assignment(project, session.worker) is not None:
        return "", ""
    code = leaving_code(project, session.platform, screened_out=failed)
    return code, ("screened out" if code and is_screen_out_code(project, code) else "returned" if code else "")


def table(link: ProlificLink) -> list[Row]:
    """One row a submission Prolific reports (a participant's second submission is a row of its own), and one
    for each participant who arrived here without one, with the figures of the existing services."""
    project = link.project
    sessions = {
        session.participant_id: session
        for session in CrowdSession.objects.filter(project=project, platform=CrowdSession.Platform.PROLIFIC)
        .select_related("worker")
        .order_by("participant_id")
    }
    submissions: dict[str, list[ProlificSubmission]] = {}
    for submission in link.submissions.all():  # by participant, then by when it started
        submissions.setdefault(submission.participant_id, []).append(submission)
    workers = [session.worker_id for session in sessions.values()]
    figures = {row["worker_id"]: row for row in worker_figures(project, workers)} if workers else {}
    standings = {
        status.worker_id: status for status in WorkerStatus.objects.filter(project=project, worker_id__in=workers)
    }
    kept = dict(
        Annotation.objects.filter(item__project=project, worker_id__in=workers)
        .values("worker_id")
        .annotate(kept=Count("id", filter=Q(excluded=False)))
        .values_list("worker_id", "kept")
    )
    rows = []
    for participant in sorted(set(sessions) | set(submissions)):
        session = sessions.get(participant)
        here = Row(participant, None)
        if session is not None:
            figure = figures.get(session.worker_id, {})
            here.arrived = session.created_at
            here.qualified = has_passed(project.qualification, session.worker) if project.qualification_id else None
            here.pages = submitted_pages(session)
            here.code_shown, here.code_kind = _code_shown(link, session, here.qualified)
            here.answers_kept = kept.get(session.worker_id, 0)
            standing = standings.get(session.worker_id)
            here.gold_accuracy = standing.gold_accuracy if standing else None
            here.speeder = bool(figure.get("speeder"))
        rows.extend(replace(here, submission=submission) for submission in submissions.get(participant, [None]))
    return rows


def set_aside(link: ProlificLink) -> set[str]:
    """Participants no bonus rule rewards and no group takes: any submission of theirs rejected, returned or
    asked to be returned (an author may still plan one a bonus by hand, once they confirm it)."""
    return set(
        link.submissions.filter(Q(status__in=(REJECTED, RETURNED)) | Q(return_requested=True)).values_list(
            "participant_id", flat=True
        )
    )


def mismatches(rows: list[Row]) -> list[Row]:
    return [row for row in rows if row.mismatch]


def _submissions(link: ProlificLink, submission_ids: list[str]) -> list[ProlificSubmission]:
    found = list(link.submissions.filter(submission_id__in=submission_ids))
    missing = set(submission_ids) - {row.submission_id for row in found}
    if missing:
        raise RecruitmentError(f"not a submission of this study: {', '.join(sorted(missing))}")
    return found


def _after_action(link, rows, status, action, by, **details):
    now = timezone.now()
    for row in rows:
        record_status(link, row.submission_id, status, now)
    audit.record(
        by,
        PROLIFIC,
        link.project,
        operation=action,
        prolific_study=link.prolific_study_id,
        submissions=[row.submission_id for row in rows],
        **details,
    )


def approve(link: ProlificLink, submission_ids: list[str], by, client: ProlificClient | None = None) -> int:
    """Approve submissions awaiting review, in one bulk call."""
    if not submission_ids:
        raise RecruitmentError("choose the submissions to approve")
    rows = _submissions(link, submission_ids)
    waiting = [row for row in rows if row.status == AWAITING_REVIEW]
    if len(waiting) != len(rows):
        others = ", ".join(f"{row.submission_id} ({row.status.lower()})" for row in rows if row not in waiting)
        raise RecruitmentError(f"only submissions awaiting review can be approved: {others}")
    (client or client_for(link)).bulk_approve([row.submission_id for row in rows])
    _after_action(link, rows, "APPROVED", "approve", by)
    return len(rows)


def reject(
    link: ProlificLink, submission_id: str, category: str, message: str, by, client: ProlificClient | None = None
) -> None:
    if category not in REJECTION_CATEGORIES:
        raise RecruitmentError(f"category: one of {', '.join(REJECTION_CATEGORIES)}")
    message = message.strip()
    if len(message) < REJECTION_MESSAGE_MIN:
        raise RecruitmentError(
            f"message: Prolific asks for at least {REJECTION_MESSAGE_MIN} characters that tell the participant "
            f"why (this one has {len(message)})"
        )
    rows = _submissions(link, [submission_id])
    (client or client_for(link)).transition_submission(submission_id, "REJECT", message, category)
    # The category is kept, the message to the participant is not copied into the log.
    _after_action(link, rows, REJECTED, "reject", by, category=category)
    # Their answers leave every figure (exports flag them with the reason) and their items are asked again.
    session = _session(link, rows[0].participant_id)
    if session is not None:
        block(link.project, session.worker, by, exclude_answers=True, reason=f"rejected on Prolific ({category})")


def screen_out(link: ProlificLink, submission_id: str, by, client: ProlificClient | None = None) -> None:
    """Screen a participant out with the study's fixed screen-out code (Prolific pays its screen-out reward)."""
    if not link.screened_out_code:
        raise RecruitmentError(
            "this study was created on Prolific without a screen-out code (no screen-out reward): ask for a "
            "return instead"
        )
    rows = _submissions(link, [submission_id])
    (client or client_for(link)).transition_submission(
        submission_id, "SCREEN_OUT", completion_code=link.screened_out_code
    )
    _after_action(link, rows, "SCREENED OUT", "screen-out", by)


def request_return(
    link: ProlificLink, submission_id: str, reason: str, by, client: ProlificClient | None = None
) -> None:
    reason = reason.strip()
    if not reason:
        raise RecruitmentError("reason: tell the participant why they are asked to return the study")
    rows = _submissions(link, [submission_id])
    (client or client_for(link)).request_return(submission_id, [reason])
    ProlificSubmission.objects.filter(pk=rows[0].pk).update(return_requested=True)
    audit.record(
        by,
        PROLIFIC,
        link.project,
        operation="return",
        prolific_study=link.prolific_study_id,
        submissions=[submission_id],
    )
