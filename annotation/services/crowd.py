"""Crowd platform entry (Prolific, MTurk): who an entry link names, the account it may log in, and when the
completion code is earned.

An entry link is not a login: it logs in only the crowd account made for that participant of that study,
found through its CrowdSession row (never by username), and only from the platform session the participant
first arrived with, unless the link carries the signed resume token the study handed out.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Assignment, CrowdSession, Project
from annotation.services.study_settings import settings_schema
from core.roles import WORKER, grant_role

PLATFORM_PARAMETERS = {
    CrowdSession.Platform.PROLIFIC: ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    CrowdSession.Platform.MTURK: ("workerId", "hitId", "assignmentId"),
}
# Matched whole (fullmatch): with match() and `$`, "AAA111\n" passed as a second identity of AAA111.
SAFE_ID = re.compile(r"[A-Za-z0-9_\-]{1,100}")
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
RESUME_SALT = "annotation.crowd.resume"


class EntryError(ValueError):
    """The link cannot start a session (shown to the participant as it is)."""


@dataclass(frozen=True)
class Arrival:
    platform: str
    participant_id: str
    study_id: str
    session_id: str
    submit_to: str = ""  # MTurk's turkSubmitTo


def is_mturk_preview(params) -> bool:
    """MTurk shows a HIT before it is accepted with this assignmentId (and no workerId)."""
    return params.get("assignmentId") == MTURK_PREVIEW


def identify(params) -> Arrival:
    """Who an entry link's query parameters name; raises EntryError naming the parameter that is wrong."""
    for platform, names in PLATFORM_PARAMETERS.items():
        participant_name, _study_name, _session_name = names
        if not params.get(participant_name):
            continue
        values = [params.get(name, "") for name in names]
        for name, value in zip(names, values):
            if not value:
                raise EntryError(f"the link lacks {name}")
            if not SAFE_ID.fullmatch(value):
                raise EntryError(f"{name} has characters that are not allowed")
        if values[2] == MTURK_PREVIEW:
            raise EntryError("this is an MTurk preview: accept the HIT to start")
        submit_to = mturk_submit_host(params.get("turkSubmitTo", "")) if platform == CrowdSession.Platform.MTURK else ""
        return Arrival(platform, *values, submit_to=submit_to)
    raise EntryError("the link lacks PROLIFIC_PID (Prolific) or workerId (MTurk)")


def mturk_submit_host(value: str) -> str:
    """turkSubmitTo, checked against the MTurk hosts the settings allow (production and sandbox)."""
    host = value.rstrip("/")
    if host and host not in settings.MTURK_SUBMIT_HOSTS:
        raise EntryError(f"turkSubmitTo {value!r} is not an MTurk address ({', '.join(settings.MTURK_SUBMIT_HOSTS)})")
    return host


def resume_token(session: CrowdSession) -> str:
    """The signed token that lets this participant come back from another platform session."""
    return signing.dumps(session.pk, salt=RESUME_SALT)


def _token_fits(token: str, session: CrowdSession) -> bool:
    try:
        return signing.loads(token, salt=RESUME_SALT) == session.pk
    except signing.BadSignature:
        return False


def enter(project: Project, params) -> CrowdSession:
    """The crowd session an entry link opens: the participant's own, made on their first arrival.
    Raises EntryError for a bad link or another platform session of an already bound participant."""
    if params.get("resume") and not any(params.get(names[0]) for names in PLATFORM_PARAMETERS.values()):
        return _resumed(project, params["resume"])
    arrival = identify(params)
    key = {"project": project, "platform": arrival.platform, "participant_id": arrival.participant_id}
    session = CrowdSession.objects.select_related("worker").filter(**key).first()
    if session is None:
        try:
            session = _first_arrival(project, arrival)
        except IntegrityError:  # the same participant's link opened twice at once: the first one made it
            session = CrowdSession.objects.select_related("worker").filter(**key).first()
            if session is None:
                raise EntryError("this participant cannot be given an account in this study") from None
    same_session = (session.study_id, session.session_id) == (arrival.study_id, arrival.session_id)
    if not same_session and not _token_fits(params.get("resume", ""), session):
        raise EntryError(
            "this participant already started this study in another platform session; continue in that "
            "session, or use the link this study gave you to come back"
        )
    if arrival.submit_to and not session.submit_to:
        session.submit_to = arrival.submit_to
        session.save(update_fields=["submit_to"])
    return session


