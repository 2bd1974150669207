"""Issue 28's reports and the authors' self-check outside the report page: GET variation/ and reasons/ and the
`variation_report` and `reasons_report` commands give the services' figures (the same as the report page's),
to the study's author and admins only; GET/POST own-explanations/ lets an explanation's author judge their
own pairs, refusing a bad page whole with the field named. Small studies: a few VariErr lines, one written
pair, a few tagged items."""

import io
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from rest_framework.test import APIClient

from annotation.services.projects import update_project
from dataset_io.services.importers import import_stream
from label_variation.models import ReasonTag, SelfJudgment
from label_variation.services import reasons
from label_variation.services.variation import report_json, variation_report
from tests.conftest import SHARED_DATA
from tests.label_variation.explanations import PREMISE, explain_and_send

pytestmark = pytest.mark.django_db
VARIERR_LINES = 12


def api(user=None):
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client


def command(name, *args) -> str:
    out = io.StringIO()
    call_command(name, *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def varierr_study(make_project):
    """A study of the first VariErr items, with their explanations, judgments and ChaosNLI counts."""
    project = make_project("nli_label", slug="varierr-api")
    with open(SHARED_DATA / "varierr" / "varierr.json") as lines:
        text = "".join(line for _, line in zip(range(VARIERR_LINES), lines))
    assert import_stream(project, io.StringIO(text), "varierr").created == VARIERR_LINES
    return project


@pytest.fixture
def tagged_study(make_project, import_rows, author, make_user):
    """A 3-way study whose first item two taggers tagged (then reconciled), and a second item tagged once."""
    project = make_project("nli_label", slug="reasons-api")
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(3)])
    admin = make_user("root", "admin")
    first, second, _ = project.items.order_by("id")
    reasons.tag_item(first, author, ["Probabilistic", "Lexical"])
    reasons.tag_item(first, admin, ["Lexical", "Temporal"])
    reasons.tag_item(first, admin, ["Temporal"], reconcile=True)
    reasons.tag_item(second, author, ["Coreference"])
    return project


@pytest.fixture
def self_check(make_project, import_rows, make_user):
    """A label-explanation study sent to validation: the writer explained e and n, another writer e.
    Returns (study, writer, other writer, {(writer, label): pair in the validation study})."""
    project = make_project("label_explanation", slug="self-check-api", redundancy=2, max_annotations=2)
    writer, other = explain_and_send(project, import_rows, make_user)
    update_project(project.validation_project, items_per_page=10)
    pairs = {
        (e.origin.worker, e.origin_target): e
        for e in project.validation_project.examples.select_related("origin__worker")
    }
    return project, writer, other, pairs


# ---------------------------------------------------------------------------- the variation report


def test_the_variation_api_and_command_give_the_services_figures(varierr_study, author):
    expected = json.loads(json.dumps(report_json(varierr_study, variation_report(varierr_study))))
    study = expected["study"]
    # Not vacuous: the file's items carry explanations, judgments, verdicts and ChaosNLI distributions.
    assert study["items"] == VARIERR_LINES and study["explanations"] > VARIERR_LINES and study["judgments"] > 0
    assert study["error"] + study["variation"] > 0 and isinstance(study["alpha"], float)
    assert all(item["chaosnli"] is not None for item in expected["items"])
    response = api(author).get(f"/api/v1/projects/{varierr_study.slug}/variation/")
    assert response.status_code == 200
    assert response.json() == expected
    assert json.loads(command("variation_report", varierr_study.slug, "--json")) == expected
    item = expected["items"][0]
    assert set(item) == {"key", "round_one", "validated", "chaosnli", "verdicts", "variation", "error"}
    assert expected["label_order"] == ["e", "n", "c"] and len(item["round_one"]) == 3
    assert set(item["verdicts"].values()) <= {"supported", "error", "undecided"}


def test_the_variation_command_prints_the_report_pages_tables(varierr_study):
    text = command("variation_report", varierr_study.slug)
    assert "Label variation: the study" in text and "Label variation per item" in text
    assert re.search(rf"^Items with explanations +{VARIERR_LINES}$", text, re.MULTILINE)
    first_key = variation_report(varierr_study)["items"][0]["key"]
    assert any(line.startswith(first_key) for line in text.splitlines())


