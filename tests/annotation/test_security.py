"""Login throttling, API tokens that can be revoked, CSRF on forms, secure settings when DEBUG is off."""

import os
import subprocess
import sys

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.conftest import REPO

pytestmark = pytest.mark.django_db


def test_login_is_throttled_after_five_failures(settings, make_user):
    settings.AXES_ENABLED = True
    make_user("target", "worker", password="right-password")
    client = Client()
    for _ in range(4):
        assert client.post("/accounts/login/", {"username": "target", "password": "wrong"}).status_code == 200
    assert client.post("/accounts/login/", {"username": "target", "password": "wrong"}).status_code == 429
    locked = client.post("/accounts/login/", {"username": "target", "password": "right-password"})
    assert locked.status_code == 429
    other = Client().post("/accounts/login/", {"username": "someone-else", "password": "x"}, REMOTE_ADDR="10.9.9.9")
    assert other.status_code == 200


def test_tokens_are_issued_and_revoked(make_user):
    make_user("tok", "worker", password="token-password")
    api = APIClient()
    token = api.post("/api/token/", {"username": "tok", "password": "token-password"}, format="json").json()["token"]
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert api.get("/api/assignments/").status_code == 200
    assert api.delete("/api/token/").status_code == 204
    assert api.get("/api/assignments/").status_code == 401
    assert APIClient().post("/api/token/", {"username": "tok", "password": "nope"}, format="json").status_code == 401


def test_forms_need_a_csrf_token(demo_free_project, worker):
    client = Client(enforce_csrf_checks=True)
    client.force_login(worker)
    page = client.get(f"/work/{demo_free_project.slug}/")
    assignment = page.context["assignment"]
    response = client.post(f"/work/{demo_free_project.slug}/{assignment.id}/submit/", {})
    assert response.status_code == 403


@pytest.fixture
def demo_free_project(make_project, import_rows):
    project = make_project("nli_label")
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    return project


def test_secure_settings_when_debug_is_off():
    code = "from django.conf import settings as s; print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SESSION_COOKIE_HTTPONLY)"
    env = dict(os.environ, DEBUG="false", SECRET_KEY="x" * 50, DJANGO_SETTINGS_MODULE="config.settings")
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["True", "True", "True"]
    env.pop("SECRET_KEY")
    failed = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True, text=True
    )
    assert failed.returncode != 0 and "SECRET_KEY must be set" in failed.stderr


def test_manage_py_without_a_secret_key_says_what_to_set_in_one_line():
    """`manage.py --help` (any command) without SECRET_KEY and DEBUG: refused, one line naming both, no traceback."""
    env = {name: value for name, value in os.environ.items() if name not in ("SECRET_KEY", "DEBUG")}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    refused = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "--help"], env=env, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode != 0 and refused.stdout == ""
    assert refused.stderr.splitlines() == [
        "manage.py: SECRET_KEY must be set when DEBUG is off (DEBUG=true while developing)"
    ]
