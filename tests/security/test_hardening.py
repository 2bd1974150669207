"""Issue 15 hardening: deployment settings, CSP, spreadsheet-safe exports, throttling that says so,
JSON errors on the API and one retry after a dropped database connection."""

import csv
import io
import json
import os
import subprocess
import sys

import pytest
from django.db import connection, transaction
from django.test import Client
from django.urls import path
from rest_framework.decorators import api_view, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.test import APIClient

from config.urls import urlpatterns as site_urls
from core.login_limits import client_ip
from dataset_io.services import exporters

pytestmark = pytest.mark.django_db

# The production environment docs/deploying.md documents (with real host names and a real secret).
PRODUCTION_ENV = {
    "DEBUG": "false",
    "SECRET_KEY": "k3Y-that-is-long-enough-and-varied-0123456789-abcdefghijklmnop",
    "ALLOWED_HOSTS": "nli.example.org",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https",
    "CSRF_TRUSTED_ORIGINS": "https://nli.example.org",
    "TRUSTED_PROXY_COUNT": "1",
}


def run_django(code: str, **env) -> subprocess.CompletedProcess:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env}
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_silent_under_the_documented_production_environment(tmp_path):
    command = (
        "from django.core.management import call_command; call_command('check', '--deploy', '--fail-level', 'WARNING')"
    )
    quiet = run_django(command, **PRODUCTION_ENV, NLI_STUDIO_VAR=str(tmp_path))
    assert quiet.returncode == 0, quiet.stderr
    assert "no issues" in quiet.stdout + quiet.stderr
    # Without the TLS settings the same check warns: the test above could fail.
    bare = {name: value for name, value in PRODUCTION_ENV.items() if not name.startswith("SECURE_")}
    warned = run_django(command, **bare, NLI_STUDIO_VAR=str(tmp_path))
    assert warned.returncode != 0 and "security.W004" in warned.stderr and "security.W008" in warned.stderr


def test_environment_variables_set_but_empty_count_as_unset(tmp_path):
    code = (
        "from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.REDIS_URL == '', s.ALLOWED_HOSTS, s.SECURE_HSTS_SECONDS, "
        "s.SECURE_PROXY_SSL_HEADER, s.TASKS_BACKEND)"
    )
    empty = dict.fromkeys(
        (
            "DATABASE_URL",
            "REDIS_URL",
            "ALLOWED_HOSTS",
            "SECURE_HSTS_SECONDS",
            "SECURE_PROXY_SSL_HEADER",
            "TASKS_BACKEND",
            "CSRF_TRUSTED_ORIGINS",
            "DEBUG",
        ),
        "",
    )
    out = run_django(code, **empty, NLI_STUDIO_VAR=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        "django.db.backends.sqlite3",
        "True",
        "['127.0.0.1',",
        "'localhost']",
        "0",
        "None",
        "database",
    ]


def test_production_settings_are_read_from_the_environment(tmp_path):
    code = (
        "from django.conf import settings as s; "
        "print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SECURE_PROXY_SSL_HEADER, s.CSRF_TRUSTED_ORIGINS)"
    )
    out = run_django(code, **PRODUCTION_ENV, NLI_STUDIO_VAR=str(tmp_path))
    assert out.stdout.strip() == "True 31536000 ('HTTP_X_FORWARDED_PROTO', 'https') ['https://nli.example.org']"


def test_every_page_has_a_csp_with_scripts_from_self_only(client, author):
    for url in ("/", "/accounts/login/", "/api/schema/", "/api/docs/"):
        policy = client.get(url)["Content-Security-Policy"]
        assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy, url
    client.force_login(author)
    policy = client.get("/projects/new/")["Content-Security-Policy"]
    assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]


def test_no_template_has_an_inline_script():
    from pathlib import Path

    for template in Path("templates").rglob("*.html"):
        for line in template.read_text().splitlines():
            if "<script" in line:
                assert "src=" in line or 'type="application/json"' in line, f"{template}: {line.strip()}"


def framed_page(request):
    from django.http import HttpResponse

    return HttpResponse("<p>framed</p>")


