"""Who reaches what: every HTML page and every API route, for anonymous, a worker (who holds a page), another
worker, the owning author, another author and an admin, under the one status policy of the access module: a
project or run you may not see answers 404 (as if it did not exist), one you may see but not act on answers
403. One table row per route; a completeness test keeps the table in step with the URL configuration, and
a second table checks that workers reach nothing of a draft, paused, closed or members-only study.

Status legend: 200/201/204 reached; 302 redirect (LOGIN: to the login page); 400 reached but the request
itself is refused; 401/403 refused; 404 hidden; 405 wrong method. Admins are admins by role (the "admin"
group), not superusers: they manage everything but annotate only if also given the worker role, so the
worker pages refuse them (403).
"""

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from annotation.models import Assignment, Project
from annotation.services.assignments import claim_page, submit_page
from jobs.models import Job
from tests.conftest import case
from tests.security.db import rolled_back

pytestmark = pytest.mark.django_db

WHO = ("anonymous", "worker", "other_worker", "owner", "other_author", "admin")
LOGIN = "login"  # a 302 whose Location is the login page


def row(*statuses):
    return dict(zip(WHO, statuses))


MANAGE_PAGE = row(LOGIN, 403, 403, 200, 404, 200)
AUTHOR_PAGE = row(LOGIN, 403, 403, 200, 200, 200)
RUN_PAGE = row(LOGIN, 403, 403, 200, 404, 200)
MANAGE_API = row(401, 403, 403, 200, 404, 200)
# The agreement figures start their computation on the first request (jobs queued in tests): 202 until it is done.
COMPUTED_API = row(401, 403, 403, 202, 404, 202)
MANAGE_ACTION = row(LOGIN, 403, 403, 302, 404, 302)  # done (or refused with a message), back to a page
RUN_API = row(401, 403, 403, 200, 404, 200)
OWN_PAGE_API = row(401, 200, 404, 404, 404, 404)

