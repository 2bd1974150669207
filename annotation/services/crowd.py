"""Crowd platform entry: identify a worker from Prolific or MTurk link parameters, give a completion code."""
from __future__ import annotations

import hashlib
import hmac
import re

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import CrowdSession, Project
from annotation.services.access import WORKER, grant_role

PLATFORM_PARAMETERS = {
    CrowdSession.Platform.PROLIFIC: ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    CrowdSession.Platform.MTURK: ("workerId", "hitId", "assignmentId"),
}
SAFE_ID = re.compile(r"^[A-Za-z0-9_\-]{1,100}$")


class EntryError(ValueError):
    pass


def identify(params) -> tuple[str, str, str, str]:
    """(platform, participant id, study id, session id) from the query parameters of an entry link."""
    for platform, (participant, study, session) in PLATFORM_PARAMETERS.items():
        if params.get(participant):
            values = [params.get(participant, ""), params.get(study, ""), params.get(session, "")]
            for name, value in zip((participant, study, session), values):
                if value and not SAFE_ID.match(value):
                    raise EntryError(f"{name} has characters that are not allowed")
            if platform == CrowdSession.Platform.MTURK and values[2] == "ASSIGNMENT_ID_NOT_AVAILABLE":
                raise EntryError("this is an MTurk preview: accept the HIT to start")
            return platform, *values
    raise EntryError("the link lacks PROLIFIC_PID (Prolific) or workerId (MTurk)")


def enter(project: Project, params) -> CrowdSession:
    """The worker account and session behind an entry link, created on first use."""
    platform, participant, study, session_id = identify(params)
    User = get_user_model()
    with transaction.atomic():
        user, created = User.objects.get_or_create(username=f"{platform}-{participant}"[:150])
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
            grant_role(user, WORKER)
        try:
            with transaction.atomic():
                session, _ = CrowdSession.objects.get_or_create(
                    project=project, platform=platform, participant_id=participant, session_id=session_id,
                    defaults={"worker": user, "study_id": study},
                )
        except IntegrityError:  # the same link opened twice at once
            session = CrowdSession.objects.get(project=project, platform=platform, participant_id=participant, session_id=session_id)
    return session


def completion_code(session: CrowdSession) -> str:
    """The project's fixed code when it sets one (Prolific studies use one per study), else a code
    derived from the session, which a researcher can recompute to check a claimed completion."""
    fixed = session.project.options.get("completion_code")
    if fixed:
        return str(fixed)
    message = f"{session.project.slug}:{session.platform}:{session.participant_id}:{session.session_id}"
    return hmac.new(settings.SECRET_KEY.encode(), message.encode(), hashlib.sha256).hexdigest()[:10].upper()


def complete(session: CrowdSession) -> str:
    if not session.completion_code:
        session.completion_code = completion_code(session)
        session.completed_at = timezone.now()
        session.save(update_fields=["completion_code", "completed_at"])
    return session.completion_code
