"""A Prolific participant's ID out of the recruitment tables, when forget_participant erases them: their
submissions and bonuses keep their rows under the pseudonym their crowd session gets in the same study (or
one of their own where they never arrived), bonus keys drop the ID, participant groups drop the member.
The Prolific submission ids stay, since paying or settling what is owed goes through them; Prolific's own
participant groups are not changed from here (remove the member on Prolific)."""

from __future__ import annotations

from annotation.models import CrowdSession
from annotation.services.crowd.participants import pseudonym
from recruitment.models import Bonus, ParticipantGroup, ProlificSubmission


def forget_prolific_participant(platform: str, participant_id: str, sessions: list[CrowdSession]) -> int:
    if platform != CrowdSession.Platform.PROLIFIC or not participant_id:
        return 0
    by_project = {session.project_id: pseudonym(session.pk, "participant") for session in sessions}
    changed = 0
    for row in ProlificSubmission.objects.select_related("link").filter(participant_id=participant_id):
        row.participant_id = by_project.get(row.link.project_id) or pseudonym(row.pk, "submission-participant")
        row.save(update_fields=["participant_id"])
        changed += 1
    for bonus in Bonus.objects.filter(participant_id=participant_id):
        bonus.participant_id = by_project.get(bonus.project_id) or pseudonym(bonus.pk, "bonus-participant")
        bonus.idempotency_key = bonus.idempotency_key.replace(participant_id, bonus.participant_id)
        bonus.save(update_fields=["participant_id", "idempotency_key"])
        changed += 1
    # Filtered here: SQLite has no JSON containment lookup, and a study has a few groups.
    for group in [group for group in ParticipantGroup.objects.all() if participant_id in group.participant_ids]:
        group.participant_ids = [member for member in group.participant_ids if member != participant_id]
        group.save(update_fields=["participant_ids"])
        changed += 1
    return changed
