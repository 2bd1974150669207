"""The failure paths a real study hits (issue 31): every author page of an empty study, finished jobs' pages,
confirmations before what cannot be undone, qualification feedback that explains itself, the crowd worker's
way out, the demo's simulated answers, and the API and security defects of the re-test."""

import asyncio
import io
import json
import os
import time
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Annotation, CrowdSession, Item, Project
from annotation.services import qualification
from annotation.services.assignments import claim_page, submit_page
from annotation.tasktypes import TASK_TYPES
from dataset_io.demo import load_demo
from dataset_io.formats import exportable
from dataset_io.services import uploads
from dataset_io.services.importers import ImportFileError, check_size, import_stream
from jobs.models import Job
from tests.conftest import IMMEDIATE_TASKS

pytestmark = pytest.mark.django_db


def signed_in(user, api=False):
    client = APIClient() if api else Client()
    client.force_login(user)
    return client


def author_pages(project) -> list[str]:
    slug = project.slug
    pages = [
        f"/projects/{slug}/",
        f"/projects/{slug}/settings/",
        f"/projects/{slug}/qualification/",
        f"/projects/{slug}/preview/",
        f"/projects/{slug}/items/",
        f"/projects/{slug}/workers/",
        f"/projects/{slug}/adjudication/",
        f"/projects/{slug}/report/",
        f"/projects/{slug}/items/?show=gold",
    ]
    return pages + [f"/projects/{slug}/export/{fmt}/" for fmt in exportable(project.task, project.options)]


@pytest.mark.parametrize("task_type", list(TASK_TYPES))
def test_every_author_page_of_an_empty_study_answers_200(make_project, author, task_type):
    project = make_project(task_type)
    client = signed_in(author)
    for url in author_pages(project):
        response = client.get(url)
        assert response.status_code == 200, url
    assert "Loading" not in client.get(f"/projects/{project.slug}/workers/").content.decode()


def test_the_page_of_every_kind_of_finished_data_job_answers_200(make_project, author, settings, tmp_path):
    settings.TASKS, settings.MEDIA_ROOT = IMMEDIATE_TASKS, tmp_path / "media"
    from dataset_io.services import background

    project = make_project("nli_label")
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"id": "1", "premise": "P", "hypothesis": "H", "label": "e"}) + "\n")
    jobs = [
        background.start_import(project, str(path), "jsonl", None, "data", author),
        background.start_export(project, "jsonl", author),
        background.start_bundle(project, author),
    ]
    client = signed_in(author)
    for job in jobs:
        job.refresh_from_db()
        assert job.status == "done", job.error
        assert client.get(f"/jobs/{job.pk}/").status_code == 200, job.kind
    assert "items" in Job.objects.get(kind="import").result  # the key that the page read as the dict's items


def test_closing_a_study_is_confirmed_first(make_project, author):
    project = make_project("nli_label")
    client = signed_in(author)
    asked = client.post(f"/projects/{project.slug}/status/", {"status": "closed"})
    assert asked.status_code == 200 and "Close this study?" in asked.content.decode()
    assert Project.objects.get(pk=project.pk).status == "published"
    done = client.post(f"/projects/{project.slug}/status/", {"status": "closed", "confirm": "1"})
    assert done.status_code == 302 and Project.objects.get(pk=project.pk).status == "closed"


def test_the_adjudication_form_has_no_label_chosen_for_the_author(make_project, import_rows, make_user, author):
    project = make_project("nli_label", items_per_page=1, redundancy=2, max_annotations=2)
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    for name, label in (("w1", "e"), ("w2", "c")):
        worker = make_user(name)
        page = claim_page(project, worker)
        submit_page(page.pk, worker, {str(page.claims.get().item_id): {"value": label}})
    item = project.items.get()
    assert item.status == "adjudication"
    client = signed_in(author)
    form = client.get(f"/projects/{project.slug}/adjudication/{item.pk}/").content.decode()
    assert '<option value="" selected disabled>' in form and "selected>Entailment" not in form
    refused = client.post(f"/projects/{project.slug}/adjudication/{item.pk}/", {"note": "saved without a choice"})
    assert refused.status_code == 400 and Item.objects.get(pk=item.pk).adjudicated is None


