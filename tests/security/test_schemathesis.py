"""Schemathesis against a live server: every API operation, as an anonymous caller and with the tokens of
a worker, an author and an admin, with every check schemathesis has (`call_and_validate` with no check
list runs them all: server errors, status codes, content types, headers and bodies against the schema,
valid data accepted, invalid data refused, missing auth headers, unsupported methods, ...).

test_api calls the development server (pytest-django's live server on the test database); test_api_served
sends the same examples to bin/serve (uvicorn and common/asgi.py, the demo loaded as `make demo` has it).

The operations are generated from the schema built in-process at import (pytest needs them at collection,
before any server runs); test_published_schema_is_the_one_tested checks the live server serves that same
schema, and test_schema_is_valid_openapi validates it with openapi-spec-validator. schemathesis' lazy
from_fixture loader is not used: 4.32.5 sets Function._nodeid, which pytest 9 no longer has.

test_api_stateful runs schemathesis' state machine as the worker, the author and the admin: scenarios
that follow the schema's OpenAPI links (common/api_schema.LINKS), so that a created project, a claimed
page or a started run is used by the next calls (read, changed, submitted, released, cancelled) with every
check, including the stateful ones (what a POST created can be read back).

Bounded for CI (EXAMPLES_PER_OPERATION, STATEFUL_SCENARIOS and STATEFUL_STEPS); `bin/fuzz-api` runs the
same tests with more examples, scenarios and steps.
No check is left out, for any caller, and no operation is told to expect another status than schemathesis'
defaults: a request the schema allows is never answered 400. What the state or a file's content refuses is
answered 404 or 409 (common.api_schema.schema_refusal, docs/api.md), which positive_data_acceptance accepts.
"""

import json
import os
import subprocess
import zlib
from collections import Counter

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.errors import FlakyStrategyDefinition
from openapi_spec_validator import validate
from rest_framework.authtoken.models import Token
from schemathesis.core.failures import FailureGroup

from annotation.models import Project
from annotation.services.assignments import claim_page
from benchmarks._common import PYTHON, REPO_ROOT, AppServer
from dataset_io.demo import load_demo

SEED = int(os.environ.get("FUZZ_SEED", 7))  # another seed explores other examples and scenarios
EXAMPLES_PER_OPERATION = int(os.environ.get("FUZZ_EXAMPLES", 4))
# Fixed tokens, so that one revoked by DELETE /api/v1/token/ can be put back before the next call.
TOKENS = {
    "worker": "1111111111111111111111111111111111111111",
    "author": "2222222222222222222222222222222222222222",
    "admin": "0123456789abcdef0123456789abcdef01234567",
}
USERNAMES = {"worker": "worker1", "author": "author", "admin": "admin"}  # the demo's accounts
CALLERS = ["anonymous", *TOKENS]
pytestmark = pytest.mark.django_db(transaction=True)


