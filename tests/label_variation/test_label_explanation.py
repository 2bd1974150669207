"""Labels with explanations (LiveNLI / VariErr round 1) and their validation (VariErr round 2): answers with
explanations and highlights, what is refused and stores nothing, the pairs sent to validation, the author
kept from judging their own explanation, verdicts, agreement on label sets and exports."""

import json
import random
from datetime import timedelta

import pytest
from django.utils import timezone
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import masi_distance as nltk_masi
from rest_framework.test import APIClient

from annotation.models import Annotation, Assignment, Claim, Project
from annotation.services.analysis.agreement import project_agreement, project_report
from annotation.services.answers import SubmissionError
from annotation.services.assignments import claim_page, submit_page
from annotation.services.linking import send_to_validation, writer_figures
from annotation.services.projects import update_project
from annotation.tasktypes import AnswerError, get_task_type
from common.schema import SettingError
from dataset_io.services import exporters
from label_variation.tasktypes.explanation_validation import DEMO_ROWS, OWN_EXPLANATION
from metrics.agreement import krippendorff_alpha, krippendorff_alpha_sets, masi_distance

pytestmark = pytest.mark.django_db

TASK = get_task_type("label_explanation")
VALIDATION = get_task_type("explanation_validation")
OPTIONS = TASK.default_options()
BECAUSE = "the statement only reorders the two clauses of the context"


def explained(text=BECAUSE, premise=(), hypothesis=()):
    return {
        "explanation": text,
        "premise_spans": [list(s) for s in premise],
        "hypothesis_spans": [list(s) for s in hypothesis],
    }


def parse(value, **options):
    return TASK.parse_answer({"value": value}, {**OPTIONS, **options})


@pytest.fixture
def varierr_item(shared_data):
    """The first item of the real VariErr file: its context and statement."""
    with (shared_data / "varierr" / "varierr.json").open() as lines:
        record = json.loads(next(lines))
    return {"id": record["id"], "premise": record["context"], "hypothesis": record["statement"]}


# ---------------------------------------------------------------- answers


def test_an_answer_is_normalised_in_label_order_with_tidied_explanations():
    raw, value = parse(
        {
            "labels": {
                "contradiction": explained("  It   leaves out\nthe rural routes entirely. "),
                "e": explained(premise=[(0, 4), (5, 7)]),
            },
            "idk": False,
        }
    )
    assert value == {
        "labels": {
            "e": explained(premise=[(0, 4), (5, 7)]),
            "c": explained("It leaves out the rural routes entirely."),
        },
        "idk": False,
    }
    assert list(raw["labels"]) == ["contradiction", "e"]  # raw: as submitted


def test_the_form_sends_the_answer_as_json_text():
    answer = {"labels": {"n": explained()}, "idk": False}
    assert parse(json.dumps(answer))[1] == answer


@pytest.mark.parametrize(
    "value, field, words",
    [
        ("not json", "value", '"labels"'),
        ({"labels": {}, "idk": False}, "value.labels", 'pick at least one label, or answer "I don\'t know"'),
        ({"labels": {"e": explained("Too short here.")}}, "value.labels.e.explanation", "3 words; write at least 5"),
        ({"labels": {"e": explained("")}}, "value.labels.e.explanation", "explain why this label fits"),
        ({"labels": {"x": explained()}}, "value.labels.x", "must be one of"),
        ({"labels": {"e": explained(), "entailment": explained()}}, "value.labels.entailment", "picked already"),
        ({"labels": {"e": {**explained(), "score": 3}}}, "value.labels.e.score", "is not part of a label's answer"),
        (
            {"labels": {"n": explained(premise=[(5, 3)])}},
            "value.labels.n.premise_spans[0]",
            "ends at 3, not after its start",
        ),
        ({"labels": {"n": explained(premise=[(-1, 3)])}}, "value.labels.n.premise_spans[0]", "before the text"),
        (
            {"labels": {"n": explained(premise=[(0, 9), (4, 12)])}},
            "value.labels.n.premise_spans[1]",
            "sort spans, no overlaps",
        ),
        (
            {"labels": {"n": explained(premise=[(9, 12), (0, 4)])}},
            "value.labels.n.premise_spans[1]",
            "sort spans, no overlaps",
        ),
        (
            {"labels": {"c": explained(hypothesis=[(0, "4")])}},
            "value.labels.c.hypothesis_spans[0]",
            "two whole numbers",
        ),
        ({"labels": {"c": {**explained(), "hypothesis_spans": "0-4"}}}, "value.labels.c.hypothesis_spans", "a list of"),
        ({"labels": {"e": explained()}, "idk": True}, "value.labels", "picks no label"),
        ({"labels": {"e": explained()}, "idk": "no"}, "value.idk", "true or false"),
        ({"labels": {"e": explained()}, "confidence": 3}, "value.confidence", "is not part of an answer"),
    ],
)
def test_bad_answers_are_refused_naming_the_field(value, field, words):
    with pytest.raises(AnswerError) as error:
        parse(value)
    assert error.value.field == field and words in error.value.message