def test_the_new_study_form_keeps_what_was_typed_when_the_task_type_changes(author):
    page = signed_in(author).get(
        "/projects/new/", {"task_type": "unli_slider", "slug": "typed-slug", "title": "Typed title", "not_a_field": "x"}
    )
    html = page.content.decode()
    assert 'value="typed-slug"' in html and 'value="Typed title"' in html and "not_a_field" not in html


def test_worked_examples_are_edited_as_fields_not_json(make_project, author):
    project = make_project("nli_label")
    client = signed_in(author)
    form = client.get(f"/projects/{project.slug}/settings/").content.decode()
    assert 'name="worked_examples-0-premise"' in form and 'name="worked_examples-1-premise"' in form
    saved = client.post(
        f"/projects/{project.slug}/settings/",
        {
            "task_type": "nli_label",
            "worked_examples-0-premise": "A cat sleeps.",
            "worked_examples-0-hypothesis": "An animal rests.",
            "worked_examples-0-answer": "Entailment",
            "worked_examples-0-why": "Sleeping is resting.",
            "worked_examples-1-premise": "",
        },
    )
    assert saved.status_code == 302
    project.refresh_from_db()
    assert project.options["worked_examples"] == [
        {
            "premise": "A cat sleeps.",
            "hypothesis": "An animal rests.",
            "answer": "Entailment",
            "why": "Sleeping is resting.",
        }
    ]
    refused = client.post(
        f"/projects/{project.slug}/settings/",
        {"task_type": "nli_label", "worked_examples-0-premise": "Only a premise."},
    )
    assert refused.status_code == 400 and "needs the text field" in refused.content.decode()
    kept = client.post(f"/projects/{project.slug}/settings/", {"task_type": "nli_label", "title": "Renamed"})
    assert kept.status_code == 302
    project.refresh_from_db()
    assert len(project.options["worked_examples"]) == 1  # a form without the fieldsets changes nothing


def test_the_worker_page_shows_values_as_people_read_them(make_project, import_rows, make_user, author):
    project = make_project("unli_slider", items_per_page=1, redundancy=1)
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    worker = make_user("w1")
    page = claim_page(project, worker)
    submit_page(page.pk, worker, {str(page.claims.get().item_id): {"value": 6000}})
    html = signed_in(author).get(f"/projects/{project.slug}/workers/{worker.pk}/").content.decode()
    assert "0.6078<" in html and "0.60783" not in html


def test_the_dashboard_reloads_its_item_table_with_its_own_filters(make_project, author):
    html = signed_in(author).get(f"/projects/{make_project('nli_label').slug}/").content.decode()
    assert 'id="item-filters"' in html and 'hx-include="#item-filters"' in html and "closest section form" not in html


# ---------------------------------------------------------------- the demo's simulated answers


def test_the_demo_studies_show_every_page_filled_with_simulated_answers(author, settings):
    settings.TASKS = IMMEDIATE_TASKS  # the report's figures computed when the page starts their job
    load_demo(simulate=True)
    again = load_demo(simulate=True)
    assert again["items_created"] == 0
    client = signed_in(get_user_model().objects.get(username="author"))
    for project in Project.objects.all():
        simulated = Annotation.objects.filter(item__project=project, worker__username__startswith="simulated-worker-")
        assert simulated.exists(), project.slug
        assert (
            project.items.filter(is_gold=False, claimable=True).count()
            >= project.items.filter(is_gold=False).count() // 2
        )
        for url in author_pages(project):
            assert client.get(url).status_code == 200, url
        assert 'id="simulated-answers"' in client.get(f"/projects/{project.slug}/").content.decode()
        records = [
            json.loads(line)
            for line in b"".join(
                client.get(f"/projects/{project.slug}/export/annotations/").streaming_content
            ).splitlines()
        ]
        assert records and all(record["simulated"] for record in records if record["annotator"])
    nli = Project.objects.get(slug="demo-nli")
    report = client.get(f"/projects/{nli.slug}/report/").content.decode()
    assert "<svg" in report and 'id="simulated-answers"' in report
    assert not get_user_model().objects.get(username="simulated-worker-1").has_usable_password()
    assert Annotation.objects.filter(item__project=nli).values("worker").distinct().count() >= 2


