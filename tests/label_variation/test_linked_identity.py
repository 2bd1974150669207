"""One person, one annotator across linked studies: a Prolific participant who wrote explanations in round 1
and arrives in the linked validation study (round 2) from the same Prolific identity is the same account, so
they never judge their own explanations and every export names them once."""

import io
import json

import pytest
from django.contrib.auth import SESSION_KEY, get_user_model
from django.test import Client

from annotation.models import CrowdSession
from annotation.services import access
from annotation.services.assignments import claim_page, submit_page
from annotation.services.linking import send_to_validation
from annotation.services.projects import update_project
from dataset_io.formats import ExportOptions
from dataset_io.services import exporters
from dataset_io.services.provenance import annotator_id
from dataset_io.services.validation import validate
from tests.label_variation.explanations import HYPOTHESIS, PREMISE, explained

pytestmark = pytest.mark.django_db
User = get_user_model()


def arrive(project, pid: str, study_id: str) -> User:
    """The participant follows the study's Prolific link; the account it logs in."""
    client = Client()
    response = client.get(f"/enter/{project.slug}/?PROLIFIC_PID={pid}&STUDY_ID={study_id}&SESSION_ID={study_id}-{pid}")
    assert response.status_code == 302, response.content[:300]
    return User.objects.get(pk=client.session[SESSION_KEY])


@pytest.fixture
def rounds(make_project, import_rows):
    """Round 1 on Prolific: three participants explain the one pair; their pairs go to round 2, also on
    Prolific. Returns (round 1, round 2, {pid: round-1 account})."""
    project = make_project(
        "label_explanation", slug="prolific-r1", redundancy=3, max_annotations=3, items_per_page=1, audience="prolific"
    )
    import_rows(project, [{"id": "train", "premise": PREMISE, "hypothesis": HYPOTHESIS}])
    writers = {}
    for pid in ("PIDA", "PIDB", "PIDC"):
        writer = writers[pid] = arrive(project, pid, "R1")
        page = claim_page(project, writer)
        (claim,) = page.claims.all()
        labels = {"e": explained(f"Participant {pid} reads a commute to work in this scene.")}
        submit_page(page.pk, writer, {str(claim.item_id): {"value": {"labels": labels, "idk": False}}})
    send_to_validation(project)
    project.refresh_from_db()
    validation = update_project(project.validation_project, items_per_page=10)
    assert validation.audience == "prolific"
    return project, validation, writers


def test_the_same_prolific_identity_in_round_two_is_the_same_annotator(rounds):
    project, validation, writers = rounds
    judge = arrive(validation, "PIDA", "R2")
    assert judge == writers["PIDA"]
    assert CrowdSession.objects.filter(worker=judge).count() == 2  # one session per study, one account
    assert set(access.workable_projects(judge)) == {project, validation}
    page = claim_page(validation, judge)
    own = {c.item.example.origin.worker_id for c in page.claims.select_related("item__example__origin")}
    assert own == {writers["PIDB"].pk, writers["PIDC"].pk}  # never their own explanation
    submit_page(page.pk, judge, {str(c.item_id): {"value": {"makes_sense": True}} for c in page.claims.all()})

    text = "".join(exporters.export(project, "varierr", ExportOptions(include_unanswered=True)))
    assert validate(lambda: io.BytesIO(text.encode()), "varierr").valid
    (record,) = [json.loads(line) for line in text.splitlines()]
    same = annotator_id(project, judge.pk)
    authors = [entry["annotator"] for entry in record["entailment"]]
    judges = {j["annotator"] for entry in record["entailment"] for j in entry["judgments"]}
    assert same in authors and judges == {same}  # named once: the writer and the judge are one annotator
    for entry in record["entailment"]:
        assert all(j["annotator"] != entry["annotator"] for j in entry["judgments"])


def test_another_participant_arriving_only_in_round_two_gets_an_account_of_that_study_alone(rounds):
    project, validation, writers = rounds
    newcomer = arrive(validation, "PIDZ", "R2")
    assert newcomer not in writers.values()
    assert set(access.workable_projects(newcomer)) == {validation}
    client = Client()
    client.force_login(newcomer)
    assert client.get(f"/work/{project.slug}/").status_code == 404
    assert len(claim_page(validation, newcomer).claims.all()) == 3  # every writer's pair


def test_a_round_one_arrival_after_round_two_is_the_same_account_too(rounds, import_rows):
    project, validation, _ = rounds
    import_rows(project, [{"id": "more", "premise": PREMISE, "hypothesis": "A man is on his way home."}])
    judge = arrive(validation, "PIDN", "R2")
    assert arrive(project, "PIDN", "R1") == judge
