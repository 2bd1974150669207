"""One case per bug the property, schema and permission tests found, kept as plain tests so each fix
stays pinned even if the generated examples change."""

import io
import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Annotation, Example
from annotation.services.assignments import claim_page

pytestmark = pytest.mark.django_db


@pytest.fixture
def nli_page(make_project, import_rows, worker):
    project = make_project("nli_label", items_per_page=2)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(2)])
    return claim_page(project, worker)


@pytest.fixture
def worker_api(worker):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=worker).key}")
    return api


def test_seconds_past_the_float_range_are_refused(nli_page, worker_api):
    answers = {str(claim.item_id): {"value": "e", "seconds": 10**400} for claim in nli_page.claims.all()}
    response = worker_api.post(
        f"/api/assignments/{nli_page.pk}/submit/", json.dumps({"answers": answers}), content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["field"].endswith(".seconds")
    assert not Annotation.objects.exists()


def import_text(project, text, fmt):
    from dataset_io.services.importers import import_stream

    return import_stream(project, io.StringIO(text), fmt)


def import_errors(project, text, fmt) -> list[tuple[int, str]]:
    from dataset_io.services.importers import ImportFileError

    with pytest.raises(ImportFileError) as error:
        import_text(project, text, fmt)
    assert not Example.objects.filter(project=project).exists()
    return [(line, field) for line, field, _ in error.value.errors]


GOOD_LINE = '{"premise": "P", "hypothesis": "H"}\n'


@pytest.mark.parametrize(
    "bad_line",
    [
        '{"premise": ' + "9" * 5000 + ', "hypothesis": "H"}',  # past Python's 4300-digit int limit
        "[" * 5000 + "]" * 5000,  # deeper than the JSON reader recurses
        '{"premise": NaN, "hypothesis": "H"}',  # NaN and Infinity are not JSON (PostgreSQL refuses them)
        '{"premise": "P", "hypothesis": "H", "score": -Infinity}',
    ],
)
@pytest.mark.parametrize("fmt", ["jsonl", "snli", "dnli", "chaosnli", "atoms"])
def test_unreadable_json_lines_are_line_errors(make_project, fmt, bad_line):
    project = make_project({"dnli": "defeasible_atom", "atoms": "atom_validity"}.get(fmt, "nli_label"))
    assert import_errors(project, GOOD_LINE + bad_line + "\n", fmt)[-1] == (2, "(json)")


@pytest.mark.parametrize(
    "bad_row",
    [
        "a,b\rc\n",  # a lone carriage return (old Mac line ends) in an unquoted field
        "x" * 140_000 + ",H\n",  # past the csv module's field size limit
    ],
)
def test_unreadable_csv_rows_are_line_errors(make_project, bad_row):
    project = make_project("nli_label")
    assert import_errors(project, "premise,hypothesis\nP,H\n" + bad_row, "csv") == [(3, "(csv)")]


def test_an_unreadable_csv_header_is_a_line_error(make_project):
    project = make_project("unli_slider")
    assert import_errors(project, "id,pre\rx,hyp,nli,unli\n", "usnli") == [(1, "(csv)")]


@pytest.mark.parametrize(
    "fmt,text,error",
    [
        ("jsonl", '{"premise": "P\\u0000", "hypothesis": "H"}\n', (1, "premise")),
        ("jsonl", '{"premise": "P", "hypothesis": "H", "extra": {"deep": ["\\u0000"]}}\n', (1, "extra.deep[0]")),
        (
            "chaosnli",
            '{"uid": "1", "example": {"premise": "P", "hypothesis": "H\\u0000"}, "label_counter": {"e": 1}}\n',
            (1, "example.hypothesis"),
        ),
        ("csv", "premise,hypothesis\nP,H\x00\n", (2, "hypothesis")),
        ("jsonl", '{"premise": "P", "hypothesis": "H", "": {"": "\\u0000"}}\n', (1, '"".""')),
        ("csv", "premise,hypothesis,\nP,H,\x00\n", (2, '""')),
    ],
)
def test_nul_characters_are_refused(make_project, fmt, text, error):
    """PostgreSQL stores no NUL in text or jsonb: refuse the row instead of failing at the INSERT."""
    project = make_project("nli_label")
    assert import_errors(project, text, fmt) == [error]


@pytest.mark.parametrize(
    "row,field",
    [
        ({"id": "x" * 198, "premise": "P", "hypothesis": "H"}, "id"),
        ({"premise": "P", "hypothesis": "H", "probability": "0." + "1" * 40}, "probability"),
    ],
)
def test_values_longer_than_their_column_are_refused(make_project, row, field):
    """PostgreSQL enforces varchar lengths (SQLite does not): refuse the row instead of failing at the INSERT."""
    project = make_project("nli_label")
    assert import_errors(project, json.dumps(row) + "\n", "jsonl") == [(1, field)]
    assert import_text(project, json.dumps({**row, field: row[field][:40]}) + "\n", "jsonl").created == 1


@pytest.mark.parametrize("hypothesis", [["a list"], {"an": "object"}, 7])
def test_atoms_for_a_hypothesis_that_is_not_text_are_refused(make_project, import_rows, hypothesis):
    project = make_project("atom_validity")
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    from dataset_io.services.importers import ImportFileError

    with pytest.raises(ImportFileError) as error:
        import_text(project, json.dumps({"hypothesis": hypothesis, "atoms": ["a"]}) + "\n", "atoms")
    assert [(line, field) for line, field, _ in error.value.errors] == [(1, "hypothesis")]


@pytest.mark.parametrize("action", ["submit", "release"])
@pytest.mark.parametrize("page_id", ["abc", "%12", "1.5", "99999999999999999999999"])
def test_a_page_id_that_is_not_a_page_is_a_404(worker_api, action, page_id):
    response = worker_api.post(f"/api/assignments/{page_id}/{action}/", {"answers": {}}, format="json")
    assert response.status_code == 404


@pytest.fixture
def admin_api(make_user):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=make_user('root', 'admin')).key}")
    return api