def test_a_study_without_explanations_has_an_empty_report_and_no_nan(make_project, author):
    project = make_project("nli_label", slug="plain")
    body = api(author).get(f"/api/v1/projects/{project.slug}/variation/").json()
    assert body["items"] == [] and body["study"]["items"] == 0
    assert body["study"]["alpha"] is None  # JSON has no NaN: the figure that cannot be computed is null
    assert json.loads(command("variation_report", project.slug, "--json")) == body
    assert "no explanations yet" in command("variation_report", project.slug)


# ---------------------------------------------------------------------------- the reasons report


def test_the_reasons_api_and_command_give_the_services_figures(tagged_study, author):
    expected = json.loads(json.dumps(reasons.reasons_report(tagged_study)))
    assert expected["items"] == 2
    counts = {reason["tag"]: reason["items"] for reason in expected["reasons"]}
    assert counts["Temporal"] == 1 and counts["Coreference"] == 1 and counts["Lexical"] == 0
    (round_one,) = expected["rounds"]
    assert round_one["reconciled"] == 1 and round_one["agreement"]["units"] == 1
    response = api(author).get(f"/api/v1/projects/{tagged_study.slug}/reasons/")
    assert response.status_code == 200 and response.json() == expected
    assert json.loads(command("reasons_report", tagged_study.slug, "--json")) == expected
    text = command("reasons_report", tagged_study.slug)
    assert "2 items carry reasons" in text and "1 reconciled" in text
    assert "item " in text and "P0 -> H0" in text  # the examples


def test_the_commands_refuse_an_unknown_study_in_one_line():
    for name in ("variation_report", "reasons_report"):
        with pytest.raises(CommandError, match="no-such-study"):
            command(name, "no-such-study")


# ---------------------------------------------------------------------------- who reads the reports


@pytest.mark.parametrize("report", ["variation", "reasons"])
def test_only_the_studys_author_and_admins_read_the_reports(tagged_study, make_user, worker, report):
    url = f"/api/v1/projects/{tagged_study.slug}/{report}/"
    assert api().get(url).status_code == 401
    assert api(make_user("author2", "author")).get(url).status_code == 404  # another author's study: hidden
    assert api(worker).get(url).status_code == 403  # a worker of the (published) study may see it, not this
    assert api(make_user("root2", "admin")).get(url).status_code == 200


# ---------------------------------------------------------------------------- the self-check


def test_an_author_lists_and_judges_their_own_pairs(self_check):
    project, writer, other, pairs = self_check
    url = f"/api/v1/projects/{project.slug}/own-explanations/"
    listed = api(writer).get(url).json()
    assert (listed["pending"], listed["judged"]) == (2, 0)
    assert [pair["pair"] for pair in listed["pairs"]] == [pairs[writer, "e"].pk, pairs[writer, "n"].pk]
    first = listed["pairs"][0]
    assert first["label"] == "e" and first["premise"] == PREMISE and first["premise_spans"] == [[11, 20]]
    assert first["explanation"].startswith("Reading a newspaper")
    assert [pair["pair"] for pair in api(other).get(url).json()["pairs"]] == [pairs[other, "e"].pk]
    response = api(writer).post(
        url,
        {
            "judgments": [
                {"pair": pairs[writer, "e"].pk, "makes_sense": True},
                {"pair": pairs[writer, "n"].pk, "makes_sense": "no"},
            ]
        },
        format="json",
    )
    assert response.status_code == 201
    assert response.json() == {"stored": 2, "pending": 0, "judged": 2, "pairs": []}
    assert dict(SelfJudgment.objects.values_list("example_id", "makes_sense")) == {
        pairs[writer, "e"].pk: True,
        pairs[writer, "n"].pk: False,
    }


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({}, "judgments", "must be a list"),
        ({"judgments": "yes"}, "judgments", "must be a list"),
        ({"judgments": []}, "judgments", "judge at least one"),
        ({"judgments": [7]}, "judgments[0]", "must be {"),
        ({"judgments": [{"makes_sense": True}]}, "judgments[0].pair", "is required"),
        ({"judgments": [{"pair": "MINE"}]}, "judgments[0].makes_sense", "is required"),
        ({"judgments": [{"pair": "x", "makes_sense": True}]}, "judgments[0].pair", "whole number"),
        ({"judgments": [{"pair": 10**30, "makes_sense": True}]}, f"pair {10**30}", "is not a pair id"),
        ({"judgments": [{"pair": "MINE", "makes_sense": "maybe"}]}, "pair MINE", "makes sense"),
        # The body fits the schema: the pairs it names decide (409).
        ({"judgments": [{"pair": "THEIRS", "makes_sense": True}]}, "pair THEIRS", "only their own"),
        (
            {"judgments": [{"pair": "MINE", "makes_sense": True}, {"pair": "MINE", "makes_sense": False}]},
            "judgments[1].pair",
            "judged twice",
        ),
    ],
)
def test_a_bad_page_of_judgments_is_refused_naming_the_field_and_stores_nothing(self_check, body, field, says):
    project, writer, other, pairs = self_check
    ids = {"MINE": pairs[writer, "e"].pk, "THEIRS": pairs[other, "e"].pk}
    if isinstance(body.get("judgments"), list):
        for entry in body["judgments"]:
            if isinstance(entry, dict) and entry.get("pair") in ids:
                entry["pair"] = ids[entry["pair"]]
    for name, pk in ids.items():
        field = field.replace(name, str(pk))
    # A good judgment of the writer's other pair on the same page is not kept either.
    if isinstance(body.get("judgments"), list) and body["judgments"] and field.startswith("pair"):
        body["judgments"].append({"pair": pairs[writer, "n"].pk, "makes_sense": True})
    response = api(writer).post(f"/api/v1/projects/{project.slug}/own-explanations/", body, format="json")
    assert response.status_code == (409 if says in ("only their own", "judged twice") else 400), response.content
    assert response.json()["field"] == field and says in response.json()["detail"]
    assert not SelfJudgment.objects.exists()


