"""The API's error `detail` names the field at fault, whichever code refused the request: DRF's own
validation, a view's refusal or a service's. docs/api.md shows the shape with an example that must hold."""

import io
import json
import re
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from common.api_errors import naming_the_field

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"


@pytest.mark.parametrize(
    "field,message,detail",
    [
        ("items_per_page", "must be at least 1", "items_per_page: must be at least 1"),
        ("answers[1].value", "must be a whole number", "answers[1].value: must be a whole number"),
        ("item", "no such item in this project", "no such item in this project"),  # named already
        ("license", "license: 'zz' is no license", "license: 'zz' is no license"),
        ("hypothesis", "line 2, field 'hypothesis': is missing", "line 2, field 'hypothesis': is missing"),
        ("value", "answers[1].value is out of range", "value: answers[1].value is out of range"),  # another field's
        ("item", "no such item_id", "item: no such item_id"),  # a longer name is not this one
        ("non_field_errors", "Expected a dictionary", "Expected a dictionary"),  # the body, not a field
        (None, "not logged in", "not logged in"),
    ],
)
def test_a_detail_leads_with_its_field_unless_it_names_it(field, message, detail):
    assert naming_the_field(field, message) == detail


@pytest.fixture
def author_api(author):
    api = APIClient()
    api.force_authenticate(author)
    return api


def test_the_documented_example_is_what_the_api_answers(db, author_api):
    example = re.search(r"## Errors.*?```json\n(.*?)```", DOCS.read_text(), re.S).group(1)
    refused = author_api.post(
        "/api/v1/projects/", {"slug": "s", "task_type": "unli_slider", "items_per_page": 0}, format="json"
    )
    assert refused.status_code == 400 and refused.json() == json.loads(example)


def test_refusals_raised_by_views_and_services_name_their_field(make_project, author_api, worker):
    project = make_project("unli_slider")
    worker_api = APIClient()
    worker_api.force_authenticate(worker)
    no_page = worker_api.post("/api/v1/assignments/9999/submit/", {"answers": {}}, format="json")
    assert no_page.json()["detail"] == "assignment: no such page"
    too_many = author_api.patch(
        f"/api/v1/projects/{project.slug}/", {"redundancy": 5, "max_annotations": 2}, format="json"
    )
    assert too_many.status_code == 409
    assert too_many.json()["detail"] == "max_annotations: must be at least the redundancy (5)"
    wrong_option = author_api.get(f"/api/v1/projects/{project.slug}/export/?as=nope")
    assert wrong_option.json()["detail"].startswith("as: unknown export format 'nope'")
    not_an_object = author_api.post(f"/api/v1/projects/{project.slug}/adjudicate/", [1, 2], format="json")
    assert not_an_object.json()["field"] == "non_field_errors"
    assert not not_an_object.json()["detail"].startswith("non_field_errors")


def test_an_import_refusal_names_its_row_and_field_once(make_project, author_api):
    project = make_project("unli_slider")
    rows = io.BytesIO(b'{"premise": "A dog runs.", "hypothesis": "An animal moves."}\n{"premise": "P"}\n')
    rows.name = "rows.jsonl"
    refused = author_api.post(
        f"/api/v1/projects/{project.slug}/import/", {"file": rows, "format": "jsonl"}, format="multipart"
    )
    assert refused.json()["field"] == "hypothesis"
    assert refused.json()["detail"] == "nothing was imported: line 2, field 'hypothesis': is missing or empty"
    assert not project.items.exists()