def test_a_view_can_name_its_own_frame_ancestors():
    from django.test import RequestFactory

    from common.middleware import ContentSecurityPolicyMiddleware, allow_framing_by

    view = allow_framing_by("https://www.mturk.com", "https://workersandbox.mturk.com")(framed_page)
    middleware = ContentSecurityPolicyMiddleware(view)
    response = middleware(RequestFactory().get("/"))
    assert (
        "frame-ancestors https://www.mturk.com https://workersandbox.mturk.com" in response["Content-Security-Policy"]
    )
    assert response.xframe_options_exempt
    plain = ContentSecurityPolicyMiddleware(framed_page)(RequestFactory().get("/"))
    assert "frame-ancestors 'none'" in plain["Content-Security-Policy"]


# --- exports -----------------------------------------------------------------------------------------

FORMULAS = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\tTab", "\rCR"]


def test_the_spreadsheet_csv_neutralises_formulas_and_dataset_formats_keep_the_text(make_project, import_rows):
    project = make_project("nli_label")
    import_rows(
        project, [{"id": str(i), "premise": text, "hypothesis": "plain hypothesis"} for i, text in enumerate(FORMULAS)]
    )
    everything = exporters.ExportOptions(include_unanswered=True)
    rows = list(csv.DictReader(io.StringIO("".join(exporters.export(project, "csv", everything)))))
    assert sorted(row["premise"] for row in rows) == sorted("'" + text for text in FORMULAS)
    assert {row["hypothesis"] for row in rows} == {"plain hypothesis"}

    records = [json.loads(line) for line in "".join(exporters.export(project, "jsonl", everything)).split("\n") if line]
    assert sorted(record["premise"] for record in records) == sorted(FORMULAS)


def test_the_usnli_dataset_export_round_trips_a_leading_equals(make_project):
    project = make_project("unli_slider")
    from dataset_io.services.importers import import_stream

    import_stream(project, io.StringIO("id,pre,hyp,nli,unli\n1,=1+2,-minus,1,0.5\n"), "usnli")
    rows = list(csv.DictReader(io.StringIO("".join(exporters.export(project, "usnli")))))
    assert (rows[0]["pre"], rows[0]["hyp"]) == ("=1+2", "-minus")


# --- throttling --------------------------------------------------------------------------------------


def test_login_page_lockout_answers_429_with_retry_after(settings, make_user):
    settings.AXES_ENABLED = True
    make_user("target", "worker", password="right-password")
    client = Client()
    answers = [client.post("/accounts/login/", {"username": "target", "password": "wrong"}) for _ in range(5)]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 200, 429]
    assert answers[-1]["Retry-After"] == "900"
    assert "Try again in 15 minutes" in answers[-1].content.decode()
    again = client.post("/accounts/login/", {"username": "target", "password": "right-password"})
    assert again.status_code == 429 and again["Retry-After"] == "900"


def test_token_endpoint_lockout_answers_429_with_retry_after(settings, make_user):
    settings.AXES_ENABLED = True
    make_user("target", "worker", password="right-password")
    api = APIClient()
    answers = [api.post("/api/token/", {"username": "target", "password": "wrong"}, format="json") for _ in range(5)]
    assert [answer.status_code for answer in answers] == [401, 401, 401, 401, 429]
    body = answers[-1].json()
    assert body["code"] == "throttled" and "failed logins" in body["detail"] and answers[-1]["Retry-After"] == "900"
    locked = api.post("/api/token/", {"username": "target", "password": "right-password"}, format="json")
    assert locked.status_code == 429 and locked["Retry-After"] == "900"


def test_spraying_one_password_over_many_usernames_locks_the_address(settings, make_user):
    settings.AXES_ENABLED = True
    settings.LOGIN_SPRAY_USERNAME_LIMIT = 6
    make_user("victim", "worker", password="Summer2026!")
    client = Client()
    answers = [client.post("/accounts/login/", {"username": f"user{n}", "password": "Summer2026!"}) for n in range(6)]
    # One failure per username never trips the per-username limit (5); the sixth username trips the address's.
    assert [answer.status_code for answer in answers] == [200] * 5 + [429]
    sprayed = client.post("/accounts/login/", {"username": "victim", "password": "Summer2026!"})
    assert sprayed.status_code == 429 and sprayed["Retry-After"] == "900"
    elsewhere = Client(REMOTE_ADDR="10.1.2.3").post(
        "/accounts/login/", {"username": "victim", "password": "Summer2026!"}
    )
    assert elsewhere.status_code == 302  # another address is not locked out