def generated_schema() -> dict:
    """The schema exactly as GET /api/schema/?format=json serves it (test_published_schema_is_the_one_tested)."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    return json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))


SCHEMA = generated_schema()
# The coverage phase (a deterministic sweep of boundary values for every parameter) is the long part: on
# for bin/fuzz-api, off in the bounded run of make test.
COVERAGE_PHASE = os.environ.get("FUZZ_COVERAGE", "") == "1"
# schemathesis 4.32.5 cannot build the coverage phase's cases for a multipart body whose file fields sit in a
# union of objects with forbidden properties (`not: {}`, the parameters a suite does not read): its check of a
# drawn candidate raises "Unsupported type: 'Binary'" while the tests are collected, which stopped the whole
# run. That operation gets the examples and fuzzing phases only; test_the_coverage_phase_builds tells when a
# release builds it.
COVERAGE_PHASE_FAILS_TO_BUILD = [("POST", "/api/v1/evaluation/runs/")]


def fuzz_config(coverage: bool) -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {"max-examples": EXAMPLES_PER_OPERATION},
            "phases": {"coverage": {"enabled": coverage}},
            "operations": [
                {"include-method": method, "include-path": path, "phases": {"coverage": {"enabled": False}}}
                for method, path in COVERAGE_PHASE_FAILS_TO_BUILD
            ],
        }
    )


schema = schemathesis.openapi.from_dict(SCHEMA, config=fuzz_config(COVERAGE_PHASE))


# Scenarios of the state machine per caller, and the most calls in one (the first call included).
STATEFUL_SCENARIOS = int(os.environ.get("FUZZ_SCENARIOS", 10))
STATEFUL_STEPS = int(os.environ.get("FUZZ_STEPS", 8))
# The callers who can create something to follow (the anonymous caller gets 401 from every call).
STATEFUL_CALLERS = list(TOKENS)

# Requests sent per (who, operation), and links followed per (who, link); tests/security/conftest.py
# reports them.
CALLS: Counter = Counter()
STATEFUL_CALLS: Counter = Counter()
LINKS_FOLLOWED: Counter = Counter()


@pytest.fixture
def demo_data():
    """The demo projects, and a page the worker and the admin each hold, so that path parameters can name
    real objects."""
    from django.contrib.auth import get_user_model

    load_demo()
    project = Project.objects.get(slug="demo-nli")
    pages = [claim_page(project, get_user_model().objects.get(username=USERNAMES[who])) for who in ("worker", "admin")]
    return {"slug": [project.slug for project in Project.objects.all()], "id": [str(page.pk) for page in pages if page]}


def aim_at_real_objects(case, demo_data):
    """Two cases in three name a real project or page instead of the generated value (which mostly 404s)."""
    parameters = case.path_parameters or {}
    choice = zlib.crc32(repr(sorted(parameters.items())).encode()) % 3
    for name, real in demo_data.items():
        if name in parameters and choice:
            parameters[name] = real[choice % len(real)]


def test_published_schema_is_the_one_tested(live_server):
    assert requests.get(f"{live_server.url}/api/schema/?format=json", timeout=30).json() == SCHEMA


def test_schema_is_valid_openapi():
    validate(SCHEMA)  # raises OpenAPIValidationError naming the first problem
    operations = [
        (path, method, operation) for path, methods in SCHEMA["paths"].items() for method, operation in methods.items()
    ]
    assert all(path.startswith("/api/v1/") for path, _, _ in operations)
    for path, method, operation in operations:
        for status in ("400", "401", "403", "404", "429", "500"):
            body = operation["responses"][status]["content"]["application/json"]["schema"]
            assert body == {"$ref": "#/components/schemas/Error"}, (method, path, status)
    assert SCHEMA["components"]["schemas"]["Error"]["required"] == ["detail"]
    imports = SCHEMA["paths"]["/api/v1/projects/{slug}/import/"]["post"]["requestBody"]["content"]
    assert list(imports) == ["multipart/form-data"]
    assert imports["multipart/form-data"]["schema"]["$ref"].endswith("/Import")


def test_links_lead_from_what_was_created_to_the_operations_on_it():
    operations = {
        operation["operationId"]: (path, operation)
        for path, methods in SCHEMA["paths"].items()
        for operation in methods.values()
    }
    links = {
        (method, path, status): response["links"]
        for path, methods in SCHEMA["paths"].items()
        for method, operation in methods.items()
        for status, response in operation["responses"].items()
        if "links" in response
    }
    claimed = links["post", "/api/v1/projects/{slug}/claim/", "201"]
    assert set(claimed) == {"assignments_retrieve", "assignments_submit_create", "assignments_release_create"}
    assert {link["parameters"]["id"] for link in claimed.values()} == {"$response.body#/id"}
    created = links["post", "/api/v1/projects/", "201"]
    assert {"projects_retrieve", "projects_partial_update", "projects_claim_create"} <= set(created)
    assert set(links["post", "/api/v1/evaluation/runs/", "201"]) >= {"evaluation_runs_retrieve", "jobs_cancel_create"}
    assert set(links["post", "/api/v1/projects/{slug}/import/", "202"]) == {
        "jobs_retrieve",
        "jobs_cancel_create",
        "jobs_output_retrieve",
    }
    for answer, named in links.items():
        for link in named.values():
            path, operation = operations[link["operationId"]]
            path_parameters = {parameter["name"] for parameter in operation["parameters"] if parameter["in"] == "path"}
            assert set(link["parameters"]) == path_parameters, (answer, path)


def test_the_coverage_phase_builds_for_every_operation_but_the_one_known_to_fail():
    """bin/fuzz-api turns the coverage phase on, and a case it cannot build fails the run's collection: every
    operation's cases are built here as its collection builds them, and the one left out of that phase still
    fails to build (once a schemathesis release builds it, it goes back in)."""
    from schemathesis.checks import load_all_checks
    from schemathesis.generation.feedback import FeedbackSources
    from schemathesis.pytest._test_builder import build_operation_test

    load_all_checks()
    with_coverage = schemathesis.openapi.from_dict(SCHEMA, config=fuzz_config(coverage=True))
    unconfigured = schemathesis.openapi.from_dict(
        SCHEMA, config=schemathesis.Config.from_dict({"seed": SEED, "phases": {"coverage": {"enabled": True}}})
    )

    def build(of, method: str, path: str) -> None:
        operation = of[path][method]
        build_operation_test(
            config=of.config,
            operation=operation,
            test_func=lambda case: None,
            given_kwargs={},
            feedback=FeedbackSources(),
        )

    operations = [(method.upper(), path) for path, methods in SCHEMA["paths"].items() for method in methods]
    for method, path in operations:
        build(with_coverage, method, path)
    for method, path in COVERAGE_PHASE_FAILS_TO_BUILD:
        with pytest.raises(ValueError, match="Unsupported type: 'Binary'"):
            build(unconfigured, method, path)


def headers_of(who: str) -> dict:
    from django.contrib.auth import get_user_model

    if who == "anonymous":
        return {}
    user = get_user_model().objects.get(username=USERNAMES[who])
    # DELETE /api/v1/token/ is one of the operations: put the token back before every call.
    Token.objects.filter(user=user).exclude(key=TOKENS[who]).delete()
    Token.objects.get_or_create(user=user, defaults={"key": TOKENS[who]})
    return {"Authorization": f"Token {TOKENS[who]}"}


def authenticate_as(who, case) -> None:
    """Drop a generated Authorization header: the caller's credentials go with the call, as schemathesis' CLI
    passes `-H`, so that ignored_auth takes them for valid ones and probes the operation without them and
    with made-up ones (the anonymous caller sends none)."""
    case.headers = {key: value for key, value in (case.headers or {}).items() if key.lower() != "authorization"}


def call_as(who, case, base_url, credentials, real_objects):
    aim_at_real_objects(case, real_objects)
    authenticate_as(who, case)
    CALLS[who, case.operation.label] += 1
    case.call_and_validate(base_url=base_url, headers=credentials)


@pytest.fixture(autouse=True)
def generous_throttles(settings):
    settings.API_THROTTLE_RATES = {"anon": "100000/minute", "user": "100000/minute"}


PUT_TOKENS_BACK = f"""
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
for who, key in {TOKENS!r}.items():
    user = get_user_model().objects.get(username={USERNAMES!r}[who])
    Token.objects.filter(user=user).exclude(key=key).delete()
    Token.objects.get_or_create(user=user, defaults={{"key": key}})
