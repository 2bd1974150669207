"""HTML pages and the REST API, through Django's test client."""

import io
import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Annotation, Item
from annotation.tasktypes import TASK_TYPES
from dataset_io.demo import load_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    load_demo()


def login(client, username, password):
    assert client.login(username=username, password=password)
    return client


def form_fields(item_id: int, answer) -> dict:
    """An answer as the worker page's form sends it (a written answer: one field per target)."""
    if isinstance(answer, dict):
        return {f"value_{item_id}.{key}": text for key, text in answer.items()}
    return {f"value_{item_id}": str(answer)}


@pytest.mark.parametrize("task_type", [name for name, task in TASK_TYPES.items() if task.has_demo])
def test_worker_completes_a_page_of_each_task_type(client, demo, task_type):
    slug = TASK_TYPES[task_type].demo().slug
    login(client, "worker1", "demo-worker-pass")
    page = client.get(f"/work/{slug}/")
    assert page.status_code == 200
    assignment = page.context["assignment"]
    items = page.context["items"]
    project = assignment.project
    answers = project.task.example_answers(project.options)
    form = {
        key: value
        for number, item in enumerate(items)
        for key, value in form_fields(item.id, answers[number % len(answers)]).items()
    }
    form.update({f"seconds_{item.id}": "2.5" for item in items})
    response = client.post(f"/work/{slug}/{assignment.id}/submit/", form)
    assert response.status_code == 302
    assert Annotation.objects.filter(worker__username="worker1", item__project__slug=slug).count() == len(items)


def test_form_submit_error_names_the_field_and_keeps_answers(client, demo):
    login(client, "worker1", "demo-worker-pass")
    page = client.get("/work/demo-slider/")
    items = page.context["items"]
    form = {f"value_{item.id}": "2000" for item in items}
    form[f"value_{items[-1].id}"] = ""
    response = client.post(f"/work/demo-slider/{page.context['assignment'].id}/submit/", form)
    assert response.status_code == 400
    assert f"answers[{items[-1].id}]" in response.content.decode()
    assert not Annotation.objects.filter(worker__username="worker1").exists()


def test_dataset_text_is_escaped(client, make_project, import_rows, make_user):
    project = make_project("nli_label")
    import_rows(project, [{"id": "x", "premise": "<script>alert(1)</script>", "hypothesis": "<b>bold</b>"}])
    make_user("w", "worker")
    login(client, "w", "a-test-password")
    html = client.get(f"/work/{project.slug}/").content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    assert "<b>bold</b>" not in html


def test_author_imports_and_exports_through_the_pages(client, make_project, author, web_import):
    project = make_project("unli_slider")
    login(client, "author1", "a-test-password")
    good = io.BytesIO(b"id,pre,hyp,nli,unli\n1,A man sleeps.,A person rests.,2,0.93\n")
    good.name = "good.csv"
    assert web_import(client, project, "usnli", good).status_code == 302
    bad = io.BytesIO(b"id,pre,hyp,nli,unli\n2,P,H,1,0.3\n3,P,H,1,2\n")
    bad.name = "bad.csv"
    response = web_import(client, project, "usnli", bad)
    assert response.status_code == 400 and "line 3, field <code>unli</code>" in response.content.decode()
    assert Item.objects.filter(project=project).count() == 1
    export = client.get(f"/projects/{project.slug}/export/usnli/")
    body = b"".join(export.streaming_content).decode()
    header, row = body.splitlines()
    assert header.startswith("id,pre,hyp,nli,unli,unli_source,") and row.startswith(
        "1,A man sleeps.,A person rests.,2,0.93,imported,"
    )


def test_workers_cannot_open_author_pages(client, demo):
    login(client, "worker1", "demo-worker-pass")
    assert client.get("/projects/demo-slider/").status_code == 403
    assert client.get("/projects/demo-slider/export/jsonl/").status_code == 403
    assert client.get("/projects/new/").status_code == 403


def test_anonymous_is_sent_to_login(client, demo):
    assert client.get("/work/demo-slider/")["Location"].startswith("/accounts/login/")
    assert client.get("/").status_code == 200


@pytest.fixture
def api(demo):
    client = APIClient()
    from django.contrib.auth import get_user_model

    token = Token.objects.create(user=get_user_model().objects.get(username="worker2"))
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_api_claim_submit_release(api):
    claim = api.post("/api/projects/demo-defeasible/claim/")
    assert claim.status_code == 201
    page = claim.json()
    answers = {str(item["id"]): {"value": 2} for item in page["items"]}
    bad = dict(answers, **{str(page["items"][0]["id"]): {"value": 9}})
    response = api.post(f"/api/assignments/{page['id']}/submit/", {"answers": bad}, format="json")
    # The body fits the published schema (a value's shape is the task type's): a 409, as docs/api.md says.
    assert response.status_code == 409
    assert response.json()["field"] == f"answers[{page['items'][0]['id']}].value"
    ok = api.post(f"/api/assignments/{page['id']}/submit/", {"answers": answers}, format="json")
    assert ok.status_code == 200 and ok.json()["annotations"] == len(page["items"])
    again = api.post(f"/api/assignments/{page['id']}/submit/", {"answers": answers}, format="json")
    assert again.json() == dict(ok.json(), repeated=True)
    second = api.post("/api/projects/demo-defeasible/claim/").json()
    assert api.post(f"/api/assignments/{second['id']}/release/").json()["status"] == "released"


def test_api_needs_authentication_and_a_worker_role():
    anonymous = APIClient()
    assert anonymous.post("/api/projects/demo-slider/claim/").status_code in (401, 403)


def test_api_worker_role_required(demo, make_user):
    client = APIClient()
    client.force_authenticate(make_user("someauthor", "author"))
    assert client.post("/api/projects/demo-slider/claim/").status_code in (403, 404)


def test_openapi_schema_lists_the_worker_flow(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    paths = json.loads(schema.content)["paths"]
    assert "/api/v1/projects/{slug}/claim/" in paths and "/api/v1/assignments/{id}/submit/" in paths


def test_api_docs_page_is_served_without_any_cdn(client):
    page = client.get("/api/docs/")
    html = page.content.decode()
    assert page.status_code == 200 and "swagger-ui" in html
    assert "cdn." not in html and "jsdelivr" not in html


def test_pages_show_the_projects_worked_examples(client, demo):
    login(client, "worker1", "demo-worker-pass")
    html = client.get("/work/demo-defeasible/").content.decode()
    assert "Worked examples" in html and "The leash is tangled around a bench." in html
