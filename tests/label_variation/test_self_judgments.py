"""The authors' self-check (VariErr's round 2): an explanation's author judges their own label-explanation
pairs, kept apart from the validators' votes; only their own, once each, all or nothing; VariErr's rule then
decides by the authors' judgments, and the varierr export carries them under the author's id."""

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.services.assignments import claim_page, submit_page
from annotation.services.projects import update_project
from dataset_io.formats import ExportOptions
from dataset_io.services import exporters
from dataset_io.services.provenance import annotator_id
from dataset_io.services.validation import validate
from label_variation.models import SelfJudgment
from label_variation.services.self_judgments import (
    SelfJudgmentError,
    judged_count,
    pending_count,
    pending_pairs,
    record_self_judgments,
)
from label_variation.services.variation import explanations, label_verdicts
from tests.label_variation.explanations import explain_and_send

pytestmark = pytest.mark.django_db
User = get_user_model()


@pytest.fixture
def study(make_project, import_rows, make_user):
    """One pair: the writer explains e and n, another writer e; three validators find every explanation
    makes sense. Returns (study, writer, other writer, {(writer, label): validation example})."""
    project = make_project("label_explanation", slug="self-check", redundancy=2, max_annotations=2)
    writer, other = explain_and_send(project, import_rows, make_user)
    validation = update_project(project.validation_project, items_per_page=10, redundancy=3, max_annotations=3)
    for number in range(3):
        validator = make_user(f"validator{number}", "worker")
        page = claim_page(validation, validator)
        submit_page(page.pk, validator, {str(c.item_id): {"value": "yes"} for c in page.claims.all()})
    pairs = {(e.origin.worker, e.origin_target): e for e in validation.examples.select_related("origin__worker")}
    return project, writer, other, pairs


def test_authors_see_only_their_own_pairs_not_judged_yet(study, make_user):
    project, writer, other, pairs = study
    assert pending_pairs(project, writer) == [pairs[writer, "e"], pairs[writer, "n"]]
    assert pending_pairs(project, other) == [pairs[other, "e"]]
    assert pending_pairs(project, make_user("validator9", "worker")) == []
    record_self_judgments(project, writer, {pairs[writer, "e"].pk: "yes"})
    assert pending_pairs(project, writer) == [pairs[writer, "n"]]
    assert (pending_count(project, writer), judged_count(project, writer)) == (1, 1)


def test_judging_another_authors_pair_is_refused_and_stores_nothing(study):
    project, writer, other, pairs = study
    theirs = pairs[other, "e"].pk
    with pytest.raises(SelfJudgmentError) as refused:
        record_self_judgments(project, writer, {pairs[writer, "e"].pk: "yes", theirs: "no"})
    assert refused.value.field == f"pair {theirs}"
    assert "only their own" in refused.value.message
    assert not SelfJudgment.objects.exists()  # the writer's own judgment on the same page is not kept either


@pytest.mark.parametrize(
    ("judgments", "field", "says"),
    [
        ({}, "judgments", "judge at least one"),
        ({"x": "yes"}, "pair x", "is not a pair id"),
        ({"999999": "yes"}, "pair 999999", "not one of your explanations"),
        ("maybe", None, "makes sense"),
    ],
)
def test_bad_judgments_are_refused_with_what_is_wrong(study, judgments, field, says):
    project, writer, _, pairs = study
    if judgments == "maybe":
        judgments, field = {pairs[writer, "n"].pk: "maybe"}, f"pair {pairs[writer, 'n'].pk}"
    with pytest.raises(SelfJudgmentError) as refused:
        record_self_judgments(project, writer, judgments)
    assert refused.value.field == field and says in refused.value.message
    assert not SelfJudgment.objects.exists()


def test_a_judgment_is_kept_never_replaced(study):
    project, writer, _, pairs = study
    pair = pairs[writer, "n"].pk
    assert record_self_judgments(project, writer, {pair: "no"}) == 1
    with pytest.raises(SelfJudgmentError, match="judged this explanation already"):
        record_self_judgments(project, writer, {pair: "yes", pairs[writer, "e"].pk: "yes"})
    assert list(SelfJudgment.objects.values_list("example_id", "makes_sense")) == [(pair, False)]


def test_a_study_without_validation_has_no_self_check(make_project, worker):
    project = make_project("label_explanation", slug="unlinked")
    assert pending_pairs(project, worker) == []
    with pytest.raises(SelfJudgmentError, match="no validation round"):
        record_self_judgments(project, worker, {"1": "yes"})


def test_the_rule_follows_the_authors_own_judgment_over_the_peers(study, django_assert_num_queries):
    project, writer, other, pairs = study
    # VariErr's rule waits for the writers: nothing is an error (nor confirmed) before they self-check.
    assert list(label_verdicts(project).values()) == [{"e": "pending", "n": "pending"}]
    record_self_judgments(project, writer, {pairs[writer, "e"].pk: "yes", pairs[writer, "n"].pk: "no"})
    with django_assert_num_queries(4):  # imported records, answers, validators' votes, self-judgments
        read = explanations(project)
    own = {(e.author, e.label): e for e in read}
    assert own[f"worker:{writer.id}", "n"].self_judgment is False
    assert own[f"worker:{writer.id}", "n"].peer_judgments == (True, True, True)
    validators = User.objects.filter(username__startswith="validator")
    assert sorted(own[f"worker:{writer.id}", "n"].peer_judges) == sorted(
        annotator_id(project, v.id) for v in validators
    )
    assert own[f"worker:{other.id}", "e"].self_judgment is None
    # VariErr's rule: n is an error though its validators all said it makes sense; e is confirmed by its author.
    assert list(label_verdicts(project).values()) == [{"e": "supported", "n": "error"}]