"""


class ServedApp:
    """bin/serve as deployed behind uvicorn and common/asgi.py (its own SQLite database with the demo loaded,
    as `make demo` serves it), with the callers' tokens put in place by a management shell."""

    def __init__(self, server: AppServer):
        self.server = server
        self.url = f"http://127.0.0.1:{server.port}"
        self.put_tokens_back()
        self.real_objects = {
            "slug": [project["slug"] for project in self.get("admin", "/api/v1/projects/?page_size=100")["results"]],
            "id": [
                str(self.post("worker", "/api/v1/projects/demo-nli/claim/")["id"]),
                str(self.post("admin", "/api/v1/projects/demo-nli/claim/")["id"]),
            ],
        }

    def put_tokens_back(self):
        subprocess.run(
            [PYTHON, "manage.py", "shell", "-c", PUT_TOKENS_BACK], cwd=REPO_ROOT, env=self.server.env, check=True
        )

    def credentials(self, who: str) -> dict:
        return {} if who == "anonymous" else {"Authorization": f"Token {TOKENS[who]}"}

    def get(self, who, path):
        return requests.get(self.url + path, headers=self.credentials(who), timeout=60).json()

    def post(self, who, path):
        return requests.post(self.url + path, headers=self.credentials(who), timeout=60).json()