def check_link(project: Project, params) -> None:
    """Raise EntryError for an entry link that cannot open a session, changing nothing (enter() makes it)."""
    if params.get("resume") and not any(params.get(names[0]) for names in PLATFORM_PARAMETERS.values()):
        _resumed(project, params["resume"])
    else:
        identify(params)


def _resumed(project: Project, token: str) -> CrowdSession:
    """The session a resume link names (the link this study handed to that participant)."""
    try:
        pk = signing.loads(token, salt=RESUME_SALT)
    except signing.BadSignature:
        raise EntryError("the link to come back is not valid") from None
    session = CrowdSession.objects.select_related("worker").filter(pk=pk, project=project).first()
    if session is None:
        raise EntryError("the link to come back is not for this study")
    return session


def _first_arrival(project: Project, arrival: Arrival) -> CrowdSession:
    # A crowd account belongs to one participant of one study. Its username has ':' in it, which sign-up and
    # the admin refuse, so no staff account can be named like one; and it is never looked up by name.
    username = f"{arrival.platform}:{arrival.participant_id}:{project.pk}"
    with transaction.atomic():
        user = get_user_model().objects.create(username=username)
        user.set_unusable_password()
        user.save(update_fields=["password"])
        grant_role(user, WORKER)
        return CrowdSession.objects.create(
            project=project,
            worker=user,
            platform=arrival.platform,
            participant_id=arrival.participant_id,
            study_id=arrival.study_id,
            session_id=arrival.session_id,
            submit_to=arrival.submit_to,
        )


def session_of(project: Project, user) -> CrowdSession | None:
    """The crowd session behind this account in this study (None for accounts that did not come from a platform)."""
    if not user.is_authenticated:
        return None
    return CrowdSession.objects.filter(project=project, worker=user).first()


# ---------------------------------------------------------------------------- the completion code


def submitted_pages(session: CrowdSession) -> int:
    return Assignment.objects.filter(
        project=session.project, worker=session.worker, status=Assignment.Status.SUBMITTED
    ).count()


def no_work_left(project: Project, worker) -> bool:
    return not project.items.filter(claimable=True).exclude(claims__worker=worker).exists()


def study_setting(project: Project, name: str):
    """A crowd setting of the study, or its declared default (studies made before the setting existed)."""
    if name in project.options:
        return project.options[name]
    return settings_schema(project.task).get(name).default


def quota(project: Project) -> int:
    """Pages a participant submits to earn the code (0: they finish when they like, after one page)."""
    return int(study_setting(project, "completion_pages") or 0)


def quota_reached(session: CrowdSession) -> bool:
    return quota(session.project) > 0 and submitted_pages(session) >= quota(session.project)


def may_finish(session: CrowdSession) -> bool:
    """The exit condition: the quota submitted, or at least one page and nothing left to claim."""
    pages = submitted_pages(session)
    if pages >= max(1, quota(session.project)):
        return True
    return pages >= 1 and no_work_left(session.project, session.worker)


def completion_code(session: CrowdSession) -> str:
    """The project's fixed code when it sets one (Prolific studies use one per study), else a code
    derived from the session, which a researcher can recompute to check a claimed completion."""
    fixed = session.project.options.get("completion_code")
    if fixed:
        return str(fixed)
    message = f"{session.project.slug}:{session.platform}:{session.participant_id}:{session.session_id}"
    return hmac.new(settings.SECRET_KEY.encode(), message.encode(), hashlib.sha256).hexdigest()[:10].upper()


def complete(session: CrowdSession) -> str:
    """Give the code (once): callers check may_finish first."""
    if not session.completion_code:
        session.completion_code = completion_code(session)
        session.completed_at = timezone.now()
        session.save(update_fields=["completion_code", "completed_at"])
    return session.completion_code


def earned_code(project: Project, user) -> str | None:
    """The participant's completion code once earned, else None: the only way a worker ever sees one."""
    session = session_of(project, user)
    return (session.completion_code or None) if session else None


def prolific_url(code: str) -> str:
    return settings.PROLIFIC_COMPLETE_URL + quote(code, safe="")


def mturk_submit_url(session: CrowdSession) -> str:
    return f"{session.submit_to}/mturk/externalSubmit" if session.submit_to else ""


def answers_summary(session: CrowdSession) -> dict:
    """What an MTurk HIT reports back: pages and answers given in this study."""
    from annotation.models import Annotation

    answers = Annotation.objects.filter(item__project=session.project, worker=session.worker).count()
    return {"pages": submitted_pages(session), "answers": answers}