def test_a_judgment_is_not_replaced_through_the_api(self_check):
    project, writer, _, pairs = self_check
    url = f"/api/v1/projects/{project.slug}/own-explanations/"
    pair = pairs[writer, "n"].pk
    assert (
        api(writer).post(url, {"judgments": [{"pair": pair, "makes_sense": False}]}, format="json").status_code == 201
    )
    again = api(writer).post(url, {"judgments": [{"pair": pair, "makes_sense": True}]}, format="json")
    assert again.status_code == 409 and again.json()["field"] == f"pair {pair}"
    assert list(SelfJudgment.objects.values_list("makes_sense", flat=True)) == [False]


def test_who_reaches_the_self_check(self_check, make_user, make_project, author):
    project, _, _, _ = self_check
    url = f"/api/v1/projects/{project.slug}/own-explanations/"
    assert api().get(url).status_code == 401
    # A worker who wrote nothing here has nothing waiting; the author manages, does not work: 403.
    assert api(make_user("stranger", "worker")).get(url).json() == {"pending": 0, "judged": 0, "pairs": []}
    assert api(author).get(url).status_code == 403
    assert api(make_user("author2", "author")).get(url).status_code == 404
    # A study without a validation round has no self-check: 404, as the page answers.
    plain = make_project("label_explanation", slug="no-round")
    assert (
        api(make_user("worker9", "worker")).get(f"/api/v1/projects/{plain.slug}/own-explanations/").status_code == 404
    )


# ---------------------------------------------------------------------------- the admin


def test_admins_read_self_judgments_and_reason_tags_in_the_admin_but_change_nothing(
    self_check, tagged_study, make_user
):
    _, writer, _, pairs = self_check
    judgment = SelfJudgment.objects.create(example=pairs[writer, "e"], worker=writer, makes_sense=True)
    tag = tagged_study.items.order_by("id").first().reason_tags.order_by("id").first()
    admin = Client()
    admin.force_login(make_user("root2", "admin"))
    for model, obj in (("selfjudgment", judgment), ("reasontag", tag)):
        listing = admin.get(f"/admin/label_variation/{model}/")
        assert listing.status_code == 200 and f"/admin/label_variation/{model}/{obj.pk}/change/" in listing.text
        assert admin.get(f"/admin/label_variation/{model}/{obj.pk}/change/").status_code == 200  # shown, read only
        assert admin.get(f"/admin/label_variation/{model}/add/").status_code == 403
        assert admin.post(f"/admin/label_variation/{model}/{obj.pk}/delete/", {"post": "yes"}).status_code == 403
    assert SelfJudgment.objects.filter(pk=judgment.pk, makes_sense=True).exists()
    assert ReasonTag.objects.filter(pk=tag.pk, reasons=tag.reasons).exists()
    worker = Client()
    worker.force_login(writer)
    assert worker.get("/admin/label_variation/selfjudgment/").status_code == 302  # not staff: to the admin login