@pytest.fixture(scope="module")
def served_app(tmp_path_factory):
    server = AppServer(
        tmp_path_factory.mktemp("served"),
        DEBUG="true",
        TASK_WORKERS="0",
        EXPIRY_SECONDS="0",
        API_ANON_RATE="100000/minute",
        API_USER_RATE="100000/minute",
    )
    server.start(seconds=float(os.environ.get("BROWSER_SERVER_START_S", 300)))
    try:
        yield ServedApp(server)
    finally:
        server.stop()


@pytest.mark.parametrize("who", CALLERS)
@schema.parametrize()
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
def test_api(case, who, live_server, demo_data):
    """Every operation against the development server (pytest-django's live server on the test database)."""
    call_as(who, case, live_server.url, headers_of(who), demo_data)


@pytest.mark.slow
@pytest.mark.parametrize("who", CALLERS)
@schema.parametrize()
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
def test_api_served(case, who, served_app):
    """Every operation against bin/serve: the same examples and checks, through the production stack."""
    call_as(who, case, served_app.url, served_app.credentials(who), served_app.real_objects)
    if case.operation.label == "DELETE /api/v1/token/":
        served_app.put_tokens_back()


def workflow_of(who, live_server, demo_data, scenarios_run: Counter, failures: list):
    """schemathesis' state machine for the schema, calling the live server as `who`; counts the scenarios
    it completes in scenarios_run and keeps every check's failure in failures."""

    class Workflow(schema.as_state_machine()):
        def step(self, input):
            if input.transition is None:
                # A scenario's first call: aim it at the demo's objects, as test_api does. Later calls
                # keep what the link gave them.
                aim_at_real_objects(input.case, demo_data)
            elif input.is_applied:
                LINKS_FOLLOWED[who, input.transition.id] += 1
            return super().step(input)

        def before_call(self, case):
            authenticate_as(who, case)
            self.credentials = headers_of(who)
            STATEFUL_CALLS[who, case.operation.label] += 1

        def get_call_kwargs(self, case):
            return {"base_url": live_server.url, "headers": self.credentials}

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            try:
                case.validate_response(
                    response,
                    additional_checks=additional_checks,
                    transport_kwargs=kwargs or None,
                    recorder=self.recorder,
                )
            except FailureGroup as failure:
                failures.append(failure)
                raise

        def teardown(self):
            scenarios_run["completed"] += 1
            super().teardown()

    return Workflow


@pytest.mark.parametrize("who", STATEFUL_CALLERS)
def test_api_stateful(who, live_server, demo_data):
    """STATEFUL_SCENARIOS scenarios of the state machine, with every check. Hypothesis replays the choices
    that led somewhere new, but here the server's state changes between scenarios (projects created, pages
    claimed), so a replay can find other rules open and Hypothesis gives up with FlakyStrategyDefinition.
    That is no finding about the API (schemathesis' own runner restarts the same way): the run goes on
    with the next seed until the scenarios are done. A check's failure is kept when it happens, since the
    replay that would raise it may be the one that gives up; the first one fails the test."""
    scenarios_run: Counter = Counter()
    failures: list[FailureGroup] = []
    workflow = workflow_of(who, live_server, demo_data, scenarios_run, failures)
    for attempt in range(STATEFUL_SCENARIOS):
        left = STATEFUL_SCENARIOS - scenarios_run["completed"]
        if left <= 0:
            break
        try:
            seed(SEED + attempt)(workflow).run(
                settings=settings(
                    max_examples=left,
                    stateful_step_count=STATEFUL_STEPS,
                    deadline=None,
                    phases=[Phase.generate],
                    suppress_health_check=list(HealthCheck),
                    database=None,
                )
            )
        except FlakyStrategyDefinition:
            if failures:
                raise failures[0] from None
            continue
        break
    assert scenarios_run["completed"] >= STATEFUL_SCENARIOS, f"only {scenarios_run['completed']} scenarios ran"