# ---------------------------------------------------------------- the worker's side


def slider_test(project, references, easy):
    rows = [
        {"premise": f"P{i}", "hypothesis": f"H{i}", "reference": r, "easy": e}
        for i, (r, e) in enumerate(zip(references, easy))
    ]
    test = qualification.create_test(f"{project.slug}-q", project.task_type, rows, max_attempts=3)
    project.qualification = test
    project.save(update_fields=["qualification"])
    return test


def test_an_easy_item_with_a_reference_of_0_is_passed_near_0_and_a_failure_says_why(make_project, worker):
    project = make_project("unli_slider")
    test = slider_test(project, [0.0, 0.3, 0.6, 0.9, 1.0], [True, False, False, False, True])
    close = {0: 1, 1: 3700, 2: 5800, 3: 9000, 4: 10000}  # the first: probability 0.0000...: not exactly 0
    items = list(test.items.order_by("order"))
    attempt = qualification.take_test(test, worker, {str(item.pk): {"value": close[i]} for i, item in enumerate(items)})
    assert attempt.passed and attempt.details["score"] > 0.9
    other = get_user_model().objects.create_user("second", password="x")
    far = {0: 2500, 1: 3700, 2: 5800, 3: 9000, 4: 10000}  # 0.00055 is within 0.01 of 0: passes ...
    assert qualification.take_test(test, other, {str(i.pk): {"value": far[n]} for n, i in enumerate(items)}).passed
    third = get_user_model().objects.create_user("third", password="x")
    wrong = {0: 4500, 1: 3700, 2: 5800, 3: 9000, 4: 10000}  # ... 0.18 is not
    failed = qualification.take_test(test, third, {str(i.pk): {"value": wrong[n]} for n, i in enumerate(items)})
    assert not failed.passed and failed.details["score"] > 0.7
    [reason] = qualification.feedback(test, failed)["unmet"]
    assert reason == "An easy item (reference 0) needs an answer within 0.01 of it; yours was 0.182."


def test_the_qualification_page_has_the_instructions_and_says_what_failed(make_project, import_rows, worker):
    project = make_project("nli_label", instructions="Read the **premise** first.", title="Kites")
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    import_stream(
        project,
        io.StringIO(
            "".join(json.dumps({"premise": f"Q{i}", "hypothesis": "H", "label": "e"}) + "\n" for i in range(2))
        ),
        "jsonl",
        purpose="qualification",
    )
    client = signed_in(worker)
    page = client.get(f"/qualify/{project.slug}/").content.decode()
    assert (
        "<strong>premise</strong>" in page
        and "<h1>Qualification test</h1>" in page
        and "Kites: qualification" not in page
    )
    items = list(project.qualification.items.all())
    answered = client.post(f"/qualify/{project.slug}/", {f"value_{item.pk}": "c" for item in items}).content.decode()
    assert (
        'id="qualification-unmet"' in answered and "0 of 2 answers matched the references; 80% must match." in answered
    )


@pytest.fixture
def crowd_study(make_project, import_rows):
    project = make_project(
        "nli_label", slug="paid", items_per_page=2, completion_code="PAID-1", completion_pages=2, audience="platform"
    )
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": "H"} for i in range(8)])
    return project


def enter(client, project, pid="AAA111", session="S1"):
    return client.get(f"/enter/{project.slug}/", {"PROLIFIC_PID": pid, "STUDY_ID": "ST", "SESSION_ID": session})


def test_finishing_is_offered_only_once_it_gives_the_code_and_the_end_says_no_next_page(crowd_study):
    client = Client()
    enter(client, crowd_study)
    first = client.get(f"/work/{crowd_study.slug}/").content.decode()
    assert "Finish and get my completion code" not in first  # a first page of a two-page study: it would refuse
    for _ in range(2):
        page = client.get(f"/work/{crowd_study.slug}/")
        items = [item.pk for item in page.context["items"]]
        after = client.post(
            f"/work/{crowd_study.slug}/{page.context['assignment'].pk}/submit/",
            {f"value_{item}": "e" for item in items},
            follow=True,
        )
    html = after.content.decode()
    assert "PAID-1" in html and "next page" not in html and "Saved 2 answers." in html


