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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, CrowdSession, Project
from annotation.services import access, extensions
from annotation.services.assignments import open_assignment
from annotation.services.study_settings import settings_schema
from core.roles import WORKER, grant_role

PLATFORM_PARAMETERS = {
    CrowdSession.Platform.PROLIFIC: ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    CrowdSession.Platform.MTURK: ("workerId", "hitId", "assignmentId"),
}
PLATFORM_NAMES = {CrowdSession.Platform.PROLIFIC: "Prolific", CrowdSession.Platform.MTURK: "MTurk"}
# Matched whole (fullmatch): with match() and `$`, "AAA111\n" passed as a second identity of AAA111.
SAFE_ID = re.compile(r"[A-Za-z0-9_\-]{1,100}")
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
RESUME_SALT = "annotation.crowd.resume"
FRAME_SALT = "annotation.crowd.mturk-frame"
# Renewed with every page shown: it lapses after this long without one (a page itself expires after 30 min).
FRAME_TOKEN_MAX_AGE = timedelta(hours=2)


class EntryError(ValueError):
    """The link cannot start a session (shown to the participant as it is)."""


@dataclass(frozen=True)
class Arrival:
    platform: str
    participant_id: str
    study_id: str
    session_id: str
    submit_to: str = ""  # MTurk's turkSubmitTo


def platform_named(params) -> str:
    """The platform an entry link's parameters come from ("" when they name none); an MTurk preview names no
    worker yet but is MTurk's."""
    if is_mturk_preview(params):
        return CrowdSession.Platform.MTURK
    for platform, names in PLATFORM_PARAMETERS.items():
        if params.get(names[0]):
            return platform
    return ""


# Prolific replaces these placeholders in a study's URL with the participant's and the session's ids.
PROLIFIC_PLACEHOLDERS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


def entry_url(project: Project, site: str, platform: str) -> str:
    """The study's entry link for a platform on `site` (scheme and host): Prolific's study URL with its
    placeholders, or MTurk's ExternalQuestion URL (MTurk adds its own parameters)."""
    entry = f"{site.rstrip('/')}{reverse('enter', args=[project.slug])}"
    return f"{entry}?{PROLIFIC_PLACEHOLDERS}" if platform == CrowdSession.Platform.PROLIFIC else entry


def entry_links(project: Project, site: str) -> dict[str, str]:
    """entry_url() for each platform the study's audience takes."""
    return {platform: entry_url(project, site, platform) for platform in access.admitted_platforms(project.audience)}


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
    """The signed token that lets this participant come back from another platform session. It is a bearer
    credential (whoever holds the link becomes that crowd account), so it lapses after
    CROWD_RESUME_LINK_MAX_AGE and is bound to the platform session that earned it: it dies with an erasure,
    which empties that session's id."""
    return signing.dumps({"session": session.pk, "platform_session": session.session_id}, salt=RESUME_SALT)


def _resume_claim(token: str) -> dict | None:
    """What a resume token names, if it is genuine and unexpired; None otherwise."""
    try:
        claim = signing.loads(token, salt=RESUME_SALT, max_age=settings.CROWD_RESUME_LINK_MAX_AGE)
    except signing.BadSignature:  # SignatureExpired included
        return None
    return claim if isinstance(claim, dict) and {"session", "platform_session"} <= claim.keys() else None


def _token_fits(token: str, session: CrowdSession) -> bool:
    claim = _resume_claim(token)
    return claim is not None and (claim["session"], claim["platform_session"]) == (session.pk, session.session_id)


def enter(project: Project, params) -> CrowdSession:
    """The crowd session an entry link opens: the participant's own, made on their first arrival.
    Raises EntryError for a bad link or another platform session of an already bound participant."""
    if params.get("resume") and not any(params.get(names[0]) for names in PLATFORM_PARAMETERS.values()):
        return _resumed(project, params["resume"])
    arrival = identify(params)
    _check_study_id(project, arrival)
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
    # Prolific proves nothing more of a returning participant than their id in the study that sent them.
    returning_for_follow_up = session.study_id == arrival.study_id and follow_up_due(session) is not None
    if not same_session and not _token_fits(params.get("resume", ""), session) and not returning_for_follow_up:
        raise EntryError(
            "this participant already started this study in another platform session; continue in that "
            "session, or use the link this study gave you to come back"
        )
    if arrival.submit_to and not session.submit_to:
        session.submit_to = arrival.submit_to
        session.save(update_fields=["submit_to"])
    return session


def follow_up_due(session: CrowdSession) -> str | None:
    """The address of what a Prolific participant who earned this study's code still owes it (a feature's
    follow-up, extensions.follow_up: a writer's self-check), or None. Only then may they come back from a new
    Prolific session, and the pages then lead them to that follow-up: the study already gives them no new page
    (it has their code), and no code they did not earn."""
    if session.platform != CrowdSession.Platform.PROLIFIC or not session.completion_code:
        return None  # an MTurk HIT's frame carries no session cookie to the follow-up's page
    return extensions.follow_up(session.project, session.worker)


