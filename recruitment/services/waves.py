"""Waves: a study cloned from one that ran on Prolific is its next wave. The clone's Prolific link starts with
the earlier study's settings, its Prolific study in the previous-studies blocklist (Prolific's filter), and
the earlier waves remembered, so that the entry link itself turns away the earlier participants the author
chose to keep out (the blocklist may be edited away, or let someone through): rejected, screened out,
returned (or asked to), or everyone who took part."""

from __future__ import annotations

from annotation.models import CrowdSession, Project
from recruitment.models import KeepOut, ProlificLink, ProlificSubmission
from recruitment.services import settle
from recruitment.services.studies import STUDY_FIELDS

# The link's settings a wave starts with (Prolific's ids, codes, secrets and state are the new study's own).
CARRIED = (*(name for name in STUDY_FIELDS if name != "blocked_studies"), "allow_groups", "block_groups")
# The statuses each choice turns away ("all": any submission at all).
KEPT_OUT_STATUSES = {
    KeepOut.REJECTED: (settle.REJECTED,),
    KeepOut.SCREENED_OUT: ("SCREENED OUT",),
    KeepOut.RETURNED: ("RETURNED",),
}

# The turned-away participant's page says which of them they were.
WHO = {
    KeepOut.REJECTED: "had a submission rejected in",
    KeepOut.SCREENED_OUT: "were screened out of",
    KeepOut.RETURNED: "returned, or were asked to return, a submission in",
    KeepOut.ALL: "took part in",
}


def next_wave(source: Project, clone: Project) -> None:
    """The clone's Prolific link, made when a study with a Prolific link is cloned (a clone step). The token is
    not copied: the clone may belong to another author, who links their own account."""
    earlier = ProlificLink.objects.filter(project=source).first()
    if earlier is None:
        return
    waves = list(earlier.earlier_waves)
    if earlier.prolific_study_id and earlier.prolific_study_id not in waves:
        waves.append(earlier.prolific_study_id)
    link = ProlificLink(project=clone, earlier_waves=waves)
    for name in CARRIED:
        setattr(link, name, getattr(earlier, name))
    link.blocked_studies = list(dict.fromkeys([*earlier.blocked_studies, *waves]))
    link.save()


def kept_out(project: Project, platform: str, participant_id: str) -> str | None:
    """Why this participant's entry link is turned away as one of an earlier wave kept out, or None (an arrival
    check: the core's entry link asks it before any session or qualification attempt is made)."""
    if platform != CrowdSession.Platform.PROLIFIC or not participant_id:
        return None
    link = ProlificLink.objects.filter(project=project).first()
    if link is None or not link.earlier_waves or link.keep_out == KeepOut.NONE:
        return None
    earlier = ProlificSubmission.objects.filter(
        link__prolific_study_id__in=link.earlier_waves, participant_id=participant_id
    ).exclude(link=link)
    if link.keep_out == KeepOut.RETURNED:
        earlier = earlier.filter(status__in=KEPT_OUT_STATUSES[KeepOut.RETURNED]) | earlier.filter(return_requested=True)
    elif link.keep_out != KeepOut.ALL:
        earlier = earlier.filter(status__in=KEPT_OUT_STATUSES[link.keep_out])
    if not earlier.exists():
        return None
    return (
        f"You {WHO[link.keep_out]} an earlier wave of this study, and this wave does not take them again. "
        "Please return the study on Prolific (no work here is asked of you)."
    )