def test_a_participant_id_with_a_trailing_newline_is_no_second_identity(crowd_study):
    enter(Client(), crowd_study, pid="AAA111")
    refused = enter(Client(), crowd_study, pid="AAA111\n", session="S2")
    assert refused.status_code == 400 and "characters that are not allowed" in refused.content.decode()
    assert CrowdSession.objects.count() == 1


def test_signed_in_staff_are_asked_before_an_entry_link_switches_their_account(crowd_study, author):
    client = signed_in(author)
    asked = enter(client, crowd_study)
    assert asked.status_code == 200 and "Continue as the participant" in asked.content.decode()
    assert not CrowdSession.objects.exists() and client.get("/api/me/").json()["username"] == author.username
    switched = client.post(f"/enter/{crowd_study.slug}/?PROLIFIC_PID=AAA111&STUDY_ID=ST&SESSION_ID=S1", {"switch": "1"})
    assert switched.status_code == 302 and CrowdSession.objects.get().participant_id == "AAA111"
    assert client.get("/api/me/").json()["username"] != author.username


def test_forgetting_a_participant_erases_the_login_records_holding_their_id(crowd_study, settings):
    from axes.models import AccessAttempt, AccessLog

    settings.AXES_ENABLED = True
    enter(Client(), crowd_study, pid="PID42")
    AccessAttempt.objects.create(
        username="x",
        ip_address="127.0.0.1",
        user_agent="",
        http_accept="",
        path_info="/",
        get_data="PROLIFIC_PID=PID42",
        post_data="",
        failures_since_start=1,
    )
    assert AccessLog.objects.filter(username__contains="PID42").exists()
    call_command("forget_participant", "prolific", "PID42", stdout=io.StringIO())
    assert not AccessLog.objects.filter(username__contains="PID42").exists()
    assert not AccessAttempt.objects.filter(get_data__contains="PID42").exists()


# ---------------------------------------------------------------- logins, throttles and uploads


def test_spraying_locks_new_usernames_at_an_address_not_its_known_users(settings, make_user):
    settings.AXES_ENABLED = True
    settings.LOGIN_SPRAY_USERNAME_LIMIT, settings.LOGIN_ADDRESS_FAILURE_CAP = 4, 12
    make_user("regular", password="regular-pass")
    client = Client(REMOTE_ADDR="10.9.9.9")
    assert client.post("/accounts/login/", {"username": "regular", "password": "regular-pass"}).status_code == 302
    client = Client(REMOTE_ADDR="10.9.9.9")
    for n in range(4):
        client.post("/accounts/login/", {"username": f"guess{n}", "password": "Summer2026!"})
    assert client.post("/accounts/login/", {"username": "guess9", "password": "x"}).status_code == 429
    known = Client(REMOTE_ADDR="10.9.9.9").post("/accounts/login/", {"username": "regular", "password": "regular-pass"})
    assert known.status_code == 302  # one person's spraying does not lock out everyone behind the address
    for _ in range(12):
        Client(REMOTE_ADDR="10.9.9.9").post("/accounts/login/", {"username": "guess0", "password": "again"})
    capped = Client(REMOTE_ADDR="10.9.9.9").post(
        "/accounts/login/", {"username": "regular", "password": "regular-pass"}
    )
    assert capped.status_code == 429  # past the address's cap nobody logs in from it until the cool-off ends


def test_the_anonymous_rate_counts_calls_to_endpoints_that_need_a_login(settings):
    from django.core.cache import cache

    cache.clear()
    settings.API_THROTTLE_RATES = {"anon": "3/minute", "user": "100/minute"}
    calls = [APIClient().get("/api/projects/").status_code for _ in range(4)]
    assert calls == [401, 401, 401, 429]
    cache.clear()