def check_link(project: Project, params) -> None:
    """Raise EntryError for an entry link that cannot open a session, changing nothing (enter() makes it)."""
    if params.get("resume") and not any(params.get(names[0]) for names in PLATFORM_PARAMETERS.values()):
        _resumed(project, params["resume"])
    else:
        _check_study_id(project, identify(params))


def _check_study_id(project: Project, arrival: Arrival) -> None:
    """A Prolific arrival names the Prolific study it came from: one other than this study's (a link copied
    into another study, a wave's link reused) would earn a code that study never registered."""
    if arrival.platform != CrowdSession.Platform.PROLIFIC:
        return
    linked = platform_study(project, arrival.platform)
    if linked is not None and arrival.study_id != linked.study_id:
        raise EntryError(
            f"STUDY_ID: this link belongs to another Prolific study ({arrival.study_id}); this study runs on "
            "Prolific as another one. Return to Prolific and open the study from there."
        )


def frame_token(session: CrowdSession) -> str:
    """The signed, expiring token an MTurk arrival's pages carry in their URLs. Inside MTurk's cross-site frame
    the browser sends no session cookie (SameSite=Lax, and third-party cookies may be blocked outright): the
    token names the crowd session instead, bound to its study and its assignment."""
    signer = signing.TimestampSigner(salt=FRAME_SALT)
    return signer.sign_object({"session": session.pk, "project": session.project_id, "assignment": session.session_id})


def framed_session(slug: str, token: str) -> CrowdSession | None:
    """The MTurk crowd session a frame token names, if the token is genuine, unexpired and for this study's
    page; None otherwise. It opens nothing but that session's crowd account (a worker of this one study)."""
    if not token:
        return None
    try:
        named = signing.TimestampSigner(salt=FRAME_SALT).unsign_object(token, max_age=FRAME_TOKEN_MAX_AGE)
    except signing.BadSignature:  # SignatureExpired included
        return None
    return (
        CrowdSession.objects.select_related("worker", "project")
        .filter(
            pk=named["session"],
            project_id=named["project"],
            project__slug=slug,
            platform=CrowdSession.Platform.MTURK,
            session_id=named["assignment"],  # an erased participant's session keeps no assignment
            worker__is_active=True,
        )
        .first()
    )


def _resumed(project: Project, token: str) -> CrowdSession:
    """The session a resume link names (the link this study handed to that participant)."""
    claim = _resume_claim(token)
    if claim is None:
        raise EntryError("the link to come back is not valid, or too old: enter again from the platform")
    session = (
        CrowdSession.objects.select_related("worker")
        .filter(pk=claim["session"], project=project, worker__is_active=True)
        .first()
    )
    if session is None:
        raise EntryError("the link to come back is not for this study")
    if session.session_id != claim["platform_session"]:  # an erased participant's session keeps no id
        raise EntryError("the link to come back is no longer valid: enter again from the platform")
    return session


def linked_account(project: Project, arrival: Arrival):
    """The crowd account this participant (the same platform identity) already has in a study linked to this
    one (its validation study, or the study it validates), or None: one person is one annotator across
    linked studies, so a writer never validates their own pairs and every export names them once."""
    linked = Project.objects.filter(Q(validation_project=project) | Q(pk=project.validation_project_id))
    session = (
        CrowdSession.objects.select_related("worker")
        .filter(platform=arrival.platform, participant_id=arrival.participant_id, project__in=linked)
        .order_by("id")
        .first()
    )
    return session.worker if session is not None else None


def _first_arrival(project: Project, arrival: Arrival) -> CrowdSession:
    # A crowd account belongs to one participant of one study (and the studies linked to it). Its username has
    # ':' in it, which sign-up and the admin refuse, so no staff account can be named like one; and it is never
    # looked up by name.
    username = f"{arrival.platform}:{arrival.participant_id}:{project.pk}"
    with transaction.atomic():
        user = linked_account(project, arrival)
        if user is None:
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


# ---------------------------------------------------------------------------- arrivals turned away


class Reason(StrEnum):
    """Why an arrival is turned away (the page's data-reason)."""

    CLOSED = "closed"
    PAUSED = "paused"
    FULL = "full"
    INELIGIBLE = "ineligible"
    KEPT_OUT = "kept-out"  # a participant of an earlier wave the author keeps out


@dataclass(frozen=True)
class Turnaway:
    """An arrival the study does not take now, and what the participant does about it on their platform:
    on Prolific they give the code (or return the submission); on MTurk they return the HIT."""

    reason: str
    explanation: str
    platform: str  # "" when the link names none
    title: str  # the study's title ("" for a draft, which workers never see)
    message: str  # the study's returned_message
    code: str = ""  # Prolific only
    return_url: str = ""  # Prolific's completion URL with that code
    status: int = 200