def test_single_label_studies_take_one_label_and_idk_can_be_switched_off():
    two = {"labels": {"e": explained(), "n": explained()}}
    assert list(parse(two)[1]["labels"]) == ["e", "n"]
    with pytest.raises(AnswerError, match="pick one label; 2 were picked"):
        parse(two, multiple_labels=False)
    assert parse({"labels": {}, "idk": True})[1] == {"labels": {}, "idk": True}
    with pytest.raises(AnswerError) as error:
        parse({"labels": {}, "idk": True}, allow_idk=False)
    assert error.value.field == "value.idk"
    with pytest.raises(AnswerError) as error:
        parse({"labels": {}}, allow_idk=False)
    assert error.value.message == "pick at least one label"


def test_explanation_limits_are_settings(make_project):
    assert parse({"labels": {"e": explained("Reordered clauses.")}}, min_explanation_words=2)
    with pytest.raises(AnswerError, match="characters; write at most 30"):
        parse({"labels": {"e": explained()}}, max_explanation_characters=30)
    with pytest.raises(SettingError) as error:
        make_project("label_explanation", min_explanation_words=20, max_explanation_characters=30)
    assert "must leave room for 20 words" in error.value.errors["max_explanation_characters"]


# ---------------------------------------------------------------- the study: submits through the real service


@pytest.fixture
def study(make_project, import_rows, varierr_item):
    project = make_project("label_explanation", slug="explain", items_per_page=1, redundancy=2, max_annotations=2)
    import_rows(project, [varierr_item])
    return project


def answer(project, worker, value):
    page = claim_page(project, worker)
    assert page is not None
    item_id = page.claims.get().item_id
    return submit_page(page.pk, worker, {str(item_id): {"value": value}})


def test_a_highlight_past_the_end_of_the_text_is_refused_and_nothing_is_stored(study, worker, varierr_item):
    end = len(varierr_item["hypothesis"])
    page = claim_page(study, worker)
    item_id = page.claims.get().item_id
    value = {"labels": {"e": explained(), "c": explained(hypothesis=[(0, 5), (end - 3, end + 1)])}}
    with pytest.raises(SubmissionError) as error:
        submit_page(page.pk, worker, {str(item_id): {"value": value}})
    assert error.value.field == f"answers[{item_id}].value.labels.c.hypothesis_spans[1]"
    assert f"ends at {end + 1}, after the end of the hypothesis ({end} characters)" == error.value.message
    assert not Annotation.objects.exists()
    value["labels"]["c"] = explained(hypothesis=[(0, 5), (end - 3, end)])  # up to the last character is fine
    assert submit_page(page.pk, worker, {str(item_id): {"value": value}}).created == 1


def test_an_explanation_under_the_minimum_is_refused_on_the_api_and_nothing_is_stored(study, worker):
    client = APIClient()
    client.force_authenticate(worker)
    page = client.post(f"/api/projects/{study.slug}/claim/")
    assert page.status_code == 201
    body = page.json()
    item_id = body["items"][0]["id"]
    response = client.post(
        f"/api/assignments/{body['id']}/submit/",
        {"answers": {str(item_id): {"value": {"labels": {"n": explained("Just three words.")}}}}},
        format="json",
    )
    assert response.status_code == 409  # the body fits the schema; the task type's rule refuses it
    assert response.json()["field"] == f"answers[{item_id}].value.labels.n.explanation"
    assert not Annotation.objects.exists()


def test_the_aggregate_counts_annotators_per_label(study, make_user):
    answer(study, make_user("a"), {"labels": {"e": explained(), "c": explained()}})
    answer(study, make_user("b"), {"labels": {"c": explained()}})
    item = study.items.get()
    assert (item.status, item.aggregate) == ("done", {"e": 1, "n": 0, "c": 2})
    assert TASK.display(item.aggregate, study.options) == "Entailment 1, Neutral 0, Contradiction 2"
    assert TASK.aggregate([{"labels": {}, "idk": True}], OPTIONS).value is None


# ---------------------------------------------------------------- agreement on label sets


