"""Participants' data under research-ethics rules: erase one crowd participant's identifying data and
keep their answers under a pseudonym.

What identifies a participant: the platform's ID (Prolific PID, MTurk worker ID), the platform's session
IDs, the account name built from the ID (also in the login throttle's records of their logins), any name or
e-mail on the account, and the completion code (derived from the ID). Their answers, timings and anonymised
annotator id (a keyed hash of the account's number in every export) stay, so figures do not change.

Free text the person typed is removed by default: the reasons beside their answers, the explanations and
written sentences inside them (each task type's `without_free_text`), the notes of the disagreement reasons
they ticked, their qualification answers, and the drafts of their open pages. `keep_free_text` keeps it under
the pseudonymous account instead; it is for studies whose consent form said that what participants write may
be kept (and published) without their name. Drafts go either way: they were never submitted.

Copies go with the text: the pairs sent to a linked validation study from their answers keep the item and
every validator's answer, with a marker where their text was, in the study and in its clones (erased_copies). Files the app stored from the
studies before the erasure (exports and bundles ready to download) are removed either way, and the Erasure
names them: a fresh export or bundle reflects the erasure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from django.db import transaction
from django.db.models import Q

from annotation.models import (
    Annotation,
    AuditEntry,
    CrowdSession,
    Example,
    PageDraft,
    Project,
    QualificationAttempt,
)
from annotation.services import audit
from annotation.services.crowd.erased_copies import ErasedAnswer, mark_erased_copies


class ParticipantError(ValueError):
    pass


@dataclass
class Erasure:
    platform: str
    sessions: int
    accounts: int
    answers_kept: int
    reasons_erased: int
    free_text: str  # "removed" or "kept" (under the pseudonymous account)
    answers_with_text_erased: int
    drafts_erased: int
    copies_marked: int = 0  # validation examples made from their answers, their text replaced by a marker
    files_removed: list[str] = field(default_factory=list)  # stored exports and bundles, as their removers name them

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


# What feature apps keep that the participant typed (the label-variation app's reason notes): called with the
# participant's accounts unless the free text is kept.
_free_text_erasers: list[Callable[[list], int]] = []


def register_free_text_eraser(eraser: Callable[[list], int]) -> None:
    if eraser not in _free_text_erasers:
        _free_text_erasers.append(eraser)


# What keeps files made from the studies' data (the dataset_io app's stored exports and bundles): called inside
# the transaction with every study the erasure touched; each removes those files and returns a line naming each.
_stored_file_removers: list[Callable[[list[Project]], list[str]]] = []


def register_stored_file_remover(remover: Callable[[list[Project]], list[str]]) -> None:
    if remover not in _stored_file_removers:
        _stored_file_removers.append(remover)


def forget_participant(platform: str, participant_id: str, by=None, keep_free_text: bool = False) -> Erasure:
    """Erase what identifies the participant `participant_id` of `platform` (every study they entered) and,
    unless `keep_free_text`, what they wrote; keep their answers, and write the erasure (without the ID) to
    the audit log."""
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
        drafts, _ = PageDraft.objects.filter(assignment__worker__in=workers).delete()
        reasons = 0
        erased: list[ErasedAnswer] = []
        copies: list[Example] = []
        if not keep_free_text:
            reasons = answers.exclude(reason="").update(reason="")
            erased = _erase_written_answers(answers)
            copies = mark_erased_copies(erased)
            for eraser in _free_text_erasers:
                eraser(list(workers.values()))
            QualificationAttempt.objects.filter(worker__in=workers).update(answers={})
        touched = Project.objects.filter(
            Q(pk__in={session.project_id for session in sessions} | {copy.project_id for copy in copies})
            | Q(items__annotations__worker__in=workers)
            | Q(examples__origin__worker__in=workers)
        ).distinct()
        # A storage that fails here stops the erasure (nothing above is kept): it can be run again.
        files = [line for remover in _stored_file_removers for line in remover(list(touched))]
        erasure = Erasure(
            platform=platform,
            sessions=len(sessions),
            accounts=len(workers),
            answers_kept=answers.count(),
            reasons_erased=reasons,
            free_text="kept" if keep_free_text else "removed",
            answers_with_text_erased=len(erased),
            drafts_erased=drafts,
            copies_marked=len(copies),
            files_removed=files,
        )
        projects = {session.project for session in sessions}
        for project in projects:
            audit.record(
                by, AuditEntry.Action.ERASE, project, **erasure.as_dict(), workers=[f"w{pk}" for pk in sorted(workers)]
            )
    return erasure


def _erase_written_answers(answers) -> list[ErasedAnswer]:
    """Empty the free text inside the stored answers (their task type says where it is); those that changed,
    with their values from before."""
    changed = []
    for answer in answers.select_related("item__project", "item__example"):
        raw, value = answer.item.project.task.without_free_text(answer.raw, answer.value)
        if (raw, value) != (answer.raw, answer.value):
            changed.append(ErasedAnswer(answer, answer.value))
            answer.raw, answer.value = raw, value
    Annotation.objects.bulk_update([entry.answer for entry in changed], ["raw", "value"], batch_size=500)
    return changed