# (url name, method, path, expected by user). {slug} {item} {page} {run} ... are filled in by the fixture.
PAGES = [
    ("home", "get", "/", row(200, 200, 200, 200, 200, 200)),
    ("favicon", "get", "/favicon.ico", row(302, 302, 302, 302, 302, 302)),  # to the static SVG
    ("project_new", "get", "/projects/new/", AUTHOR_PAGE),
    ("project_detail", "get", "/projects/{slug}/", MANAGE_PAGE),
    ("project_detail", "post", "/projects/{slug}/", row(LOGIN, 405, 405, 405, 405, 405)),  # imports go to import/
    *[
        ("project_export", "get", f"/projects/{{slug}}/export/{fmt}/", MANAGE_PAGE)
        for fmt in ("chaosnli", "snli", "jsonl", "csv")
    ],
    # Formats that do not fit a 3-way label project, and one that does not exist: refused with the reason.
    *[
        ("project_export", "get", f"/projects/{{slug}}/export/{fmt}/", row(LOGIN, 403, 403, 400, 404, 400))
        for fmt in ("usnli", "dnli", "atoms", "xml")
    ],
    ("worker_figures", "get", "/projects/{slug}/workers/", MANAGE_PAGE),
    # A 3-way label project sends nothing to validation: the owner is told so on the dashboard.
    ("project_send_to_validation", "post", "/projects/{slug}/send-to-validation/", row(LOGIN, 403, 403, 302, 404, 302)),
    ("project_send_to_validation", "get", "/projects/{slug}/send-to-validation/", row(LOGIN, 405, 405, 405, 405, 405)),
    # A 3-way label study has no valid atoms to send: the owner is told so on the dashboard.
    ("project_send_valid_atoms", "post", "/projects/{slug}/send-valid-atoms/", row(LOGIN, 403, 403, 302, 404, 302)),
    ("project_send_valid_atoms", "get", "/projects/{slug}/send-valid-atoms/", row(LOGIN, 405, 405, 405, 405, 405)),
    ("adjudication_queue", "get", "/projects/{slug}/adjudication/", MANAGE_PAGE),
    ("adjudication_item", "get", "/projects/{slug}/adjudication/{item}/", MANAGE_PAGE),
    (
        "adjudication_item",
        "post",
        "/projects/{slug}/adjudication/{item}/",
        row(LOGIN, 403, 403, 400, 404, 400),
    ),  # no value
    # No reasons ticked: refused with a message, back to the item page.
    ("tag_reasons", "post", "/projects/{slug}/adjudication/{item}/reasons/", MANAGE_ACTION),
    ("project_report", "get", "/projects/{slug}/report/", MANAGE_PAGE),
    ("project_report_status", "get", "/projects/{slug}/report/status/", MANAGE_PAGE),
    ("project_report_refresh", "post", "/projects/{slug}/report/refresh/", MANAGE_ACTION),  # a job started
    ("project_report_refresh", "get", "/projects/{slug}/report/refresh/", row(LOGIN, 405, 405, 405, 405, 405)),
    ("project_settings", "get", "/projects/{slug}/settings/", MANAGE_PAGE),
    ("project_settings", "post", "/projects/{slug}/settings/", row(LOGIN, 403, 403, 400, 404, 400)),  # no task type
    ("project_status", "post", "/projects/{slug}/status/", MANAGE_ACTION),  # no status: refused with a message
    ("project_members", "post", "/projects/{slug}/members/", MANAGE_ACTION),
    ("project_clone", "post", "/projects/{slug}/clone/", MANAGE_ACTION),  # no slug: refused with a message
    ("project_preview", "get", "/projects/{slug}/preview/", MANAGE_PAGE),
    ("project_qualification", "get", "/projects/{slug}/qualification/", MANAGE_PAGE),
    ("project_qualification", "post", "/projects/{slug}/qualification/", MANAGE_ACTION),
    ("import_upload", "post", "/projects/{slug}/import/", MANAGE_ACTION),  # no file: back with a message
    ("import_preview", "get", "/projects/{slug}/import/" + "0" * 32 + "/", MANAGE_ACTION),  # no such upload
    ("item_table", "get", "/projects/{slug}/items/?q=P&show=open&sort=-id", MANAGE_PAGE),
    ("make_gold", "post", "/projects/{slug}/items/{item}/gold/", MANAGE_ACTION),  # answered: refused, message
    ("worker_detail", "get", "/projects/{slug}/workers/{answered_by}/", MANAGE_PAGE),
    ("export_job", "post", "/projects/{slug}/exports/", MANAGE_ACTION),  # no format: refused with a message
    # A bundle still queued: nothing is pushed, the job's page says why.
    ("push_to_hub", "post", "/projects/{slug}/exports/{bundle_run}/hub/", MANAGE_ACTION),
    ("push_to_hub", "get", "/projects/{slug}/exports/{bundle_run}/hub/", row(LOGIN, 405, 405, 405, 405, 405)),
    ("worker_detail", "post", "/projects/{slug}/workers/{answered_by}/", MANAGE_ACTION),
    ("work", "get", "/work/{slug}/", row(LOGIN, 200, 200, 403, 404, 403)),
    ("submit", "post", "/work/{slug}/{page}/submit/", row(LOGIN, 400, 404, 404, 404, 404)),  # empty answers
    ("submit", "get", "/work/{slug}/{page}/submit/", row(LOGIN, 405, 405, 405, 405, 405)),
    ("release", "post", "/work/{slug}/{page}/release/", row(LOGIN, 302, 404, 404, 404, 404)),
    ("page_draft", "post", "/work/{slug}/{page}/draft/", row(LOGIN, 400, 404, 404, 404, 404)),  # no JSON body
    ("page_draft", "get", "/work/{slug}/{page}/draft/", row(LOGIN, 405, 405, 405, 405, 405)),
    ("page_extend", "post", "/work/{slug}/{page}/extend/", row(LOGIN, 200, 404, 404, 404, 404)),
    ("page_extend", "get", "/work/{slug}/{page}/extend/", row(LOGIN, 405, 405, 405, 405, 405)),
    # The authors' self-check of their explanations: a 3-way label study has none (404 to its workers).
    ("own_explanations", "get", "/work/{slug}/explanations/", row(LOGIN, 404, 404, 403, 404, 403)),
    ("own_explanations", "post", "/work/{slug}/explanations/", row(LOGIN, 404, 404, 403, 404, 403)),
    ("enter", "get", "/enter/{slug}/", row(400, 400, 400, 400, 400, 400)),  # no platform parameters
    ("qualify", "get", "/qualify/{slug}/", row(LOGIN, 302, 302, 302, 404, 302)),  # no test: on to the work page
    ("done", "get", "/done/{slug}/", row(LOGIN, 404, 404, 404, 404, 404)),  # no crowd session
    ("evaluation:run_list", "get", "/evaluation/", AUTHOR_PAGE),
    ("evaluation:run_new", "get", "/evaluation/new/", AUTHOR_PAGE),
    ("models_backend:run_list", "get", "/models/", AUTHOR_PAGE),
    ("models_backend:run_list", "post", "/models/", row(LOGIN, 403, 403, 200, 200, 200)),  # empty form: shown again
    ("models_backend:run_list", "get", "/models/?job=train_unli", AUTHOR_PAGE),
    ("models_backend:checkpoint_list", "get", "/models/checkpoints/", AUTHOR_PAGE),
    # No study named (the study evaluation's form is where a checkpoint is scored): back to the registry.
    ("models_backend:checkpoint_evaluate", "get", "/models/checkpoints/evaluate/", row(LOGIN, 403, 403, 302, 302, 302)),
    (
        "models_backend:checkpoint_evaluate",
        "post",
        "/models/checkpoints/evaluate/",
        row(LOGIN, 405, 405, 405, 405, 405),
    ),
    ("evaluation:study_evaluate", "get", "/evaluation/studies/{slug}/", MANAGE_PAGE),
    # An empty form: shown again.
    ("evaluation:study_evaluate", "post", "/evaluation/studies/{slug}/", row(LOGIN, 403, 403, 200, 404, 200)),
    # A prediction job has no model comparison to download.
    (
        "evaluation:comparison_download",
        "get",
        "/evaluation/studies/comparisons/{model_run}.tex",
        row(LOGIN, 403, 403, 404, 404, 404),
    ),
    ("jobs:list", "get", "/jobs/", AUTHOR_PAGE),
    ("jobs:detail", "get", "/jobs/{run}/", RUN_PAGE),
    ("jobs:detail", "get", "/jobs/{model_run}/", RUN_PAGE),
    ("jobs:status", "get", "/jobs/{model_run}/status/", RUN_PAGE),
    ("jobs:cancel", "post", "/jobs/{model_run}/cancel/", row(LOGIN, 403, 403, 302, 404, 302)),
    ("jobs:output", "get", "/jobs/{model_run}/output/", row(LOGIN, 403, 403, 404, 404, 404)),  # no output yet
    ("admin:index", "get", "/admin/", row(302, 302, 302, 302, 302, 200)),
    ("audit_log", "get", "/audit/?action=export", row(LOGIN, 403, 403, 403, 403, 200)),
    ("login", "get", "/accounts/login/", row(200, 200, 200, 200, 200, 200)),
    # Operations: no login. Not ready here: no task worker is alive; /metrics answers the loopback test client.
    ("operations:healthz", "get", "/healthz", row(200, 200, 200, 200, 200, 200)),
    ("operations:healthz", "post", "/healthz", row(405, 405, 405, 405, 405, 405)),
    ("operations:readyz", "get", "/readyz", row(503, 503, 503, 503, 503, 503)),
    ("operations:metrics", "get", "/metrics", row(200, 200, 200, 200, 200, 200)),
    # A study's Prolific side: its manager only; without a link each action comes back with the reason.
    ("recruitment:prolific", "get", "/recruitment/projects/{slug}/prolific/", MANAGE_PAGE),
    *[
        (f"recruitment:prolific_{name}", "post", f"/recruitment/projects/{{slug}}/prolific/{path}/", MANAGE_ACTION)
        for name, path in (
            ("study", "study"),
            ("pull", "pull"),
            ("decide", "decide"),
            ("bonuses", "bonuses"),
            ("pay", "bonuses/pay"),
            ("group", "groups"),
            ("group_use", "groups/use"),
            ("hooks", "hooks"),
            ("link", "link"),  # saved with the defaults: back to the page
        )
    ],
    (
        "recruitment:prolific_study",
        "get",
        "/recruitment/projects/{slug}/prolific/study/",
        row(LOGIN, 405, 405, 405, 405, 405),
    ),
    # Prolific's hook: signed, not signed in; unsigned deliveries are refused whoever sends them.
    # Unsigned: a malformed delivery (400), before any secret is tried.
    ("recruitment:prolific_webhook", "post", "/recruitment/webhooks/prolific/", row(400, 400, 400, 400, 400, 400)),
    ("recruitment:prolific_webhook", "get", "/recruitment/webhooks/prolific/", row(405, 405, 405, 405, 405, 405)),
]