def request_from(remote: str, forwarded: str | None = None):
    from django.test import RequestFactory

    extra = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    return RequestFactory().get("/", **extra)


def test_the_client_address_is_read_through_the_trusted_proxies_only(settings):
    settings.TRUSTED_PROXY_COUNT = 0
    assert client_ip(request_from("10.0.0.1", "6.6.6.6")) == "10.0.0.1"  # no proxy: the header is the client's lie
    settings.TRUSTED_PROXY_COUNT = 1
    assert client_ip(request_from("10.0.0.1", "203.0.113.7")) == "203.0.113.7"
    assert client_ip(request_from("10.0.0.1", "6.6.6.6, 203.0.113.7")) == "203.0.113.7"  # forged entry ignored
    assert client_ip(request_from("10.0.0.1", "not-an-address")) == "10.0.0.1"
    settings.TRUSTED_PROXY_COUNT = 2
    assert client_ip(request_from("10.0.0.2", "6.6.6.6, 203.0.113.7, 10.0.0.1")) == "203.0.113.7"


def test_lockouts_behind_the_proxy_are_per_client_not_per_proxy(settings, make_user):
    settings.AXES_ENABLED = True
    settings.TRUSTED_PROXY_COUNT = 1
    make_user("target", "worker", password="right-password")
    attacker = Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.66")
    for _ in range(5):
        attacker.post("/accounts/login/", {"username": "target", "password": "wrong"})
    assert attacker.post("/accounts/login/", {"username": "target", "password": "wrong"}).status_code == 429
    owner = Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.7")  # same proxy, another client
    assert owner.post("/accounts/login/", {"username": "target", "password": "right-password"}).status_code == 302


def test_api_throttles_anonymous_and_authenticated_use(settings, make_user):
    from django.core.cache import cache

    cache.clear()
    settings.API_THROTTLE_RATES = {"anon": "3/minute", "user": "4/minute"}
    anonymous = APIClient()
    guesses = [anonymous.post("/api/token/", {"username": "x", "password": "y"}, format="json") for _ in range(4)]
    assert [guess.status_code for guess in guesses] == [401, 401, 401, 429]
    refused = anonymous.post("/api/token/", {"username": "x", "password": "y"}, format="json")
    assert refused.json()["code"] == "throttled" and int(refused["Retry-After"]) > 0
    user = APIClient()
    user.force_authenticate(make_user("busy", "worker"))
    assert [user.get("/api/projects/").status_code for _ in range(5)] == [200, 200, 200, 200, 429]
    cache.clear()


# --- JSON errors and the dropped connection ------------------------------------------------------------


@api_view(["GET"])
@permission_classes([AllowAny])
def broken(request):
    raise RuntimeError("a bug")


@api_view(["GET"])
@permission_classes([AllowAny])
def count_users(request):
    from django.contrib.auth import get_user_model

    return Response({"users": get_user_model().objects.count()})


@api_view(["GET"])
@permission_classes([AllowAny])
def count_users_in_transaction(request):
    from django.contrib.auth import get_user_model

    with transaction.atomic():
        return Response({"users": get_user_model().objects.count()})


urlpatterns = [
    path("api/broken/", broken),
    path("api/users/", count_users),
    path("api/users-in-transaction/", count_users_in_transaction),
    *site_urls,
]


@pytest.mark.urls(__name__)
def test_an_unexpected_api_error_is_json_500():
    response = Client(raise_request_exception=False).get("/api/broken/")
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "server error", "code": "server_error"}


def test_refused_bodies_always_have_detail(make_project, author):
    project = make_project("nli_label")
    api = APIClient()
    api.force_authenticate(author)
    missing_file = api.post(f"/api/projects/{project.slug}/import/", {"format": "jsonl"}, format="multipart")
    assert missing_file.status_code == 400
    assert missing_file.json()["field"] == "file" and missing_file.json()["detail"] == "No file was submitted."
    assert APIClient().get("/api/projects/").json()["code"] == "not_authenticated"
    assert api.get("/api/projects/no-such/").json()["code"] == "not_found"