def test_masi_alpha_matches_nltk_and_nominal_alpha():
    rng = random.Random(28)
    sets = [frozenset(s) for s in ("e", "n", "c", "en", "nc", "ec", "enc")]
    units = [[rng.choice(sets) for _ in range(rng.randint(1, 4))] for _ in range(60)]
    data = [(f"a{coder}", f"u{unit}", labels) for unit, sets_ in enumerate(units) for coder, labels in enumerate(sets_)]
    assert krippendorff_alpha_sets(units) == pytest.approx(AnnotationTask(data=data, distance=nltk_masi).alpha())
    for first in sets:
        for second in sets:
            assert masi_distance(first, second) == pytest.approx(nltk_masi(first, second))
    # With "equal or not" as the distance it is nominal alpha over the sets.
    codes = {labels: index for index, labels in enumerate(sets)}
    counts = [[unit.count(labels) for labels in sets] for unit in units]
    nominal = krippendorff_alpha_sets(units, distance=lambda a, b: float(a != b))
    assert nominal == pytest.approx(krippendorff_alpha(value_counts=counts, level="nominal"))
    assert codes and masi_distance(frozenset("e"), frozenset("en")) == pytest.approx(1 - 0.5 * 2 / 3)


def test_the_report_gives_masi_alpha_on_the_collected_label_sets(study, make_user):
    answer(study, make_user("a"), {"labels": {"e": explained(), "c": explained()}})
    answer(study, make_user("b"), {"labels": {"c": explained()}})
    figures = project_agreement(study, bootstrap=0)
    assert figures["level"] is None and "MASI" in figures["unavailable"]["agreement"]
    table = project_report(study, bootstrap=0)["tables"][0]
    rows = dict(table["rows"])
    assert table["title"] == "Agreement on the label sets"
    assert rows["Answers with labels"] == 2 and rows["Items with two or more label sets"] == 1
    # One item: the disagreement observed is all there is to expect, so alpha is 0; both picked
    # contradiction, so nothing differs on it and its alpha is undefined.
    assert rows["Krippendorff's alpha, MASI distance on label sets"] == "0.000"
    assert rows["Krippendorff's alpha, Entailment picked or not"] == "0.000"
    assert rows["Krippendorff's alpha, Contradiction picked or not"] == "—"
    assert rows["Answers picking two or more labels"] == 1


# ---------------------------------------------------------------- validation (VariErr round 2)


@pytest.fixture
def sent(study, make_user):
    """Two workers' explanations, sent to validation: (validation project, first writer, second writer)."""
    first, second = make_user("first"), make_user("second")
    answer(
        study,
        first,
        {"labels": {"e": explained(premise=[(0, 4)]), "c": explained("It drops the rural routes completely.")}},
    )
    answer(study, second, {"labels": {"n": explained("Nobody can tell the real reason here.")}})
    report = send_to_validation(study)
    assert (report.created, report.already_sent) == (3, 0)
    study.refresh_from_db()
    # Two writers give each pair one validator; the author asks three of the validation study itself.
    return update_project(study.validation_project, items_per_page=10, redundancy=3, max_annotations=3), first, second


def test_each_picked_label_is_one_validation_item_carrying_its_explanation(sent, study, varierr_item):
    validation, _, _ = sent
    assert validation.task_type == "explanation_validation"
    examples = list(validation.examples.order_by("position"))
    answers = {a.worker.username: a for a in Annotation.objects.filter(item__project=study)}
    assert [(e.origin_id, e.origin_target, e.source_label) for e in examples] == [
        (answers["first"].id, "e", "e"),
        (answers["first"].id, "c", "c"),
        (answers["second"].id, "n", "n"),
    ]
    assert examples[0].source_data == {
        "label": "e",
        "explanation": BECAUSE,
        "premise_spans": [[0, 4]],
        "hypothesis_spans": [],
    }
    assert (examples[0].premise, examples[0].hypothesis) == (varierr_item["premise"], varierr_item["hypothesis"])
    assert not Annotation.objects.filter(item__project=validation).exists()  # the writer casts no vote


def test_a_validator_never_gets_their_own_explanations(sent):
    validation, first, second = sent
    page = claim_page(validation, first)
    assert [c.item.example.origin_target for c in page.claims.select_related("item__example")] == ["n"]
    page = claim_page(validation, second)
    assert sorted(c.item.example.origin_target for c in page.claims.select_related("item__example")) == ["c", "e"]


