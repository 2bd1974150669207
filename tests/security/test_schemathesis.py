"""Schemathesis against a live server: every API operation, anonymously and with an admin's token.

The operations are generated from the schema built in-process at import (pytest needs them at collection,
before any server runs); test_published_schema_is_the_one_tested checks the live server serves that same
schema. schemathesis' lazy from_fixture loader is not used: 4.32.5 sets Function._nodeid, which pytest 9
no longer has.

The checks: no 5xx, responses (bodies, content types, headers) match the OpenAPI schema the server
publishes. status_code_conformance is left out: DRF answers 401/403/404 on every operation and the
schema does not list them (drf-spectacular documents success and the explicit error bodies only).
"""
import json
import zlib
from collections import Counter

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
)

from annotation.demo import load_demo
from annotation.models import Project
from annotation.services.assignments import claim_page

CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance, response_headers_conformance]
EXAMPLES_PER_OPERATION = 15
ADMIN_TOKEN = "0123456789abcdef0123456789abcdef01234567"  # fixed, so a revoked token can be put back

pytestmark = pytest.mark.django_db(transaction=True)


def generated_schema() -> dict:
    """The schema exactly as GET /api/schema/?format=json serves it (test_published_schema_is_the_one_tested)."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    return json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))


SCHEMA = generated_schema()
schema = schemathesis.openapi.from_dict(SCHEMA, config=schemathesis.Config.from_dict({
    "seed": 7,
    "generation": {"max-examples": EXAMPLES_PER_OPERATION},
}))


CALLS: Counter = Counter()  # requests sent per (who, operation); tests/security/conftest.py reports them


@pytest.fixture(autouse=True)
def demo_data():
    """The demo projects, and a page the admin holds, so that path parameters can name real objects."""
    from django.contrib.auth import get_user_model

    load_demo()
    page = claim_page(Project.objects.get(slug="demo-nli"), get_user_model().objects.get(username="admin"))
    return {"slug": [project.slug for project in Project.objects.all()], "id": [str(page.pk)]}


def aim_at_real_objects(case, demo_data):
    """Two cases in three name a real project or page instead of the generated value (which mostly 404s)."""
    parameters = case.path_parameters or {}
    choice = zlib.crc32(repr(sorted(parameters.items())).encode()) % 3
    for name, real in demo_data.items():
        if name in parameters and choice:
            parameters[name] = real[choice % len(real)]


def test_published_schema_is_the_one_tested(live_server):
    assert requests.get(f"{live_server.url}/api/schema/?format=json", timeout=30).json() == SCHEMA


def admin_headers() -> dict:
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.get(username="admin")
    # DELETE /api/token/ is one of the operations: put the token back before every call.
    Token.objects.get_or_create(user=admin, defaults={"key": ADMIN_TOKEN})
    return {"Authorization": f"Token {ADMIN_TOKEN}"}


@schema.parametrize()
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # the demo data is read, never reset
def test_api_anonymous(case, live_server, demo_data):
    aim_at_real_objects(case, demo_data)
    case.headers = {key: value for key, value in (case.headers or {}).items() if key.lower() != "authorization"}
    CALLS["anonymous", case.operation.label] += 1
    case.call_and_validate(base_url=live_server.url, checks=CHECKS)


@schema.parametrize()
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_api_as_admin(case, live_server, demo_data):
    aim_at_real_objects(case, demo_data)
    case.headers = {**(case.headers or {}), **admin_headers()}
    CALLS["admin", case.operation.label] += 1
    case.call_and_validate(base_url=live_server.url, checks=CHECKS)