def kill_own_connection_on_first_query(times: int):
    """An execute wrapper that terminates the connection's own PostgreSQL backend, `times` times."""
    state = {"left": times}

    def wrapper(execute, sql, params, many, context):
        if state["left"]:
            state["left"] -= 1
            try:
                with context["connection"].connection.cursor() as cursor:
                    cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
            except Exception:  # the backend ends while answering: the query below meets a dead connection
                pass
        return execute(sql, params, many, context)

    return wrapper, state


@pytest.mark.postgres
@pytest.mark.urls(__name__)
@pytest.mark.django_db(transaction=True)
def test_a_dropped_database_connection_is_retried_once(make_user):
    make_user("someone", "worker")
    wrapper, state = kill_own_connection_on_first_query(1)
    connection.ensure_connection()
    with connection.execute_wrapper(wrapper):
        response = Client(raise_request_exception=False).get("/api/users/")
    assert state["left"] == 0  # the connection was dropped ...
    assert response.status_code == 200 and response.json() == {"users": 1}  # ... and the retry answered
    wrapper, state = kill_own_connection_on_first_query(5)
    connection.ensure_connection()
    with connection.execute_wrapper(wrapper):
        failed = Client(raise_request_exception=False).get("/api/users/")
    assert failed.status_code == 503 and failed.json()["code"] == "unavailable"
    assert state["left"] == 3  # tried twice, not more


@pytest.mark.postgres
@pytest.mark.urls(__name__)
@pytest.mark.django_db(transaction=True)
def test_a_connection_dropped_inside_a_transaction_is_retried_once(make_user):
    """Leaving atomic() after the drop, Django's rollback fails and it closes the connection itself; that
    is a drop too (pg_terminate_backend in the middle of a submit, benchmarks/faults.py)."""
    make_user("someone", "worker")
    wrapper, state = kill_own_connection_on_first_query(1)
    connection.ensure_connection()
    with connection.execute_wrapper(wrapper):
        response = Client(raise_request_exception=False).get("/api/users-in-transaction/")
    assert state["left"] == 0
    assert response.status_code == 200 and response.json() == {"users": 1}


# --- big inputs --------------------------------------------------------------------------------------


def jsonl_upload(rows: int, name: str = "rows.jsonl"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    body = "".join(
        json.dumps(
            {
                "id": f"r{n}",
                "premise": f"A premise of some length, number {n}.",
                "hypothesis": f"A hypothesis, number {n}.",
            }
        )
        + "\n"
        for n in range(rows)
    )
    return SimpleUploadedFile(name, body.encode())


def test_api_uploads_over_64_kib_stream_from_a_temporary_file(settings, make_project, author):
    # Django hands a file over FILE_UPLOAD_MAX_MEMORY_SIZE to its TemporaryFileUploadHandler (on disk).
    assert settings.FILE_UPLOAD_MAX_MEMORY_SIZE == 64 * 1024
    assert "django.core.files.uploadhandler.TemporaryFileUploadHandler" in settings.FILE_UPLOAD_HANDLERS
    project = make_project("nli_label")
    api = APIClient()
    api.force_authenticate(author)
    upload = jsonl_upload(1500)
    assert upload.size > settings.FILE_UPLOAD_MAX_MEMORY_SIZE
    answer = api.post(
        f"/api/v1/projects/{project.slug}/import/", {"format": "jsonl", "file": upload}, format="multipart"
    )
    assert answer.status_code == 200 and answer.json()["created"] == 1500


def test_the_size_limit_holds_for_the_api_before_the_file_is_read(settings, make_project, author):
    from annotation.models import Example

    settings.NLI_MAX_IMPORT_BYTES = 10_000
    project = make_project("nli_label")
    api = APIClient()
    api.force_authenticate(author)
    for url in (f"/api/v1/projects/{project.slug}/import/", f"/api/projects/{project.slug}/import/"):
        answer = api.post(url, {"format": "jsonl", "file": jsonl_upload(200)}, format="multipart")
        assert answer.status_code == 413 and "over the import limit" in answer.json()["detail"], url
    assert not Example.objects.exists()
