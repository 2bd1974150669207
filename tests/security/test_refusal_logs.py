"""A refused request is logged in one line (what, which path), not with a traceback: a page's PermissionDenied,
a suspicious request, an API refusal. A server error keeps its traceback."""

import io
import logging

import pytest
from django.test import Client
from rest_framework.test import APIClient

from common.log_filters import RefusalsInOneLine

pytestmark = pytest.mark.django_db


@pytest.fixture
def console():
    """What the configured console handler writes."""
    handler = next(
        handler
        for handler in logging.getLogger().handlers
        if any(isinstance(each, RefusalsInOneLine) for each in handler.filters)
    )
    written = io.StringIO()
    before = handler.setStream(written)
    yield written
    handler.setStream(before)


def test_refused_requests_are_logged_in_one_line_and_server_errors_with_their_traceback(console, make_project, worker):
    project = make_project("nli_label")
    page, api = Client(), APIClient()
    page.force_login(worker)
    api.force_login(worker)
    assert page.get(f"/projects/{project.slug}/").status_code == 403  # PermissionDenied, raised
    assert Client(HTTP_HOST="evil.example").get("/").status_code == 400  # DisallowedHost
    assert api.get(f"/api/v1/projects/{project.slug}/progress/").status_code == 403
    assert console.getvalue().splitlines() == [
        f"Forbidden (Permission denied): /projects/{project.slug}/",
        "Invalid HTTP_HOST header: 'evil.example'. You may need to add 'evil.example' to ALLOWED_HOSTS.",
        f"Forbidden: /api/v1/projects/{project.slug}/progress/",
    ]
    try:
        raise RuntimeError("a bug")
    except RuntimeError as error:
        logging.getLogger("django.request").error(
            "Internal Server Error: /x", exc_info=error, extra={"status_code": 500}
        )
    assert "Traceback (most recent call last)" in console.getvalue() and "RuntimeError: a bug" in console.getvalue()
