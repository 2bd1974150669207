"""Shared fixtures. Service-backed tests: when CI=true an unreachable service fails them; elsewhere they
are skipped with a line in the summary that says which service was missing."""

import os
import socket
from pathlib import Path

import pytest
from django.conf import settings

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
IN_CI = os.environ.get("CI", "").lower() == "true"


def service_reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def require_service(name: str, host: str, port: int) -> None:
    if service_reachable(host, port):
        return
    message = f"{name} is not reachable at {host}:{port}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: service tests must run)")
    pytest.skip(f"{message}: skipped")


def on_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


# The task backend that runs a job inside the call that starts it (a test reads the finished job at once).
IMMEDIATE_TASKS = {
    "default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend", "QUEUES": ["default", "gpu"]}
}


def redis_url(database: int) -> str:
    """A Redis database of this pass's own: make test runs its SQLite pass beside the PostgreSQL pass (+8), and
    the core suite without a feature app (+1: its suites ask for 0 and 6 only, which no other pass uses as
    1 and 7) after them, against one Redis server (bin/test-passes). Only the core suite's half that runs
    after the SQLite pass reaches Redis."""
    left_out = 1 if os.environ.get("LEFT_OUT_APPS") else 0
    return f"redis://127.0.0.1:6379/{database + (8 if on_postgres() else 0) + left_out}"


# Fixtures through which a test reaches the database (pytest-django's; every app fixture that writes rows
# asks for one of them).
DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "live_server",
}


def uses_database(item) -> bool:
    return item.get_closest_marker("django_db") is not None or bool(DATABASE_FIXTURES & set(item.fixturenames))


# What only the label-variation app provides: a parametrized case naming one needs the app (case()).
LABEL_VARIATION = frozenset(
    {
        *("varierr", "livenli", "taxonomy", "label_explanation", "explanation_validation"),
        *("tag_reasons", "own_explanations", "project-item-reasons", "project-variation", "project-reasons"),
        "project-own-explanations",
    }
)


def case(*values, id=None):
    """A parametrize case, marked label_variation where it names what only that app provides (so the core
    pass without the app leaves it out)."""
    named = {value for value in values if isinstance(value, str)}
    return pytest.param(*values, id=id, marks=[pytest.mark.label_variation] if named & LABEL_VARIATION else [])


def pytest_collection_modifyitems(config, items):
    # Without the label-variation app (tests/settings_core.py), its tests and those marked as needing it are
    # left out: what is left is the core suite, run to show the product works without the app.
    from django.apps import apps

    if not apps.is_installed("label_variation"):
        app_tests = Path(__file__).parent / "label_variation"
        needs_app = [item for item in items if "label_variation" in item.keywords or app_tests in item.path.parents]
        if needs_app:
            config.hook.pytest_deselected(items=needs_app)
            left_out = set(needs_app)
            items[:] = [item for item in items if item not in left_out]
    # Tests marked postgres run in the PostgreSQL pass of `make test` (DATABASE_URL=postgres://...).
    if on_postgres():
        # That pass is for what the database changes: a test that never touches it (pure metrics, readers,
        # design checks, model training) ran in the first pass and would only run again.
        same_anywhere = [item for item in items if not uses_database(item) and "postgres" not in item.keywords]
        if same_anywhere:
            config.hook.pytest_deselected(items=same_anywhere)
            left_out = set(same_anywhere)
            items[:] = [item for item in items if item not in left_out]
        return
    skip = pytest.mark.skip(reason="needs DATABASE_URL=postgres://... (run by the PostgreSQL pass of make test)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_throttles():
    """Each test starts with the API throttles' counts at zero: they live in the process's cache, and a test
    that sends many requests (the hostile-input walk) would otherwise throttle the tests after it."""
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    if isinstance(caches["default"], LocMemCache):  # never a shared Redis
        caches["default"].clear()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The test client's login() passes no request, which django-axes needs; test_security enables it.
    settings.AXES_ENABLED = False


@pytest.fixture(scope="session", autouse=True)
def _postgres_reachable(request):
    if on_postgres():
        db = settings.DATABASES["default"]
        require_service("PostgreSQL", db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432))


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the shared datasets are missing: {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def make_user(db):
    from django.contrib.auth import get_user_model

    from core.roles import grant_role

    def make(username: str, role: str = "worker", password: str = "a-test-password"):
        user = get_user_model().objects.create_user(username=username, password=password)
        grant_role(user, role)
        return user

    return make


@pytest.fixture
def author(make_user):
    return make_user("author1", "author")


@pytest.fixture
def worker(make_user):
    return make_user("worker1", "worker")


@pytest.fixture
def make_project(author):
    from annotation.services.projects import create_project

    def make(task_type: str, slug: str | None = None, **kwargs):
        kwargs.setdefault("status", "published")  # a running study unless the test says otherwise
        return create_project(slug or task_type.replace("_", "-"), task_type, kwargs.pop("owner", author), **kwargs)

    return make


@pytest.fixture
def import_rows():
    """Import JSON rows (written as JSONL) into a project through the real importer."""
    import io
    import json

    from dataset_io.services.importers import import_stream

    def run(project, rows, fmt="jsonl"):
        return import_stream(project, io.StringIO("".join(json.dumps(r) + "\n" for r in rows)), fmt)

    return run


@pytest.fixture
def web_import():
    """Import a file through the pages, as an author does: upload (the preview), then confirm. Returns the
    confirm's response, or the page the upload was sent back to when it was refused."""

    def run(client, project, fmt, upload, **confirm):
        staged = client.post(f"/projects/{project.slug}/import/", {"format": fmt, "file": upload})
        if staged.status_code != 302 or "/import/" not in staged["Location"]:
            return client.get(staged["Location"]) if staged.status_code == 302 else staged
        assert client.get(staged["Location"]).status_code == 200  # the preview
        return client.post(staged["Location"], {"format": fmt, "purpose": "data", "confirm": "1", **confirm})

    return run