API = [
    ("api-token", "post", "/api/token/", row(400, 400, 400, 400, 400, 400)),  # no credentials
    ("api-token", "delete", "/api/token/", row(401, 204, 204, 204, 204, 204)),
    ("api-me", "get", "/api/me/", row(401, 200, 200, 200, 200, 200)),
    ("api-schema", "get", "/api/schema/", row(200, 200, 200, 200, 200, 200)),
    ("api-docs", "get", "/api/docs/", row(200, 200, 200, 200, 200, 200)),
    ("project-list", "get", "/api/projects/", row(401, 200, 200, 200, 200, 200)),
    ("project-list", "post", "/api/projects/", row(401, 403, 403, 201, 201, 201)),
    ("project-detail", "get", "/api/projects/{slug}/", row(401, 200, 200, 200, 404, 200)),
    ("project-detail", "patch", "/api/projects/{slug}/", row(401, 403, 403, 200, 404, 200)),
    ("project-claim", "post", "/api/projects/{slug}/claim/", row(401, 201, 201, 403, 404, 403)),
    ("project-progress", "get", "/api/projects/{slug}/progress/", MANAGE_API),
    ("project-adjudication-queue", "get", "/api/projects/{slug}/adjudication/", MANAGE_API),
    ("project-adjudicate", "post", "/api/projects/{slug}/adjudicate/", MANAGE_API),
    ("project-results", "get", "/api/projects/{slug}/results/", MANAGE_API),
    ("project-evaluations", "get", "/api/projects/{slug}/evaluations/", MANAGE_API),
    # No checkpoint named: refused naming the field.
    ("project-evaluations", "post", "/api/projects/{slug}/evaluations/", row(401, 403, 403, 400, 404, 400)),
    ("project-item-reasons", "get", "/api/projects/{slug}/items/{item}/reasons/", MANAGE_API),
    # Workers may not tag in a study whose managers tag; the managers' empty request is refused.
    ("project-item-reasons", "post", "/api/projects/{slug}/items/{item}/reasons/", row(401, 403, 403, 400, 404, 400)),
    (
        "project-send-to-validation",
        "post",
        "/api/projects/{slug}/send-to-validation/",
        row(401, 403, 403, 409, 404, 409),
    ),  # a 3-way label study sends nothing to validation: its state, a conflict
    (
        "project-send-valid-atoms",
        "post",
        "/api/projects/{slug}/send-valid-atoms/",
        row(401, 403, 403, 409, 404, 409),
    ),  # a 3-way label study is no atom validity study: a conflict
    ("project-agreement", "get", "/api/projects/{slug}/agreement/", COMPUTED_API),
    ("project-annotator-models", "get", "/api/projects/{slug}/annotator-models/", MANAGE_API),
    ("project-variation", "get", "/api/projects/{slug}/variation/", MANAGE_API),
    ("project-reasons", "get", "/api/projects/{slug}/reasons/", MANAGE_API),
    # The authors' self-check: a 3-way label study has none (404 to its workers), as the page says.
    ("project-own-explanations", "get", "/api/projects/{slug}/own-explanations/", row(401, 404, 404, 403, 404, 403)),
    ("project-own-explanations", "post", "/api/projects/{slug}/own-explanations/", row(401, 404, 404, 403, 404, 403)),
    ("project-import-file", "post", "/api/projects/{slug}/import/", MANAGE_API),
    ("project-export", "get", "/api/projects/{slug}/export/?as=jsonl", MANAGE_API),
    # A 3-way label study has no usnli export: no such resource.
    ("project-export", "get", "/api/projects/{slug}/export/?as=usnli", row(401, 403, 403, 404, 404, 404)),
    ("project-bundle", "post", "/api/projects/{slug}/bundle/", row(401, 403, 403, 202, 404, 202)),
    ("assignment-list", "get", "/api/assignments/", row(401, 200, 200, 200, 200, 200)),
    ("assignment-detail", "get", "/api/assignments/{page}/", OWN_PAGE_API),
    ("assignment-submit", "post", "/api/assignments/{page}/submit/", OWN_PAGE_API),
    ("assignment-release", "post", "/api/assignments/{page}/release/", OWN_PAGE_API),
    ("job-list", "get", "/api/jobs/", row(401, 403, 403, 200, 200, 200)),
    ("job-detail", "get", "/api/jobs/{model_run}/", RUN_API),
    ("job-cancel", "post", "/api/jobs/{model_run}/cancel/", RUN_API),
    ("job-output", "get", "/api/jobs/{model_run}/output/", row(401, 403, 403, 404, 404, 404)),  # no output yet
    ("evaluation-run-list", "get", "/api/evaluation/runs/", row(401, 403, 403, 200, 200, 200)),
    ("evaluation-run-list", "post", "/api/evaluation/runs/", row(401, 403, 403, 400, 400, 400)),  # no files
    ("evaluation-run-detail", "get", "/api/evaluation/runs/{run}/", RUN_API),
    ("evaluation-run-results", "get", "/api/evaluation/runs/{run}/results/", RUN_API),
]


