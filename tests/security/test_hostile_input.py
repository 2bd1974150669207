"""Hostile input answered with a 4xx on every route, never a 500: JSON nested far too deep, a JSON body over
the form limit, headers that are not ASCII or are far too long, malformed multipart, each sent to every URL
pattern of the app (its parameters filled with objects that exist) as nobody, a worker, the author and an
admin. The django_rq dashboard's object pages are gone (their model has no table)."""

import subprocess
import sys

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from annotation.models import Assignment, Item
from annotation.services import assignments
from jobs.models import Job, WorkerHeartbeat
from tests.conftest import redis_url

NESTED = b"[" * 100_000 + b"]" * 100_000
NESTED_OBJECTS = b'{"a":' * 1000 + b"1" + b"}" * 1000  # decodes fine, but 1000 levels deep
OVER_FORM_LIMIT = b'{"answers": "' + b"x" * (6 * 2**20) + b'"}'
HEADERS = {
    "HTTP_X_TIMESTAMP": "\u00e9\u00e9\u00e9",  # non-ASCII (the server reads headers as latin-1)
    "HTTP_X_EVENT_ID": "9" * 5000,  # far too long
    "HTTP_X_PROLIFIC_REQUEST_SIGNATURE": "\u00ff" * 300,
    "HTTP_ACCEPT_LANGUAGE": "\u00ff;q=abc," * 50,
    "HTTP_IF_MODIFIED_SINCE": "\u00e9 not a date",
    "HTTP_X_FORWARDED_FOR": "not an address, \u00e9",
    "HTTP_REFERER": "http://\u00e9\u00e9/" + "x" * 3000,
}


def url_patterns(patterns=None, prefix=""):
    """(route as written, pattern) for every URL of the app, format-suffix twins left out."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            if not route.startswith("admin/"):  # the admin: its own test below
                yield from url_patterns(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern) and "(?P<format>" not in route and "<drf_format_suffix" not in route:
            yield route


def concrete(route: str, values: dict) -> str:
    """A route with its parameters filled in and its regular-expression syntax removed."""
    path = route
    for name, value in values.items():
        for form in (f"(?P<{name}>[^/.]+)", f"(?P<{name}>[0-9]+)", f"<slug:{name}>", f"<int:{name}>", f"<str:{name}>"):
            path = path.replace(form, str(value))
    path = path.replace("^", "").replace("$", "").replace("/?", "/").replace("\\.", ".")
    assert "<" not in path and "(" not in path, f"a parameter of {route} has no value: {path}"
    return "/" + path


@pytest.fixture
def world(make_project, import_rows, author, worker, make_user):
    project = make_project("nli_label", redundancy=1, items_per_page=2)
    import_rows(project, [{"premise": f"P{n}", "hypothesis": f"H{n}", "label": "entailment"} for n in range(4)])
    assignment = assignments.claim_page(project, worker)
    job = Job.objects.create(kind="export", created_by=author, project=project)
    # A live task worker: /readyz answers 200, so any 5xx from it would be the hostile input's doing.
    WorkerHeartbeat.objects.create(
        name="w", host="h", pid=1, queues=["*"], backend="database", started_at=timezone.now(), seen_at=timezone.now()
    )
    item = Item.objects.filter(project=project).first()
    values = {
        "slug": project.slug,
        "item_id": item.pk,
        "assignment_id": assignment.pk,
        "pk": assignment.pk,
        "job_id": job.pk,
        "worker_id": worker.pk,
        "token": "no-such-upload",
        "fmt": "jsonl",
    }
    identities = {"nobody": None, "worker": worker, "author": author, "admin": make_user("admin1", "admin")}
    return values, identities


def test_no_route_answers_hostile_input_with_a_server_error(world):
    values, identities = world
    routes = sorted({concrete(route, values) for route in url_patterns()})
    assert len(routes) > 60  # the walk found the app's routes
    server_errors = []
    for name, user in identities.items():
        client = Client(raise_request_exception=False, **HEADERS)
        if user is not None:
            client.force_login(user)
        for path in routes:
            answers = {
                "GET with hostile headers": client.get(path, {"page": "\u00e9" * 3, "q": "x" * 5000}),
                "nested JSON": client.post(path, NESTED, content_type="application/json"),
                "deep JSON objects": client.post(path, NESTED_OBJECTS, content_type="application/json"),
                "JSON over the form limit": client.post(path, OVER_FORM_LIMIT, content_type="application/json"),
                "empty multipart": client.post(path, b"", content_type="multipart/form-data; boundary=x"),
                "broken multipart": client.post(
                    path, b"--x\r\nno headers", content_type="multipart/form-data; boundary=x"
                ),
            }
            server_errors += [
                f"{name}: {request} to {path} -> {answer.status_code}"
                for request, answer in answers.items()
                if answer.status_code >= 500
            ]
    assert server_errors == []


def test_api_refusals_of_hostile_bodies_are_in_the_error_shape(world):
    values, identities = world
    client = Client(raise_request_exception=False)
    client.force_login(identities["worker"])
    submit = f"/api/v1/assignments/{values['assignment_id']}/submit/"
    nested = client.post(submit, NESTED, content_type="application/json")
    assert nested.status_code == 400 and nested.json()["code"] == "invalid"
    assert "nested more than 32 levels" in nested.json()["detail"]
    too_big = client.post(submit, OVER_FORM_LIMIT, content_type="application/json")
    assert too_big.status_code == 413 and too_big.json()["code"] == "too_large"
    token = Client(raise_request_exception=False).post("/api/v1/token/", NESTED, content_type="application/json")
    assert token.status_code == 400 and token.json()["code"] == "invalid"
    # The page's draft saves read JSON through the same limit.
    draft = client.post(
        f"/work/{values['slug']}/{values['assignment_id']}/draft/", NESTED_OBJECTS, content_type="application/json"
    )
    assert draft.status_code == 400 and "nested" in draft.json()["error"]
    assert Assignment.objects.get(pk=values["assignment_id"]).status == Assignment.Status.OPEN


def test_the_queue_dashboard_keeps_its_pages_but_not_the_object_pages_of_its_tableless_model():
    """Run with the Redis task backend (django_rq installed): the object pages fall to the admin's catch-all."""
    code = """
import django; django.setup()
from django.urls import resolve
for path in ["/admin/django_rq/dashboard/", "/admin/django_rq/dashboard/queues/0/"]:
    assert resolve(path).url_name.startswith("django_rq_"), path
for page in ["1/change/", "1/history/", "1/delete/", "1/", "add/"]:
    assert resolve("/admin/django_rq/dashboard/" + page).func.__name__ == "catch_all_view", page
print("checked")
"""
    env = {"TASKS_BACKEND": "rq", "REDIS_URL": redis_url(6), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    import os

    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True)
    assert done.stdout.strip() == "checked", done.stderr[-2000:]