def test_the_peer_majority_is_a_rule_the_author_picks_and_the_report_names_as_the_apps(study, author):
    project, writer, _, pairs = study
    project = update_project(project, verdict_rule="peer_majority")
    assert list(label_verdicts(project).values()) == [{"e": "supported", "n": "supported"}]  # peers: all yes
    client = Client()
    client.force_login(author)
    page = client.get(f"/projects/{project.slug}/report/").content.decode()
    assert "peer-majority rule (not VariErr" in page
    record_self_judgments(project, writer, {pairs[writer, "n"].pk: "no"})  # the item is self-judged now
    assert list(label_verdicts(project).values()) == [{"e": "pending", "n": "error"}]


def test_self_check_progress_per_writer_and_item_in_the_report_and_the_api(study, author):
    project, writer, _, pairs = study
    record_self_judgments(project, writer, {pairs[writer, "e"].pk: "yes"})
    client = Client()
    client.force_login(author)
    body = client.get(f"/api/v1/projects/{project.slug}/variation/").json()
    assert body["self_check"]["open"] is True
    assert body["self_check"]["writers"] == [
        {"writer": "other", "judged": 0, "pending": 1},
        {"writer": "writer", "judged": 1, "pending": 1},
    ]
    assert list(body["self_check"]["items"].values()) == [{"judged": 1, "pending": 2}]
    assert body["study"]["pending"] == 1
    page = client.get(f"/projects/{project.slug}/report/").content.decode()
    assert "Self-check: each writer" in page
    assert "Items with a label waiting for its writer" in page


def test_the_varierr_export_carries_the_authors_judgment_under_their_id(study):
    project, writer, other, pairs = study
    record_self_judgments(project, writer, {pairs[writer, "e"].pk: "yes", pairs[writer, "n"].pk: "no"})
    text = "".join(exporters.export(project, "varierr", ExportOptions(include_unanswered=True)))
    assert validate(lambda: io.BytesIO(text.encode()), "varierr").valid
    (record,) = [json.loads(line) for line in text.splitlines()]
    author = annotator_id(project, writer.id)
    validators = [annotator_id(project, user.id) for user in User.objects.filter(username__startswith="validator")]
    (neutral,) = record["neutral"]
    assert neutral["annotator"] == author
    # The author's own judgment first under their id, then each validator's under theirs, as the release has it.
    assert neutral["judgments"][0] == {"annotator": author, "makes_sense": False}
    assert sorted(j["annotator"] for j in neutral["judgments"][1:]) == sorted(validators)
    assert [j["makes_sense"] for j in neutral["judgments"][1:]] == [True] * 3
    assert len(set(validators) | {author, annotator_id(project, other.id)}) == 5
    first = [e["judgments"][0]["annotator"] for e in record["entailment"]]
    assert first[0] == author and first[1] in validators  # the other writer gave no judgment of their own
    assert (record["error_labels"], record["label_set_round_2"]) == (["neutral"], ["entailment"])
    # Round 2 counts what the authors confirmed, as the release does: only the writer's e.
    assert record["label_count_round_2"] == {"entailment": 1.0, "neutral": None, "contradiction": None}


def test_the_page_lists_the_pairs_and_stores_a_page_of_judgments(study):
    project, writer, other, pairs = study
    client = Client()
    client.force_login(writer)
    no_work = client.get(f"/work/{project.slug}/").content.decode()
    assert "2 of your explanations wait for your own judgment" in no_work
    assert f"/work/{project.slug}/explanations/" in no_work
    page = client.get(f"/work/{project.slug}/explanations/").content.decode()
    assert "Nothing in the sentence says where the train is going." in page
    assert "Suits and crowded trains" not in page  # the other writer's
    assert page.count('type="radio"') == 4

    refused = client.post(f"/work/{project.slug}/explanations/", {f"judgment_{pairs[other, 'e'].pk}": "yes"})
    assert refused.status_code == 400 and "is not one of your explanations" in refused.content.decode()
    answered = {f"judgment_{pairs[writer, label].pk}": value for label, value in (("e", "yes"), ("n", "no"))}
    assert client.post(f"/work/{project.slug}/explanations/", answered).status_code == 302
    assert sorted(SelfJudgment.objects.values_list("makes_sense", flat=True)) == [False, True]
    assert "You have judged all your explanations" in client.get(f"/work/{project.slug}/explanations/").content.decode()
    assert "your own judgment" not in client.get(f"/work/{project.slug}/").content.decode()


def test_the_home_list_and_the_study_page_show_the_self_check_to_do(study, author, make_project):
    project, writer, _, pairs = study
    record_self_judgments(project, writer, {pairs[writer, "e"].pk: "yes"})
    client = Client()
    client.force_login(writer)
    home = client.get("/").content.decode()
    assert f'href="/work/{project.slug}/explanations/">Judge your explanations</a>: 1 still to judge' in home
    # A second explanation study in the list costs no more queries: the counts are read once for the page.
    with CaptureQueriesContext(connection) as one_study:
        client.get("/")
    second = make_project("label_explanation", slug="second-study", title="A second explanation study")
    with CaptureQueriesContext(connection) as two_studies:
        listed = client.get("/").content.decode()
    assert second.title in listed and second.task.explains_labels
    assert len(two_studies) == len(one_study)
    record_self_judgments(project, writer, {pairs[writer, "n"].pk: "yes"})
    assert "Judge your explanations" not in client.get("/").content.decode()
    client.force_login(author)
    page = client.get(f"/projects/{project.slug}/").content.decode()
    assert "Writers&#x27; self-check" in page or "Writers' self-check" in page
    assert "<tr><td>other</td><td>0</td><td>1</td></tr>" in page
    assert "<tr><td>writer</td><td>2</td><td>0</td></tr>" in page