@pytest.fixture
def world(make_user, make_project, import_rows, author):
    """A project of the owner with a tie to adjudicate, the worker's open page and the owner's finished run."""
    users = {
        "worker": make_user("worker1", "worker"),
        "other_worker": make_user("worker2", "worker"),
        "other_author": make_user("author2", "author"),
        "owner": author,
        "admin": make_user("root", "admin"),
    }
    project = make_project("nli_label", slug="owned", owner=users["owner"], items_per_page=2)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(4)])
    # Imported votes that tie: an item waiting for adjudication, never served to workers.
    import_rows(
        project,
        [{"uid": "t", "example": {"premise": "P", "hypothesis": "H"}, "label_counter": {"e": 1, "n": 1}}],
        "chaosnli",
    )
    tie = project.items.get(status="adjudication")
    page = claim_page(project, users["worker"])
    # The other worker has answered a page: the study has a worker to look at.
    answered = claim_page(project, users["other_worker"])
    submit_page(answered.pk, users["other_worker"], {str(c.item_id): {"value": "n"} for c in answered.claims.all()})
    run = Job.objects.create(
        kind="evaluate",
        params={"suite": "unli", "parameters": {}},
        status=Job.Status.DONE,
        result={"pearson": 0.5},
        created_by=users["owner"],
        project=project,
    )
    model_run = Job.objects.create(kind="predict", params={}, created_by=users["owner"])
    bundle_run = Job.objects.create(kind="bundle", params={}, created_by=users["owner"], project=project)
    return {
        "users": users,
        "project": project,
        "fill": {
            "slug": project.slug,
            "item": tie.pk,
            "page": page.pk,
            "run": run.pk,
            "model_run": model_run.pk,
            "bundle_run": bundle_run.pk,
            "answered_by": users["other_worker"].pk,
        },
    }


