"""The request schema says what the server checks (issue 54, item 6): task-type settings and suite parameters
as one alternative per task type or suite, generated from their declarations when the schema is (plug-ins
included), and a request the schema allows is refused by the state with 404 or 409, never 400."""

import json
import re
import sys

import jsonschema_rs
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from rest_framework import serializers
from rest_framework.test import APIClient

from annotation.models import AdjudicationRecord, Project
from annotation.serializers import project_request_schema
from annotation.services.study_settings import settings_schema
from annotation.tasktypes import TASK_TYPES, register, unregister
from common.api_fields import Slug, Text
from common.api_schema import NO_NUL, NOT_BLANK_NO_NUL, ErrorsDeclaredSchema, allows, schema_refusal
from evaluation.runs import SUITES
from tests.tasktype_plugin.likert import LikertRating

pytestmark = pytest.mark.django_db


def published_schema() -> dict:
    return json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))


def alternatives(schema: dict, component: str) -> dict[str, dict]:
    """The alternatives of a request body, by the value that tells them apart."""
    union = schema["components"]["schemas"][component]
    return {
        value: schema["components"]["schemas"][reference.rsplit("/", 1)[1]]
        for value, reference in union["discriminator"]["mapping"].items()
    }


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.label_variation  # names the app's task types or its reason_taxonomy setting
def test_every_task_type_has_its_own_body_with_its_own_settings():
    schema = published_schema()
    bodies = alternatives(schema, "ProjectCreateRequest")
    assert set(bodies) == set(TASK_TYPES)  # label_variation's two included
    assert {"label_explanation", "explanation_validation"} <= set(bodies)
    for name, body in bodies.items():
        options = body["properties"]["options"]
        declared = settings_schema(TASK_TYPES[name])
        assert options["additionalProperties"] is False
        assert set(options["properties"]) == {setting.name for setting in declared if not setting.column}
        assert body["required"] == ["slug", "task_type"]
    # The example: `adaptive` is unli_slider's, and refused on an atom validity study.
    assert bodies["unli_slider"]["properties"]["adaptive"]["type"] == "boolean"
    assert bodies["atom_validity"]["properties"]["adaptive"]["not"] == {}
    redundancy = bodies["nli_label"]["properties"]["redundancy"]
    assert (redundancy["minimum"], redundancy["maximum"]) == (1, 100)
    changes = schema["components"]["schemas"]["PatchedProjectChangeRequest"]["anyOf"]
    assert len(changes) == len(TASK_TYPES)
    operation = schema["paths"]["/api/v1/projects/"]["post"]
    assert operation["requestBody"]["required"] is True and "409" in operation["responses"]


def test_a_plugin_task_type_appears_while_it_is_registered():
    task = register(LikertRating())
    try:
        bodies = alternatives(published_schema(), "ProjectCreateRequest")
        points = bodies["likert_rating"]["properties"]["options"]["properties"]["points"]
        assert points["enum"] == [5, 7, None] and points["nullable"] is True
    finally:
        unregister(task.name)
    assert "likert_rating" not in alternatives(published_schema(), "ProjectCreateRequest")


def test_every_declared_default_is_allowed_by_its_task_types_body():
    for task in TASK_TYPES.values():
        declared = settings_schema(task)
        body = {
            "slug": "a-study",
            "task_type": task.name,
            **{setting.name: setting.default for setting in declared if setting.column},
            "options": {setting.name: setting.default for setting in declared if not setting.column},
        }
        assert allows(project_request_schema(task, creating=True), body), task.name