def test_the_websocket_may_reach_this_host_only(client, author):
    client.force_login(author)
    policy = client.get("/", HTTP_HOST="nli.testserver").get("Content-Security-Policy") or client.get("/").get(
        "Content-Security-Policy"
    )
    sources = next(part for part in policy.split("; ") if part.startswith("connect-src")).split()
    assert "ws:" not in sources and "wss:" not in sources
    assert any(source.startswith("ws://") for source in sources) and any(
        source.startswith("wss://") for source in sources
    )


def call_asgi(headers: list[tuple[bytes, bytes]], path: str = "/api/v1/token/"):
    """The server's ASGI handler on one request whose body is never sent: (status, body, whether it was read)."""
    from common.asgi import BoundedASGIHandler

    sent, read = [], []

    async def receive():
        if read:  # after the body, the client just waits for the answer
            await asyncio.sleep(3600)
        read.append(True)
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": headers,
        "query_string": b"",
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 1),
        "scheme": "http",
        "root_path": "",
    }
    asyncio.run(BoundedASGIHandler(slots=1)(scope, receive, send))
    start = next(message for message in sent if message["type"] == "http.response.start")
    body = b"".join(message.get("body", b"") for message in sent if message["type"] == "http.response.body")
    return start["status"], body, bool(read)


def test_a_body_over_the_limit_is_refused_before_it_is_read(settings):
    settings.ANONYMOUS_MAX_BODY_BYTES, settings.NLI_MAX_IMPORT_BYTES = 1000, 5000
    status, body, read = call_asgi([(b"content-length", b"260000000"), (b"content-type", b"application/json")])
    assert (status, read) == (413, False) and json.loads(body)["code"] == "too_large"
    status, _, read = call_asgi([(b"content-length", b"2000")], path="/accounts/login/")
    assert (status, read) == (413, False)  # no credentials: the small limit
    status, _, read = call_asgi([(b"content-length", b"2000"), (b"authorization", b"Token abc")])
    assert (status, read) == (413, False)  # a header that only looks like a credential lifts nothing
    # (credentials that check out, against the database: tests/common/test_asgi.py)


def test_the_import_size_message_says_mib_and_no_line_0():
    with pytest.raises(ImportFileError) as refused:
        check_size(300 * 2**20)
    assert str(refused.value).endswith("field '(file)': is 300.0 MiB, over the import limit of 200 MiB")


def test_stale_uploads_and_old_jobs_files_are_removed(make_project, author, settings, tmp_path):
    settings.MEDIA_ROOT, settings.TASKS = tmp_path / "media", IMMEDIATE_TASKS
    from dataset_io.services import background

    project = make_project("nli_label")
    old = uploads.stage(project, SimpleUploadedFile("a.jsonl", b'{"premise": "P", "hypothesis": "H"}\n'))
    fresh = uploads.stage(project, SimpleUploadedFile("b.jsonl", b'{"premise": "P", "hypothesis": "H"}\n'))
    kept = settings.MEDIA_ROOT / "uploads" / str(project.pk) / old
    stale = time.time() - 48 * 3600
    for path in kept.iterdir():
        os.utime(path, (stale, stale))
    job = background.start_export(project, "jsonl", author)
    Job.objects.filter(pk=job.pk).update(finished_at=job.finished_at - __import__("datetime").timedelta(days=40))
    out = io.StringIO()
    call_command("remove_stale_files", "--json", stdout=out)
    assert json.loads(out.getvalue()) == {"uploads": 1, "jobs": 1}
    assert uploads.staged(project, old) is None and uploads.staged(project, fresh) is not None
    job.refresh_from_db()
    assert job.output == "" and job.result["records"] == 0 and "files removed after 30 days" in job.log
    assert not (settings.MEDIA_ROOT / job.storage_prefix).exists()


class _LoopStopped(BaseException):
    """Ends the housekeeping loop from its sleep (an Exception would be caught and retried by the loop)."""