def request_as(who, world, method, path, api: bool):
    client = (APIClient if api else Client)()
    if who != "anonymous":
        client.force_login(world["users"][who])
    path = path.format(**world["fill"])
    data = {}
    if api and path.endswith("/submit/"):
        page = Assignment.objects.get(pk=world["fill"]["page"])
        data = {"answers": {str(claim.item_id): {"value": "e"} for claim in page.claims.all()}}
    if api and path.endswith("/adjudicate/"):
        data = {"item": world["fill"]["item"], "value": "e", "note": "settled"}
    if api and path.endswith("/import/"):
        from django.core.files.uploadedfile import SimpleUploadedFile

        data = {
            "format": "jsonl",
            "file": SimpleUploadedFile("rows.jsonl", b'{"id": "new", "premise": "P", "hypothesis": "H"}\n'),
        }
        return client.post(path, data, format="multipart")
    if api and method == "patch":
        data = {"title": "Renamed"}
    if api and path == "/api/projects/" and method == "post":
        data = {"slug": f"new-{who}", "task_type": "nli_label", "title": "New"}
    if api and path == "/api/evaluation/runs/" and method == "post":
        return client.post(path, {"suite": "unli"}, format="multipart")
    if api:
        return getattr(client, method)(path, data, format="json")
    return getattr(client, method)(path, data)


def assert_status(response, expected, who, method, path):
    where = f"{who} {method.upper()} {path}"
    if expected == LOGIN:
        assert response.status_code == 302, (where, response.status_code)
        assert response["Location"].startswith("/accounts/login/"), (where, response["Location"])
    else:
        assert response.status_code == expected, (where, response.status_code, getattr(response, "content", b"")[:200])


@pytest.mark.parametrize("name,method,path,expected", [case(*row, id=f"{row[1]} {row[2]}") for row in PAGES])
def test_pages(world, name, method, path, expected):
    for who in WHO:
        response = request_as(who, world, method, path, api=False)
        assert_status(response, expected[who], who, method, path)