def test_null_for_an_option_means_its_default_and_the_schema_allows_it(author, make_project):
    """OpenAPI 3.0.3's `nullable` does not add null to an enum: a choice option lists null among its values
    (bin/fuzz-api found reason_taggers: null accepted where the schema refused it)."""
    for task in TASK_TYPES.values():
        options = {setting.name: None for setting in settings_schema(task) if not setting.column}
        body = {"slug": "a-study", "task_type": task.name, "options": options}
        assert allows(project_request_schema(task, creating=True), body), task.name
        assert not allows(project_request_schema(task, creating=True), {**body, "options": {"labels": "x"}})
    study = make_project("nli_label", slug="nulls", status="draft", redundancy_strategy="stability")
    assert study.options["redundancy_strategy"] == "stability"
    cleared = api_for(author).patch(
        f"/api/v1/projects/{study.slug}/", {"options": {"redundancy_strategy": None}}, format="json"
    )
    assert cleared.status_code == 200, cleared.content
    assert cleared.json()["options"]["redundancy_strategy"] == "disagreement"


def test_each_suite_takes_its_own_files_and_settings():
    bodies = alternatives(published_schema(), "RunCreate")
    assert set(bodies) == set(SUITES)
    assert bodies["unli"]["required"] == ["suite", "gold", "predictions"]
    assert bodies["unli"]["properties"]["model"]["not"] == {}  # `model` only where the suite reads it
    assert "not" not in bodies["chaos"]["properties"]["model"]
    assert bodies["nli-atoms"]["required"] == ["suite", "gold"]
    assert bodies["nli-atoms"]["properties"]["predictions"]["not"] == {}


def test_schema_refusal_names_the_field_only_for_a_body_the_schema_refuses():
    body_schema = project_request_schema(TASK_TYPES["nli_label"], creating=True)
    fits = {"slug": "s", "task_type": "nli_label", "redundancy": 5, "max_annotations": 2}

    def refusal(body):
        return schema_refusal(body, [body_schema], own=body_schema)

    assert refusal(fits) is None
    assert refusal({**fits, "options": {"completion_code": None}}) is None
    assert refusal({**fits, "redundancy": 500}) == ("redundancy", "500 is greater than the maximum of 100")
    assert refusal({**fits, "options": {"no_such_setting": 1}})[0] == "no_such_setting"
    field, message = refusal({**fits, "options": {"coherence_exclusive_per_worker": 0}})
    assert field == "coherence_exclusive_per_worker" and "boolean" in message


def test_state_refusals_answer_404_or_409_and_shape_refusals_400(author, make_project):
    api = api_for(author)
    contradicting = {"slug": "contradicting", "task_type": "nli_label", "redundancy": 5, "max_annotations": 2}
    refused = api.post("/api/v1/projects/", contradicting, format="json")
    assert refused.status_code == 409, refused.content
    assert refused.json()["field"] == "max_annotations" and refused.json()["code"] == "conflict"
    out_of_bounds = api.post("/api/v1/projects/", {**contradicting, "redundancy": 500}, format="json")
    assert out_of_bounds.status_code == 400 and out_of_bounds.json()["field"] == "redundancy"
    not_its_own = {"slug": "atoms", "task_type": "atom_validity", "adaptive": True}
    assert api.post("/api/v1/projects/", not_its_own, format="json").status_code == 400
    study = make_project("nli_label", slug="taken", status="draft")
    in_use = api.post("/api/v1/projects/", {"slug": "taken", "task_type": "nli_label"}, format="json")
    assert in_use.status_code == 409 and in_use.json()["field"] == "slug"
    # PATCH: the path does not say the task type, so another type's setting conflicts with the study's.
    changed = api.patch(f"/api/v1/projects/{study.slug}/", {"adaptive": True}, format="json")
    assert changed.status_code == 409 and changed.json()["field"] == "adaptive"
    unknown = api.patch(f"/api/v1/projects/{study.slug}/", {"options": {"no_such_setting": 1}}, format="json")
    assert unknown.status_code == 400
    for not_a_boolean in (0, "", "true"):
        wrong_type = {"options": {"coherence_exclusive_per_worker": not_a_boolean}}
        refused_type = api.patch(f"/api/v1/projects/{study.slug}/", wrong_type, format="json")
        assert refused_type.status_code == 400, (not_a_boolean, refused_type.content)
        assert refused_type.json()["field"] == "coherence_exclusive_per_worker"
    publish_empty = api.patch(f"/api/v1/projects/{study.slug}/", {"status": "published"}, format="json")
    assert publish_empty.status_code == 409 and publish_empty.json()["field"] == "status"
    assert Project.objects.get(slug="taken").status == "draft" and not Project.objects.filter(slug="atoms").exists()