@pytest.mark.django_db(transaction=True)  # the loop closes its connection each turn, as no test transaction allows
def test_the_housekeeping_loop_does_each_registered_chore_at_its_own_pace(monkeypatch):
    from annotation.management.commands import expire_claims
    from annotation.services import extensions
    from dataset_io.services import files

    # The dataset app registers its removal of stale files, hourly.
    assert extensions.Chore(files.remove_stale_files, files.EVERY_SECONDS) in extensions.CHORES
    done = []
    chores = [
        extensions.Chore(lambda: done.append("often"), 0),
        extensions.Chore(lambda: done.append("hourly"), 3600),
    ]
    monkeypatch.setattr(extensions, "CHORES", chores)
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        if len(sleeps) == 3:
            raise _LoopStopped

    monkeypatch.setattr(expire_claims, "time", SimpleNamespace(monotonic=time.monotonic, sleep=sleep))
    with pytest.raises(_LoopStopped):
        call_command("expire_claims", "--every", "0.01", stdout=io.StringIO())
    assert done.count("often") == 3 and done.count("hourly") == 1


# ---------------------------------------------------------------- the API contract


def test_schema_valid_requests_are_accepted_and_every_refusal_has_a_code(make_project, import_rows, author, worker):
    from tests.security.test_schemathesis import generated_schema

    schema = generated_schema()
    assert schema["components"]["schemas"]["TokenRequest"]["properties"]["username"]["minLength"] == 1
    run_fields = schema["components"]["schemas"]["UnliRunCreate"]["properties"]  # a suite that reads two files
    assert run_fields["gold"]["format"] == run_fields["predictions"]["format"] == "binary"
    api = signed_in(author, api=True)
    blank = APIClient().post("/api/token/", {"username": "", "password": ""}, format="json")
    assert blank.status_code == 400 and blank.json()["code"] == "invalid"
    created = api.post("/api/projects/", {"slug": "nulled", "task_type": "nli_label", "options": None}, format="json")
    assert created.status_code == 201, created.content
    setting = api.post(
        "/api/projects/", {"slug": "bad", "task_type": "nli_label", "options": {"redundancy": 0}}, format="json"
    )
    assert (
        setting.status_code == 400 and setting.json()["code"] == "invalid" and setting.json()["field"] == "redundancy"
    )
    content = api.post(
        "/api/projects/nulled/import/",
        {
            "format": "jsonl",
            "file": SimpleUploadedFile("x.jsonl", b'{"premise": "P", "hypothesis": "H", "label": "maybe"}\n'),
        },
        format="multipart",
    )
    assert content.status_code == 409 and content.json()["code"] == "conflict"
    assert content.json()["errors"] == [
        {"line": 1, "field": "label", "message": content.json()["errors"][0]["message"]}
    ]
    project = make_project("nli_label", slug="to-submit")
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    page = claim_page(project, worker)
    api = signed_in(worker, api=True)
    form = api.generic(
        "POST", f"/api/v1/assignments/{page.pk}/submit/", b"answers=e", content_type="application/x-www-form-urlencoded"
    )
    assert form.status_code == 415 and form.json()["code"] == "unsupported_media_type"  # answers are JSON only
    for body, content_type in ((b"", "multipart/form-data; boundary=xyz"), (b"{}", "application/json")):
        empty = api.generic("POST", f"/api/v1/assignments/{page.pk}/submit/", body, content_type=content_type)
        assert empty.status_code == 400 and empty["Content-Type"] == "application/json"
        assert empty.json() == {"detail": "answers: is required", "code": "invalid", "field": "answers"}


def test_export_flags_that_are_not_true_or_false_are_refused_not_read_as_no(make_project, author):
    project = make_project("nli_label", slug="flags")
    api = signed_in(author, api=True)
    for path, method in (
        (f"/api/v1/projects/{project.slug}/bundle/", api.post),
        (f"/api/v1/projects/{project.slug}/export/", api.get),
    ):
        refused = method(f"{path}?as=jsonl&include_unanswered=true&include_gold=628")
        assert refused.status_code == 400, path
        assert refused.json()["field"] == "include_gold" and "true or false" in refused.json()["detail"]
    assert api.post(f"/api/v1/projects/{project.slug}/bundle/?include_gold=false").status_code == 202
    assert Job.objects.filter(kind="bundle").count() == 1  # the refused one started nothing
    page = signed_in(author).get(f"/projects/{project.slug}/export/jsonl/?include_gold=maybe")
    assert page.status_code == 400 and b"include_gold must be true or false" in page.content