@pytest.mark.parametrize("name,method,path,expected", [case(*row, id=f"{row[1]} {row[2]}") for row in API])
def test_api(world, name, method, path, expected):
    for who in WHO:
        # Acting changes state (a claim, a submit, a revoked token): each user gets the world fresh.
        with rolled_back():
            response = request_as(who, world, method, path, api=True)
            assert_status(response, expected[who], who, method, path)


def test_every_route_is_in_the_table():
    """A new URL pattern must get a row here, with what each kind of user may do with it."""
    covered = {name for name, *_ in PAGES + API}

    def names(patterns, namespace=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if pattern.namespace == "admin":
                    continue  # Django's admin guards itself (staff only): one row checks its index
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                yield from names(pattern.url_patterns, inner)
            elif (
                isinstance(pattern, URLPattern)
                and pattern.name
                and not pattern.name.startswith("api-root")
                and "format" not in str(pattern.pattern)  # DRF's .json suffix twins
            ):
                yield namespace + pattern.name

    routes = set(names(get_resolver().url_patterns)) - {"logout"}
    assert routes - covered == set()


def test_workers_see_only_their_own_pages_in_the_api(world):
    other_worker = world["users"]["other_worker"]
    theirs = claim_page(world["project"], other_worker)
    mine = world["fill"]["page"]
    for user, own, foreign in ((world["users"]["worker"], mine, theirs.pk), (other_worker, theirs.pk, mine)):
        api = APIClient()
        api.force_login(user)
        listed = [page["id"] for page in api.get("/api/assignments/").json()["results"]]
        assert own in listed and foreign not in listed
        assert api.get(f"/api/assignments/{foreign}/").status_code == 404
        assert api.post(f"/api/assignments/{foreign}/release/").status_code == 404
        assert Assignment.objects.get(pk=foreign).status == "open"


def test_authors_list_only_their_own_projects_and_runs(world, make_project):
    others = make_project("nli_label", slug="someone-else", owner=world["users"]["other_author"])
    api = APIClient()
    api.force_login(world["users"]["other_author"])
    assert [p["slug"] for p in api.get("/api/projects/").json()["results"]] == [others.slug]
    assert api.get("/api/evaluation/runs/").json()["results"] == []
    api.force_login(world["users"]["admin"])
    assert {p["slug"] for p in api.get("/api/projects/").json()["results"]} == {"owned", "someone-else"}
    assert len(api.get("/api/evaluation/runs/").json()["results"]) == 1


def test_html_home_lists_only_managed_projects(world, make_project):
    make_project("nli_label", slug="someone-else", owner=world["users"]["other_author"])
    client = Client()
    client.force_login(world["users"]["other_author"])
    managed = [project.slug for project in client.get("/").context["managed_projects"]]
    assert managed == ["someone-else"]


# A worker holds a page of the study; then the study changes. (status, audience): what the worker holding
# the page and another worker get from each worker route.
STUDY_STATES = {
    ("draft", "everyone"): {"work": (404, 404), "claim": (404, 404), "detail": (404, 404), "submit": 404},
    ("paused", "everyone"): {"work": (200, 403), "claim": (201, 403), "detail": (200, 200), "submit": 200},
    ("closed", "everyone"): {"work": (404, 404), "claim": (404, 404), "detail": (404, 404), "submit": 404},
    ("published", "members"): {"work": (404, 404), "claim": (404, 404), "detail": (404, 404), "submit": 404},
    ("published", "platform"): {"work": (404, 404), "claim": (404, 404), "detail": (404, 404), "submit": 404},
}


@pytest.mark.parametrize("state", STUDY_STATES, ids=["-".join(state) for state in STUDY_STATES])
def test_workers_reach_no_study_that_is_not_open_to_them(world, state):
    expected = STUDY_STATES[state]
    Project.objects.filter(pk=world["project"].pk).update(status=state[0], audience=state[1])
    slug, page = world["fill"]["slug"], world["fill"]["page"]
    for index, who in enumerate(("worker", "other_worker")):
        with rolled_back():
            html, api = Client(), APIClient()
            html.force_login(world["users"][who])
            api.force_login(world["users"][who])
            assert html.get(f"/work/{slug}/").status_code == expected["work"][index], (who, "work")
            assert api.post(f"/api/projects/{slug}/claim/").status_code == expected["claim"][index], (who, "claim")
            assert api.get(f"/api/projects/{slug}/").status_code == expected["detail"][index], (who, "detail")
            listed = [p["slug"] for p in api.get("/api/projects/").json()["results"]]
            assert (slug in listed) == (expected["detail"][index] == 200), (who, "list")
    api = APIClient()
    api.force_login(world["users"]["worker"])
    answers = {str(claim.item_id): {"value": "e"} for claim in Assignment.objects.get(pk=page).claims.all()}
    assert (
        api.post(f"/api/assignments/{page}/submit/", {"answers": answers}, format="json").status_code
        == expected["submit"]
    )


def test_members_and_platform_arrivals_are_admitted(world, make_user):
    from django.contrib.auth.models import Group

    from annotation.models import CrowdSession

    project, worker = world["project"], world["users"]["other_worker"]
    Project.objects.filter(pk=project.pk).update(audience="members")
    api = APIClient()
    api.force_login(worker)
    assert api.get(f"/api/projects/{project.slug}/").status_code == 404
    project.members.add(worker)
    assert api.get(f"/api/projects/{project.slug}/").status_code == 200
    project.members.remove(worker)
    group = Group.objects.create(name="lab-panel")
    worker.groups.add(group)
    project.member_groups.add(group)
    assert api.get(f"/api/projects/{project.slug}/").status_code == 200
    Project.objects.filter(pk=project.pk).update(audience="platform")
    assert api.get(f"/api/projects/{project.slug}/").status_code == 404
    CrowdSession.objects.create(project=project, worker=worker, platform="prolific", participant_id="P1")
    assert api.get(f"/api/projects/{project.slug}/").status_code == 200


def test_only_the_owner_and_admins_send_written_pairs_to_validation(world, make_project, import_rows):
    writing = make_project("hypothesis_writing", slug="writing", owner=world["users"]["owner"])
    import_rows(writing, [{"id": "p", "premise": "A dog sleeps under a table."}])
    expected = row(401, 403, 403, 200, 404, 200)
    for who in WHO:
        with rolled_back():
            client = APIClient()
            if who != "anonymous":
                client.force_login(world["users"][who])
            response = client.post(f"/api/projects/{writing.slug}/send-to-validation/")
            assert_status(response, expected[who], who, "post", "send-to-validation")
    assert not Project.objects.filter(slug="writing-validation").exists()


@pytest.mark.django_db
def test_the_one_project_work_check_agrees_with_the_project_list_for_every_audience(make_project, make_user):
    """access._workable (the claim and submit path, one loaded project) and workable_projects()
    (lists, the API) are two forms of one rule: for every status, audience and way in, they answer alike."""
    from django.contrib.auth.models import Group

    from annotation.models import CrowdSession, Project
    from annotation.services import access

    worker, stranger = make_user("agree-worker"), make_user("agree-stranger")
    cohort = Group.objects.create(name="agree-cohort")
    worker.groups.add(cohort)
    projects, crowd_accounts = [], []
    for status in Project.Status.values:
        for audience in Project.Audience.values:
            for way_in in ("none", "member", "group", "session"):
                project = make_project(
                    "nli_label", slug=f"agree-{status}-{audience}-{way_in}", status=status, audience=audience
                )
                if way_in == "member":
                    project.members.add(worker)
                elif way_in == "group":
                    project.member_groups.add(cohort)
                elif way_in == "session":  # a crowd account belongs to one session
                    arrival = make_user(f"agree-crowd-{project.pk}")
                    crowd_accounts.append(arrival)
                    CrowdSession.objects.create(
                        project=project,
                        worker=arrival,
                        platform="prolific",
                        participant_id=f"P{project.pk}",
                        study_id="S",
                        session_id="X",
                    )
                projects.append(project)
    for user in (worker, *crowd_accounts, stranger):
        listed = set(access.workable_projects(user).values_list("pk", flat=True))
        for project in projects:
            fresh = Project.objects.get(pk=project.pk)
            assert access._workable(user, fresh) == (project.pk in listed), (user, project.slug)
    # Not vacuous: the worker and the crowd accounts get in where the stranger does not.
    worker_listed = set(access.workable_projects(worker).values_list("pk", flat=True))
    assert len(worker_listed) > len(listed) > 0
    assert any(
        set(access.workable_projects(account).values_list("pk", flat=True)) - listed for account in crowd_accounts
    )