def test_an_export_the_study_has_not_is_404_and_an_unknown_item_404(author, make_project):
    api = api_for(author)
    writing = make_project("hypothesis_writing", slug="writing")
    answer = api.get(f"/api/v1/projects/{writing.slug}/export/?as=chaosnli")
    assert answer.status_code == 404 and answer.json()["field"] == "as" and "choose one of" in answer.json()["detail"]
    unknown_format = api.get(f"/api/v1/projects/{writing.slug}/export/?as=nope")
    assert unknown_format.status_code == 400
    nli = make_project("nli_label", slug="labels")
    adjudicated = api.post(f"/api/v1/projects/{nli.slug}/adjudicate/", {"item": 999999, "value": "e"}, format="json")
    assert adjudicated.status_code == 404 and adjudicated.json()["field"] == "item"


def test_a_wrong_password_is_401_and_a_missing_one_400(make_user):
    make_user("someone", "worker", password="right-password")
    wrong = APIClient().post("/api/v1/token/", {"username": "someone", "password": "wrong"}, format="json")
    assert wrong.status_code == 401 and wrong["WWW-Authenticate"] == "Token"
    assert wrong.json()["detail"] == "Unable to log in with provided credentials."
    missing = APIClient().post("/api/v1/token/", {"username": "someone"}, format="json")
    assert missing.status_code == 400 and missing.json()["field"] == "password"


def test_an_evaluation_run_naming_no_visible_project_is_404(author):
    files = {
        "gold": SimpleUploadedFile("g.jsonl", b'{"id": "1", "label": "e"}\n'),
        "predictions": SimpleUploadedFile("p.jsonl", b'{"id": "1", "label": "e"}\n'),
    }
    answer = api_for(author).post(
        "/api/v1/evaluation/runs/", {"suite": "unli", "project": "nope", **files}, format="multipart"
    )
    assert answer.status_code == 404 and answer.json()["field"] == "project"


