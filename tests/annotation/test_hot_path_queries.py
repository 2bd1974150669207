"""The SQL statements of one claim and one submit, authentication included, pinned per task type: a change
that adds a query to the hot path fails here. Counted through the API with session authentication (what
the worker's page uses), for a one-item page."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Annotation
from annotation.tasktypes import TASK_TYPES

# Whole transactions, as in production: inside a test transaction every atomic block adds SAVEPOINTs.
pytestmark = pytest.mark.django_db(transaction=True)

# One valid answer per task type: the first its task type gives as an example.
ANSWERS = {name: task.example_answers(task.default_options())[0] for name, task in TASK_TYPES.items()}
# Before the lean path: 16 per claim and 15 per submit. Now: session, user with roles, project with the
# worker's standing and open page, lock, page insert, then the claims insert and an update per item (claim);
# session, user with roles, one lock of the page with its items and the worker's standing, then the answers
# insert, an update per item and the page's update (submit; a claim counts while its page is open, so no claim
# row changes). PostgreSQL gets each request's last writes as one statement (compiled_queries.write_together),
# SQLite one after another.
STATEMENT_BUDGETS = {"sqlite": (7, 6), "postgresql": (6, 4)}  # (claim, submit) of a one-item page


def budgets() -> tuple[int, int]:
    return STATEMENT_BUDGETS[connection.vendor]


# Written hypotheses are checked against the project's earlier ones (no copies): one more read.
EXTRA_SUBMIT_QUERIES = {"hypothesis_writing": 1}
TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


def statements(captured) -> list[str]:
    """The SQL a request sent, less transaction control (SQLite logs its BEGIN IMMEDIATE, PostgreSQL not)."""
    return [query["sql"] for query in captured.captured_queries if not query["sql"].startswith(TRANSACTION_CONTROL)]


@pytest.fixture
def worker_client(client, worker):
    client.force_login(worker)
    return client


def one_item_project(make_project, import_rows, task_type):
    project = make_project(task_type, items_per_page=1)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(4)])
    if project.task.per_atom:
        import_rows(project, [{"example_id": str(i), "atoms": [f"atom {i}"]} for i in range(4)], "atoms")
    return project


def claim_and_submit(worker_client, project, task_type):
    """(claim statements, submit statements) of one cycle, after a first warm-up cycle."""
    counts = []
    for _ in range(2):
        with CaptureQueriesContext(connection) as claim_sql:
            claimed = worker_client.post(f"/api/projects/{project.slug}/claim/")
        assert claimed.status_code == 201, claimed.content
        page = claimed.json()
        answers = {str(item["id"]): {"value": ANSWERS[task_type]} for item in page["items"]}
        with CaptureQueriesContext(connection) as submit_sql:
            submitted = worker_client.post(
                f"/api/assignments/{page['id']}/submit/",
                json.dumps({"answers": answers}),
                content_type="application/json",
            )
        assert submitted.status_code == 200, submitted.content
        assert Annotation.objects.filter(assignment_id=page["id"]).count() == 1
        counts.append((claim_sql, submit_sql))
    return counts[-1]


@pytest.mark.parametrize("task_type", list(ANSWERS))
@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_claim_and_submit_stay_within_their_sql_budget(make_project, import_rows, worker_client, task_type, database):
    # Both passes of `make test`: the hot path's statements are compiled once per process and per database
    # (common/compiled_queries.py), and PostgreSQL's column ranges differ from SQLite's.
    project = one_item_project(make_project, import_rows, task_type)
    claim_sql, submit_sql = claim_and_submit(worker_client, project, task_type)
    claim, submit = statements(claim_sql), statements(submit_sql)
    max_claim, max_submit = budgets()
    assert len(claim) <= max_claim, "\n".join(sql[:160] for sql in claim)
    assert len(submit) <= max_submit + EXTRA_SUBMIT_QUERIES.get(task_type, 0), "\n".join(sql[:160] for sql in submit)


def test_token_authentication_costs_no_more_than_a_session(make_project, import_rows, worker, client):
    """API clients (the load benchmark, scripts) send a token: token, user and roles are one statement."""
    from rest_framework.authtoken.models import Token

    project = one_item_project(make_project, import_rows, "nli_label")
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {Token.objects.create(user=worker).key}"
    claim_sql, submit_sql = claim_and_submit(client, project, "nli_label")
    max_claim, max_submit = budgets()
    assert len(statements(claim_sql)) <= max_claim - 1, "\n".join(sql[:160] for sql in statements(claim_sql))
    assert len(statements(submit_sql)) <= max_submit - 1


@pytest.mark.label_variation
def test_reasons_ticked_with_a_page_cost_one_insert_for_the_page(make_project, import_rows, worker, client, author):
    """Where workers tag disagreement reasons with their answers (reason_taggers "workers"), a page sent with
    reasons costs one statement more, the tags' insert, however many items carry them; checking them reads
    nothing (the taxonomy is a study setting, the page's lock already holds the study)."""
    from annotation.services.projects import update_project
    from label_variation.models import ReasonTag

    project = make_project("nli_label", items_per_page=2)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(8)])
    update_project(project, changed_by=author, reason_taggers="workers")
    client.force_login(worker)
    counts = []
    for reasons in (None, ["Lexical"], None, ["Lexical"]):  # warm-up pair, then the measured pair
        page = client.post(f"/api/projects/{project.slug}/claim/").json()
        answers = {
            str(item["id"]): {"value": "n", **({"reasons": reasons} if reasons else {})} for item in page["items"]
        }
        with CaptureQueriesContext(connection) as submit_sql:
            submitted = client.post(
                f"/api/assignments/{page['id']}/submit/",
                json.dumps({"answers": answers}),
                content_type="application/json",
            )
        assert submitted.status_code == 200, submitted.content
        counts.append(len(statements(submit_sql)))
    per_item_updates = 1 if connection.vendor == "sqlite" else 0  # the page's second item
    assert counts[2] <= budgets()[1] + per_item_updates
    assert counts[3] == counts[2] + 1
    assert ReasonTag.objects.count() == 4  # two pages of two items each


@pytest.mark.postgres
def test_a_pages_statements_do_not_grow_with_its_items(make_project, import_rows, worker, client):
    """On PostgreSQL a page of five items costs the statements of a page of one: its claims, answers and item
    counters go out as one statement per request."""
    counts = {}
    for items_per_page in (1, 5):
        project = make_project("nli_label", f"pages-of-{items_per_page}", items_per_page=items_per_page)
        import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(20)])
        client.force_login(worker)
        for _ in range(2):  # the second cycle is counted
            with CaptureQueriesContext(connection) as claim_sql:
                page = client.post(f"/api/projects/{project.slug}/claim/").json()
            assert len(page["items"]) == items_per_page
            answers = {str(item["id"]): {"value": "n"} for item in page["items"]}
            with CaptureQueriesContext(connection) as submit_sql:
                submitted = client.post(
                    f"/api/assignments/{page['id']}/submit/", {"answers": answers}, content_type="application/json"
                )
            assert submitted.status_code == 200, submitted.content
        assert Annotation.objects.filter(assignment_id=page["id"]).count() == items_per_page
        counts[items_per_page] = (len(statements(claim_sql)), len(statements(submit_sql)))
    assert counts[5] == counts[1] == budgets()