def arrival_turnaway(project: Project, params) -> Turnaway | None:
    """The outcome of an entry link: None when it may go on (enter() then opens or finds the session), else
    why it is turned away. The session a link names counts: someone holding a page finishes it in a paused
    study, and a participant already in a study is never turned away as full."""
    platform = platform_named(params)
    session = None
    if params.get("resume") and not platform:
        try:
            session = _resumed(project, params["resume"])
            platform = session.platform
        except EntryError:
            return None  # the link itself is wrong: enter() says so
    elif platform and not is_mturk_preview(params):
        participant = params.get(PLATFORM_PARAMETERS[platform][0], "")
        session = CrowdSession.objects.filter(project=project, platform=platform, participant_id=participant).first()
        for check in _arrival_checks:
            if explanation := check(project, platform, participant):
                return _turnaway(project, platform, Reason.KEPT_OUT, explanation, status=403)
    return turnaway(project, platform, session)


# Who a feature keeps out at the entry link: (study, platform, participant id) -> why, or None. The recruitment
# app adds the participants of earlier waves its author keeps out (annotation never imports it).
_arrival_checks: list[Callable[[Project, str, str], str | None]] = []


def register_arrival_check(check: Callable[[Project, str, str], str | None]) -> None:
    if check not in _arrival_checks:
        _arrival_checks.append(check)


def turnaway(project: Project, platform: str, session: CrowdSession | None) -> Turnaway | None:
    """Why a study takes no (more) work from this platform's participant now, or None: the one rule behind
    the entry link and the crowd pages that find the study closed or paused."""
    if project.status in (Project.Status.DRAFT, Project.Status.CLOSED):
        return _turnaway(project, platform, Reason.CLOSED, "This study is closed.", status=410)
    admitted = access.admitted_platforms(project.audience)
    if not admitted or (platform and platform not in admitted):
        names = " or ".join(PLATFORM_NAMES[name] for name in admitted)
        where = f"takes participants from {names} only" if names else "takes no participants through a platform link"
        return _turnaway(project, platform, Reason.INELIGIBLE, f"This study {where}.", status=403)
    holds_page = session is not None and open_assignment(project, session.worker) is not None
    if project.status == Project.Status.PAUSED and not holds_page:
        return _turnaway(project, platform, Reason.PAUSED, "This study is paused: it takes no new work for now.")
    if session is None and not project.items.filter(claimable=True).exists():
        return _turnaway(project, platform, Reason.FULL, "This study has all the participants it needs.")
    return None


@dataclass(frozen=True)
class PlatformStudy:
    """A study's study on a platform, as this app created it there: its id there (the STUDY_ID its entry link
    must carry) and the codes it registered (the only ones a participant may be shown)."""

    study_id: str
    codes: frozenset[str]


# Where platform studies are known: the recruitment app adds its source at start-up (annotation never
# imports it). None from every source: the study is not on the platform from here, its settings' codes count.
_platform_study_sources: list[Callable[[Project, str], PlatformStudy | None]] = []


def register_platform_study_source(source: Callable[[Project, str], PlatformStudy | None]) -> None:
    if source not in _platform_study_sources:
        _platform_study_sources.append(source)


def platform_study(project: Project, platform: str) -> PlatformStudy | None:
    return next((found for source in _platform_study_sources if (found := source(project, platform))), None)


SCREENED_OUT_MESSAGE = (
    "You were screened out of this study. Prolific pays you for screening out when you go back with the code "
    "below: do not return the study on Prolific, since returning it gives up that payment."
)


def leaving_code(project: Project, platform: str, screened_out: bool = False) -> str:
    """The Prolific code of a participant who leaves without completing: the screen-out code for one who may
    not take part (ineligible, failed the qualification) where the study has one, else the returned code.
    A code the linked Prolific study never registered is never shown (Prolific would not know it). MTurk has
    no such codes: its workers return the HIT."""
    if platform != CrowdSession.Platform.PROLIFIC:
        return ""
    linked = platform_study(project, platform)

    def shown(name: str) -> str:
        code = study_setting(project, name)
        return code if code and (linked is None or code in linked.codes) else ""

    returned = shown("returned_code")
    return (shown("screened_out_code") or returned) if screened_out else returned


def is_screen_out_code(project: Project, code: str) -> bool:
    """Whether `code` is the study's screen-out code: its holder is paid for screening out and must not return."""
    return bool(code) and code == study_setting(project, "screened_out_code")


def leaving_message(project: Project, code: str) -> str:
    """What a participant leaving with `code` reads: the screen-out note with a screen-out code (the study's
    returned message asks them to return, which would forfeit that payment), else the returned message."""
    return SCREENED_OUT_MESSAGE if is_screen_out_code(project, code) else study_setting(project, "returned_message")


def _turnaway(project: Project, platform: str, reason: str, explanation: str, status: int = 200) -> Turnaway:
    code = leaving_code(project, platform, screened_out=reason == Reason.INELIGIBLE)
    return Turnaway(
        reason=reason,
        explanation=explanation,
        platform=platform,
        title="" if project.status == Project.Status.DRAFT else project.title,
        message=leaving_message(project, code),
        code=code,
        return_url=prolific_url(code) if code else "",
        status=status,
    )


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