@pytest.mark.label_variation  # names the app's task types or its reason_taxonomy setting
def test_a_json_setting_states_its_shape_and_its_check_decides_the_rest(author):
    api = api_for(author)
    study = {"slug": "examples", "task_type": "nli_label"}
    no_premise = {"options": {"worked_examples": [{"hypothesis": "H", "answer": "e"}]}}
    refused = api.post("/api/v1/projects/", {**study, **no_premise}, format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "worked_examples"
    twice = [{"tag": "Lexical"}, {"tag": "Lexical"}]  # the shape fits; tags unique is the check's alone
    repeated = api.post("/api/v1/projects/", {**study, "options": {"reason_taxonomy": twice}}, format="json")
    assert repeated.status_code == 409 and "listed twice" in repeated.json()["detail"]
    assert not Project.objects.exists()


def test_a_text_field_that_refuses_blank_says_so_in_the_request_schema(author, make_project):
    """DRF strips a value before refusing it as blank, so "\\n" in a request is refused where the schema
    said only "no NUL" (bin/fuzz-api found it in a study evaluation's model list)."""
    schemas = published_schema()["components"]["schemas"]
    assert schemas["StudyEvaluation"]["properties"]["models"]["items"]["pattern"] == NOT_BLANK_NO_NUL
    assert schemas["TokenRequest"]["properties"]["username"]["pattern"] == NOT_BLANK_NO_NUL
    assert schemas["StudyEvaluation"]["properties"]["bucket_nli"]["pattern"] == NO_NUL  # blank allowed
    # An answer says nothing of either: a job's error may be empty, an error's field echoes what was sent.
    assert "pattern" not in schemas["Job"]["properties"]["error"]
    assert "pattern" not in schemas["Error"]["properties"]["field"]
    # The pattern and str.strip() agree on every character, in Python's regular expressions and in Rust's
    # (schemathesis checks with the latter).
    pattern, judge = re.compile(NOT_BLANK_NO_NUL), jsonschema_rs.Draft4Validator({"pattern": NOT_BLANK_NO_NUL})
    for code in range(1, sys.maxunicode + 1):
        character = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue  # surrogates are not text
        kept = character.strip() != ""
        assert (pattern.fullmatch(character) is not None) == kept == judge.is_valid(character), hex(code)
    study = make_project("unli_slider", slug="to-evaluate")
    api = api_for(author)
    blank = api.post(f"/api/v1/projects/{study.slug}/evaluations/", {"models": ["\n"]}, format="json")
    assert blank.status_code == 400 and blank.json()["field"] == "models"
    unknown = api.post(f"/api/v1/projects/{study.slug}/evaluations/", {"models": ["\n x"]}, format="json")
    assert unknown.status_code == 404 and unknown.json()["field"] == "models"


def test_every_writable_text_field_of_a_request_is_a_text(monkeypatch):
    """DRF's CharField takes a number as text and checks a length or a pattern after trimming whitespace, so
    it would take what the published schema refuses: every text field a request body holds is a Text."""
    mapped = []
    original = ErrorsDeclaredSchema._map_serializer_field

    def recording(self, field, direction, *args, **kwargs):
        mapped.append((field, direction))
        return original(self, field, direction, *args, **kwargs)

    monkeypatch.setattr(ErrorsDeclaredSchema, "_map_serializer_field", recording)
    published_schema()
    requested = [field for field, direction in mapped if direction == "request" and not field.read_only]
    texts = [field for field in requested if isinstance(field, serializers.CharField)]
    assert len(texts) >= 12  # the mapping was seen: token, models, buckets, notes, label map, slugs, settings
    lenient = {f"{type(field.parent).__name__}.{field.field_name}" for field in texts if not isinstance(field, Text)}
    assert lenient == set()


def test_text_takes_a_string_no_longer_than_its_limit_as_sent():
    assert Text(max_length=3).run_validation(" ab") == "ab"
    for refused in (3, 2.5, True, ["ab"], " abc", "abc "):
        with pytest.raises(serializers.ValidationError):
            Text(max_length=3).run_validation(refused)
    assert Slug().run_validation("a-study_2") == "a-study_2"
    for refused in (" a-study", "a-study\n", 7):
        with pytest.raises(serializers.ValidationError):
            Slug().run_validation(refused)


def test_a_body_the_schema_refuses_for_its_text_stores_nothing(author, make_project, import_rows):
    """An adjudication's note as a number, or over its 5,000 characters only with the whitespace around it,
    was taken (as "3", and trimmed): both break the published schema."""
    study = make_project("atom_validity")
    import_rows(study, [{"id": "e1", "premise": "P", "hypothesis": "H"}])
    import_rows(study, [{"example_id": "e1", "atoms": ["a1"]}], "atoms")
    item = study.items.get()
    api = api_for(author)
    for note in (3, " " + "x" * 5000):
        refused = api.post(
            f"/api/v1/projects/{study.slug}/adjudicate/",
            {"item": item.id, "value": "valid", "note": note},
            format="json",
        )
        assert refused.status_code == 400 and refused.json()["field"] == "note", refused.content
    assert not AdjudicationRecord.objects.exists()
    taken = api.post(
        f"/api/v1/projects/{study.slug}/adjudicate/",
        {"item": item.id, "value": "valid", "note": " " + "x" * 4999},
        format="json",
    )
    assert taken.status_code == 200 and taken.json()["note"] == "x" * 4999