def test_judging_ones_own_explanation_is_refused_and_nothing_is_stored(sent):
    validation, first, _ = sent
    own = validation.items.get(example__origin_target="e")
    # A page holding the author's own item (claims never give one): the submit itself refuses it.
    Claim.objects.filter(item=own, worker=first).delete()
    page = Assignment.objects.create(project=validation, worker=first, expires_at=timezone.now() + timedelta(hours=1))
    Claim.objects.create(assignment=page, item=own, worker=first, position=0)
    own.active_claims += 1
    own.save()
    with pytest.raises(SubmissionError) as error:
        submit_page(page.pk, first, {str(own.id): {"value": {"makes_sense": True}}})
    assert (error.value.field, error.value.message) == (f"answers[{own.id}].value", OWN_EXPLANATION)
    assert not Annotation.objects.filter(item__project=validation).exists()


def test_verdicts_come_back_to_the_writers_table(sent, study, make_user):
    validation, _, _ = sent
    judges = [make_user(f"judge{n}") for n in range(3)]
    says = {"e": [True, True, False], "c": [False, False, True], "n": [True, True, True]}
    for number, judge in enumerate(judges):
        page = claim_page(validation, judge)
        answers = {
            str(c.item_id): {"value": "yes" if says[c.item.example.origin_target][number] else "no"}
            for c in page.claims.select_related("item__example")
        }
        submit_page(page.pk, judge, answers)
    items = {item.example.origin_target: item for item in validation.items.select_related("example")}
    assert {label: item.aggregate for label, item in items.items()} == {
        "e": {"makes_sense": True},
        "c": {"makes_sense": False},
        "n": {"makes_sense": True},
    }
    assert TASK.verdict(items["c"], [], study.options) == "does not make sense"
    figures = {(f["writer"], f["target"]): (f["validated"], f["confirmed"]) for f in writer_figures(study)}
    assert figures == {("first", "e"): (1, 1), ("first", "c"): (1, 0), ("second", "n"): (1, 1)}
    table = dict(project_report(validation, bootstrap=0)["tables"][0]["rows"])
    assert table["Judgments"] == 9 and table["Judged to make sense"] == "6 (67%)"
    counts = [[2, 1], [1, 2], [3, 0]]
    assert (
        table["Krippendorff's alpha (nominal) on makes sense"]
        == f"{krippendorff_alpha(value_counts=counts, level='nominal'):.3f}"
    )


def test_a_validation_answer_is_yes_or_no():
    assert VALIDATION.parse_answer({"value": " No "}, {})[1] == {"makes_sense": False}
    assert VALIDATION.parse_answer({"value": {"makes_sense": True}}, {})[1] == {"makes_sense": True}
    with pytest.raises(AnswerError) as error:
        VALIDATION.parse_answer({"value": {"makes_sense": "perhaps"}}, {})
    assert error.value.field == "value"
    tie = VALIDATION.aggregate([{"makes_sense": True}, {"makes_sense": False}], {})
    assert (tie.value, tie.tied) == (None, False)  # settled with no majority, never for an adjudicator


# ---------------------------------------------------------------- exports and demos


def test_exports_carry_labels_explanation_lengths_and_spans(study, worker):
    answer(
        study,
        worker,
        {"labels": {"e": explained(premise=[(0, 4)]), "n": explained("Perhaps the reason is another one.")}},
    )
    line = "".join(exporters.export(study, "jsonl")).splitlines()[0]
    record = json.loads(line)["nli_studio"]["annotations"][0]
    assert record["labels"] == ["e", "n"] and record["idk"] is False
    assert record["explanation_words"] == {"e": len(BECAUSE.split()), "n": 6}
    assert record["premise_spans"] == {"e": [[0, 4]], "n": []} and record["hypothesis_spans"] == {"e": [], "n": []}


def test_the_demo_rows_highlight_whole_words_inside_their_texts():
    for row in DEMO_ROWS:
        for text in ("premise", "hypothesis"):
            for start, end in row[f"{text}_spans"]:
                span = row[text][start:end]
                assert 0 <= start < end <= len(row[text]) and span == span.strip() and span, (row["id"], span)
                assert start == 0 or row[text][start - 1] == " ", (row["id"], span)
    for task in (TASK, VALIDATION):
        assert [demo.slug for demo in task.demos()]


def test_projects_of_both_types_are_created_with_their_defaults(make_project):
    explain = make_project("label_explanation", slug="e1")
    assert (
        explain.options["multiple_labels"],
        explain.options["min_explanation_words"],
        explain.options["allow_idk"],
    ) == (True, 5, True)
    assert make_project("explanation_validation", slug="v1").redundancy == 3
    assert Project.objects.count() == 2