@pytest.mark.parametrize(
    "body,field",
    [
        ({"value": "e"}, "item"),
        ({"item": "seven", "value": "e"}, "item"),
        ({"item": 1}, "value"),
        ([1, 2], "non_field_errors"),
    ],
)
def test_adjudicate_refusals_have_the_documented_error_shape(make_project, admin_api, body, field):
    """The schema documents 400 as {"field", "detail"}; serializer errors used to come back as DRF's {name: [...]}."""
    project = make_project("nli_label")
    response = admin_api.post(f"/api/projects/{project.slug}/adjudicate/", body, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == field and response.json()["detail"]


def test_unparseable_bodies_match_the_documented_error_shape(nli_page, worker_api):
    """DRF refuses a body it cannot parse with {"detail"} alone: the schema must allow that 400."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    error = schema["components"]["schemas"]["Error"]
    response = worker_api.post(f"/api/assignments/{nli_page.pk}/submit/", b"\xbe", content_type="application/json")
    assert response.status_code == 400
    assert set(error["required"]) <= set(response.json())


@pytest.mark.parametrize("page", ["", "last", "abc"])
def test_a_page_that_is_not_a_number_is_a_404(nli_page, worker_api, page):
    """The schema says `page` is an integer; DRF used to read an empty one as page 1 and `last` as the last
    page (found by the stateful schemathesis run: GET /api/v1/jobs/?page= answered 200)."""
    response = worker_api.get(f"/api/v1/assignments/?page={page}")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_a_page_number_still_pages(nli_page, worker_api):
    assert worker_api.get("/api/v1/assignments/?page=1").json()["results"][0]["id"] == nli_page.pk
    assert worker_api.get("/api/v1/assignments/").json()["count"] == 1


@pytest.mark.parametrize("free_text", ["", "KEEP", " omit"])
@pytest.mark.parametrize("url", ["/api/v1/projects/{slug}/bundle/", "/api/v1/projects/{slug}/export/?as=jsonl"])
def test_a_free_text_choice_the_schema_does_not_list_is_refused(make_project, admin_api, url, free_text):
    """The schema lists keep, omit and scrub; an empty value used to be read as keep and start a bundle (found
    by the stateful schemathesis run: POST .../bundle/?free_text= answered 202)."""
    from jobs.models import Job

    project = make_project("nli_label")
    path = url.format(slug=project.slug)
    separator = "&" if "?" in path else "?"
    call = admin_api.post if "bundle" in path else admin_api.get
    response = call(f"{path}{separator}free_text={free_text}")
    assert response.status_code == 400
    assert response.json()["field"] == "free_text"
    assert not Job.objects.exists()


def test_a_nul_character_inside_a_json_setting_is_refused(admin_api):
    """PostgreSQL's jsonb cannot hold \\u0000: a NUL inside a JSON setting (schemathesis' stateful run put one in
    a taxonomy's tag) was stored and answered 500 there. Runs in both passes of make test."""
    example = {"premise": "P", "hypothesis": "H\x00", "answer": "e", "why": "because"}
    body = {"slug": "nul-in-json", "task_type": "nli_label", "options": {"worked_examples": [example]}}
    response = admin_api.post("/api/v1/projects/", body, format="json")
    # The schema's strings allow any character, so the refusal is the setting's own rule: 409 (docs/api.md).
    assert response.status_code == 409, response.content[:300]
    assert response.json()["field"] == "worked_examples"
    from annotation.models import Project

    assert not Project.objects.filter(slug="nul-in-json").exists()
