"""Provenance of every answer in an export: who gave it (a stable anonymised id), when, how long it took,
on which page, with which instrument version, the worker's qualification score, and whether it counts.

Annotator ids are keyed hashes (HMAC-SHA256 with the study's own key) of the worker's account id: the same
in every export and format of a study, different between studies, never a crowd platform's ID.
"""

from __future__ import annotations

import hashlib
import hmac

from annotation.models import QualificationAttempt, WorkerStatus
from annotation.services.analysis.annotator_models import worker_reliability

ANNOTATOR_ID_HEX = 12


def annotator_id(project, worker_id: int | None) -> str | None:
    """The anonymised id of a worker in this study's exports; None for imported votes (no worker)."""
    if worker_id is None:
        return None
    mac = hmac.new(project.annotator_key.encode(), str(worker_id).encode(), hashlib.sha256).hexdigest()
    return "a" + mac[:ANNOTATOR_ID_HEX]


class Provenance:
    """What the per-annotation records of one export need about the study's workers, read once:
    their standing (blocked, suspended, why and by whom), their qualification scores and, in nominal studies,
    their reliability by the fast annotator models."""

    def __init__(self, project):
        self.project = project
        self._ids: dict[int, str] = {}
        self.standing = {
            status.worker_id: status
            for status in WorkerStatus.objects.filter(project=project).select_related("blocked_by")
        }
        self.qualification_scores = qualification_scores(project)
        self.reliability = worker_reliability(project)
        from annotation.services.simulation import simulated_worker_ids  # simulation writes answers itself

        self.simulated = simulated_worker_ids()

    def annotator(self, worker_id: int | None) -> str | None:
        if worker_id is None:
            return None
        if worker_id not in self._ids:
            self._ids[worker_id] = annotator_id(self.project, worker_id)
        return self._ids[worker_id]

    def exclusion(self, worker_id: int | None, excluded: bool) -> tuple[str | None, str | None]:
        """(why, who decided) for an excluded answer; (None, None) for one that counts."""
        if not excluded:
            return None, None
        status = self.standing.get(worker_id)
        if status is None:
            return "excluded", None
        reason = "the author blocked this worker and left their answers out"
        if status.block_reason:
            reason += f": {status.block_reason}"
        return reason, status.blocked_by.username if status.blocked_by else None

    def worker_status(self, worker_id: int | None) -> str | None:
        """blocked, suspended or active (None: an imported vote)."""
        if worker_id is None:
            return None
        status = self.standing.get(worker_id)
        if status is not None and status.blocked:
            return "blocked"
        if status is not None and status.suspended:
            return "suspended"
        return "active"


def qualification_scores(project) -> dict[int, float | None]:
    """Each worker's score on the study's qualification test: their passing attempt's, else their latest."""
    if project.qualification_id is None:
        return {}
    scores: dict[int, float | None] = {}
    passed: set[int] = set()
    attempts = QualificationAttempt.objects.filter(test_id=project.qualification_id).order_by("created_at", "id")
    for worker_id, is_pass, details in attempts.values_list("worker_id", "passed", "details"):
        if worker_id in passed:
            continue
        scores[worker_id] = details.get("score")
        if is_pass:
            passed.add(worker_id)
    return scores
