"""Participants' data under research-ethics rules: erase one crowd participant's identifying data and
keep their answers under a pseudonym.

What identifies a participant: the platform's ID (Prolific PID, MTurk worker ID), the platform's session
IDs, the account name built from the ID (also in the login throttle's records of their logins), any name or
e-mail on the account, the completion code (derived from the ID) and free-text reasons they wrote beside their
answers. Their answers, timings and anonymised annotator id (a keyed hash of the account's number in every
export) stay, so figures and datasets do not change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from django.db import transaction

from annotation.models import Annotation, AuditEntry, CrowdSession
from annotation.services import audit


class ParticipantError(ValueError):
    pass


@dataclass
class Erasure:
    platform: str
    sessions: int
    accounts: int
    answers_kept: int
    reasons_erased: int

    def as_dict(self) -> dict:
        return asdict(self)


def _forget_logins(usernames: list[str], participant_id: str) -> None:
    """django-axes keeps every login (AccessLog) and failure with its username, which holds the platform ID."""
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog

    for model in (AccessLog, AccessAttempt, AccessFailureLog):
        model.objects.filter(username__in=usernames).delete()
    AccessAttempt.objects.filter(get_data__contains=participant_id).delete()


def pseudonym(session_or_user_pk: int, kind: str) -> str:
    return f"erased-{kind}-{session_or_user_pk}"


# What other apps keep of a participant (the recruitment app's Prolific tables): each eraser is called inside
# forget_participant's transaction with the platform, the ID and the sessions before they are pseudonymised,
# and returns how many rows it changed. Added at start-up (annotation never imports those apps).
_erasers: list[Callable[[str, str, list[CrowdSession]], int]] = []


def register_eraser(eraser: Callable[[str, str, list[CrowdSession]], int]) -> None:
    if eraser not in _erasers:
        _erasers.append(eraser)


def forget_participant(platform: str, participant_id: str, by=None) -> Erasure:
    """Erase what identifies the participant `participant_id` of `platform` (every study they entered),
    keep their answers, and write the erasure (without the ID) to the audit log."""
    platforms = CrowdSession.Platform.values
    if platform not in platforms:
        raise ParticipantError(f"unknown platform {platform!r}; choose one of {', '.join(platforms)}")
    with transaction.atomic():
        sessions = list(
            CrowdSession.objects.select_for_update()
            .select_related("worker")
            .filter(platform=platform, participant_id=participant_id)
        )
        if not sessions:
            raise ParticipantError(f"no {platform} participant with that ID (already erased, or never entered)")
        workers = {session.worker.pk: session.worker for session in sessions}
        for eraser in _erasers:
            eraser(platform, participant_id, sessions)
        _forget_logins([worker.username for worker in workers.values()], participant_id)
        for session in sessions:
            session.participant_id = pseudonym(session.pk, "participant")
            session.session_id = ""
            session.completion_code = ""
            session.save(update_fields=["participant_id", "session_id", "completion_code"])
        for worker in workers.values():
            worker.username = pseudonym(worker.pk, "account")
            worker.first_name = worker.last_name = worker.email = ""
            worker.is_active = False  # nobody can enter as them again; their answers stay
            worker.set_unusable_password()
            worker.save(update_fields=["username", "first_name", "last_name", "email", "is_active", "password"])
        answers = Annotation.objects.filter(worker__in=workers)
        reasons = answers.exclude(reason="").update(reason="")
        erasure = Erasure(
            platform=platform,
            sessions=len(sessions),
            accounts=len(workers),
            answers_kept=answers.count(),
            reasons_erased=reasons,
        )
        projects = {session.project for session in sessions}
        for project in projects:
            audit.record(
                by, AuditEntry.Action.ERASE, project, **erasure.as_dict(), workers=[f"w{pk}" for pk in sorted(workers)]
            )
    return erasure
