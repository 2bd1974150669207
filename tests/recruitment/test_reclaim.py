"""Reclaiming places: a rejected participant's answers leave every figure (flagged with the reason) and the
page held by one who returned, timed out or was rejected goes back to the pool."""

import pytest

from annotation.models import Annotation, Assignment, WorkerStatus
from annotation.services.assignments import claim_page
from recruitment.services import settle, studies
from tests.recruitment.conftest import SITE, arrive

pytestmark = pytest.mark.django_db
MESSAGE = "The answers given do not follow the instructions of this study: every pair was given one label. " * 2


@pytest.fixture
def on_prolific(study, author, standin):
    link = studies.create_draft(studies.link_of(study), SITE, author)
    study.refresh_from_db()
    return link


def test_a_rejected_participants_answers_are_excluded_with_the_reason(on_prolific, study, author, standin):
    session = arrive(study, "PBAD", pages=2)
    submission = standin.add_submission(on_prolific.prolific_study_id, "PBAD", "AWAITING REVIEW")
    settle.pull(on_prolific)
    settle.reject(on_prolific, submission, "LOW_EFFORT", MESSAGE, author)
    answers = Annotation.objects.filter(worker=session.worker)
    assert answers.exists() and not answers.filter(excluded=False).exists()
    status = WorkerStatus.objects.get(project=study, worker=session.worker)
    assert status.exclude_answers and status.block_reason == "rejected on Prolific (LOW_EFFORT)"


@pytest.mark.parametrize("status", ["RETURNED", "TIMED-OUT"])
def test_the_page_of_one_who_left_goes_back_to_the_pool(on_prolific, study, standin, status):
    session = arrive(study, "PLEFT")
    page = claim_page(study, session.worker)
    submission = standin.add_submission(on_prolific.prolific_study_id, "PLEFT", "ACTIVE")
    settle.pull(on_prolific)
    standin.submissions[submission]["status"] = status
    settle.pull(on_prolific)
    page.refresh_from_db()
    assert page.status == Assignment.Status.RELEASED
