"""Stored evaluation runs: the service, background execution, the pages, the API and `evaluate --save`."""

import hashlib
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from evaluation.runs import RunError, clean_parameters, start_run
from evaluation.suites import run_chaos
from jobs.models import Job
from tests.conftest import IMMEDIATE_TASKS

pytestmark = pytest.mark.django_db

DUMMY = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}


@pytest.fixture(autouse=True)
def _inline_tasks_and_media(settings, tmp_path):
    settings.TASKS = IMMEDIATE_TASKS
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def chaos_files(shared_data):
    folder = shared_data / "chaosnli"
    return folder / "chaosNLI_snli.jsonl", folder / "prediction_samples" / "snli_random_baseline.json"


@pytest.fixture
def chaos_run(chaos_files, author):
    human, predictions = chaos_files
    return start_run("chaos", {}, {"human": human, "predictions": predictions}, author)


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def upload(path) -> SimpleUploadedFile:
    return SimpleUploadedFile(path.name, path.read_bytes())


def login(client, user):
    client.force_login(user)
    return client


# The service -------------------------------------------------------------------------------------------


def test_chaos_run_stores_run_chaos_results_and_checksums(chaos_run, chaos_files, author, settings):
    human, predictions = chaos_files
    run = Job.objects.get(pk=chaos_run.pk)
    assert run.status == "done" and run.error == ""
    assert run.created_by == author
    assert run.started_at <= run.finished_at
    assert run.params["parameters"] == {
        "model": None,
        "divergence": False,
        "seed": 0,
        "renormalise": False,
        "bootstrap": 1000,
    }
    assert run.result == json.loads(json.dumps(run_chaos(human, predictions)))
    assert [(i["role"], i["name"], i["size"], i["sha256"]) for i in run.inputs] == [
        ("human", human.name, human.stat().st_size, sha256(human)),
        ("predictions", predictions.name, predictions.stat().st_size, sha256(predictions)),
    ]
    # The run keeps its own copies in the storage, under jobs/<id>/input/ (MEDIA_ROOT on one host).
    for entry in run.inputs:
        copy = settings.MEDIA_ROOT / entry["path"]
        assert copy.parent.parent == settings.MEDIA_ROOT / "jobs" / str(run.pk) / "input"
        assert sha256(copy) == entry["sha256"]


def test_parameters_reach_the_suite(chaos_files, author):
    human, predictions = chaos_files
    run = start_run("chaos", {"divergence": "true", "seed": "3"}, {"human": human, "predictions": predictions}, author)
    assert run.params["parameters"]["divergence"] is True and run.params["parameters"]["seed"] == 3
    assert run.result == json.loads(json.dumps(run_chaos(human, predictions, divergence=True, seed=3)))
    assert run.result["jsd_measure"] == "divergence"


def test_a_bad_file_is_refused_naming_the_line_and_stores_nothing(chaos_files, author, tmp_path):
    human, _ = chaos_files
    bad = tmp_path / "preds.jsonl"
    bad.write_text('{"id": "x", "probabilities": {"entailment": 1, "neutral": 0, "contradiction": 0}}\n{oops\n')
    with pytest.raises(RunError) as error:
        start_run("chaos", {}, {"human": human, "predictions": upload(bad)}, author)
    # The message names the uploaded file, its line and field.
    assert str(error.value).startswith("preds.jsonl:2 field '(json)': not valid JSON"), error.value
    assert not Job.objects.exists()


def test_uploaded_files_are_stored_like_paths(chaos_files, author):
    human, predictions = chaos_files
    run = start_run("chaos", None, {"human": upload(human), "predictions": upload(predictions)}, author)
    assert run.status == "done"
    assert [i["sha256"] for i in run.inputs] == [sha256(human), sha256(predictions)]


def test_deleting_a_run_removes_its_stored_inputs(chaos_run, settings):
    folder = settings.MEDIA_ROOT / chaos_run.storage_prefix
    assert folder.is_dir()
    chaos_run.delete()
    assert not folder.exists()


def test_background_runs_are_queued_as_tasks(chaos_files, author, settings):
    from django_tasks import default_task_backend

    settings.TASKS = DUMMY
    human, predictions = chaos_files
    run = start_run("chaos", {}, {"human": human, "predictions": predictions}, author)
    assert run.status == "queued" and run.result is None
    (queued,) = default_task_backend.results
    assert queued.task.name == "run_job" and queued.args == [run.pk]
    # A worker picking the task up executes it; delivering it twice does not run it again.
    queued.task.call(run.pk)
    run.refresh_from_db()
    assert run.status == "done" and run.result["n"] == 1514
    finished_at = run.finished_at
    queued.task.call(run.pk)
    run.refresh_from_db()
    assert run.finished_at == finished_at


@pytest.mark.parametrize(
    "suite, params, files, message",
    [
        ("nope", {}, {}, "unknown suite"),
        ("chaos", {"weighted": True}, {}, "no setting 'weighted'"),
        ("chaos", {"seed": "x"}, {}, "must be a whole number"),
        ("defeasible", {"atom_labels": "quaternary"}, {}, "must be one of auto, binary, ternary"),
        ("chaos", {}, {"human": "a.jsonl"}, "missing predictions"),
    ],
)
def test_bad_requests_store_nothing(suite, params, files, message, author):
    with pytest.raises(RunError, match=message):
        start_run(suite, params, files, author)
    assert not Job.objects.exists()


def test_missing_path_stores_nothing(author, tmp_path):
    with pytest.raises(RunError, match="no such file"):
        start_run("transitivity", {}, {"input": tmp_path / "absent.jsonl"}, author)
    assert not Job.objects.exists()


def test_defaults_fill_every_setting():
    assert clean_parameters("defeasible", {}) == {"weighted": False, "atom_labels": "auto"}
    assert clean_parameters("unli", None) == {}


# Pages -------------------------------------------------------------------------------------------------


def test_pages_for_author_worker_and_anonymous(client, chaos_run, author, worker):
    urls = ["/evaluation/", "/evaluation/new/", f"/jobs/{chaos_run.pk}/", f"/jobs/{chaos_run.pk}/status/"]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
    login(client, worker)
    for url in urls:
        assert client.get(url).status_code == 403, url
    login(client, author)
    for url in urls:
        assert client.get(url).status_code == 200, url


def test_list_is_paginated_with_an_empty_state(client, author, make_user):
    login(client, author)
    assert "No evaluation runs yet" in client.get("/evaluation/").content.decode()
    Job.objects.bulk_create(
        [Job(kind="evaluate", params={"suite": "unli", "parameters": {}}, created_by=author) for _ in range(30)]
    )
    other = make_user("author2", "author")
    Job.objects.create(kind="evaluate", params={"suite": "unli", "parameters": {}}, created_by=other)
    page = client.get("/evaluation/")
    assert len(page.context["runs"]) == 25 and page.context["runs"].paginator.count == 30
    assert len(client.get("/evaluation/?page=2").context["runs"]) == 5
    # Admins see everyone's runs.
    login(client, make_user("boss", "admin"))
    assert client.get("/evaluation/").context["runs"].paginator.count == 31


def test_detail_shows_results_inputs_and_the_entropy_plot(client, chaos_run, author):
    login(client, author)
    html = client.get(f"/jobs/{chaos_run.pk}/").content.decode()
    assert chaos_run.inputs[0]["sha256"] in html and chaos_run.inputs[1]["sha256"] in html
    assert f"{chaos_run.result['jsd']:.4f}" in html
    assert "<svg" in html and "human label entropy" in html
    assert "bins" in html and f"{chaos_run.result['bins'][0]['majority_acc']:.4f}" in html
    assert 'hx-trigger="every 1s"' not in html  # finished: no polling


def test_other_authors_runs_are_not_found(client, chaos_run, make_user):
    login(client, make_user("author2", "author"))
    assert client.get(f"/jobs/{chaos_run.pk}/").status_code == 404


def test_queued_run_polls_and_reloads_when_done(client, author):
    run = Job.objects.create(kind="evaluate", params={"suite": "chaos", "parameters": {}}, created_by=author)
    login(client, author)
    html = client.get(f"/jobs/{run.pk}/").content.decode()
    assert 'hx-trigger="every 1s"' in html and f"/jobs/{run.pk}/status/" in html
    Job.objects.filter(pk=run.pk).update(status="done", result={"n": 1})
    fragment = client.get(f"/jobs/{run.pk}/status/", HTTP_HX_REQUEST="true")
    assert fragment["HX-Refresh"] == "true" and "every 1s" not in fragment.content.decode()


def test_form_starts_a_run(client, chaos_files, author):
    human, predictions = chaos_files
    login(client, author)
    response = client.post(
        "/evaluation/new/",
        {
            "suite": "chaos",
            "gold": upload(human),
            "predictions": upload(predictions),
            "divergence": "on",
            "seed": "0",
            "atom_labels": "auto",
        },
    )
    run = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{run.pk}/"
    assert run.status == "done" and run.params["parameters"]["divergence"] is True
    assert run.result["jsd_measure"] == "divergence"


def test_form_errors_are_shown(client, chaos_files, author):
    human, _ = chaos_files
    login(client, author)
    response = client.post("/evaluation/new/", {"suite": "chaos", "gold": upload(human), "atom_labels": "auto"})
    assert response.status_code == 400
    assert "needs a predictions file" in response.content.decode()
    assert not Job.objects.exists()


# API ---------------------------------------------------------------------------------------------------


def test_api_create_retrieve_and_results(chaos_files, author, worker):
    human, predictions = chaos_files
    api = APIClient()
    api.force_authenticate(author)
    created = api.post(
        "/api/evaluation/runs/",
        {
            "suite": "chaos",
            "gold": upload(human),
            "predictions": upload(predictions),
            "seed": "1",
        },
        format="multipart",
    )
    assert created.status_code == 201, created.content
    run_id = created.json()["id"]
    assert created["Location"].endswith(f"/api/evaluation/runs/{run_id}/")

    detail = api.get(f"/api/evaluation/runs/{run_id}/").json()
    assert detail["status"] == "done" and detail["created_by"] == author.username
    assert detail["parameters"] == {
        "model": None,
        "divergence": False,
        "seed": 1,
        "renormalise": False,
        "bootstrap": 1000,
    }
    assert detail["inputs"][0] == {
        "role": "human",
        "name": human.name,
        "size": human.stat().st_size,
        "sha256": sha256(human),
    }
    assert detail["results"] == json.loads(json.dumps(run_chaos(human, predictions, seed=1)))
    assert api.get(f"/api/evaluation/runs/{run_id}/results/").json() == detail["results"]
    low, high = detail["results"]["intervals"]["jsd"]
    assert low < detail["results"]["jsd"] < high and detail["results"]["bootstrap"]["seed"] == 1
    listed = api.get("/api/evaluation/runs/").json()
    assert [row["id"] for row in listed["results"]] == [run_id] and "results" not in listed["results"][0]

    api.force_authenticate(worker)
    assert api.get("/api/evaluation/runs/").status_code == 403
    assert api.get(f"/api/evaluation/runs/{run_id}/").status_code == 403


def test_api_refuses_a_file_over_the_import_limit_as_too_large(chaos_files, author, settings):
    human, predictions = chaos_files
    settings.NLI_MAX_IMPORT_BYTES = 10
    api = APIClient()
    api.force_authenticate(author)
    answer = api.post(
        "/api/evaluation/runs/",
        {"suite": "chaos", "gold": upload(human), "predictions": upload(predictions)},
        format="multipart",
    )
    assert answer.status_code == 413 and answer.json()["code"] == "too_large" and answer.json()["field"] == "gold"
    assert "over the import limit" in answer.json()["detail"] and not Job.objects.exists()


def test_api_reads_a_part_without_a_file_name_as_the_files_content(author):
    # curl -F 'predictions=<p.jsonl' sends no file name; an empty part is an empty file, not a part left out.
    api = APIClient()
    api.force_authenticate(author)
    for predictions in ("", '{"id": "1"'):  # left out, the suite would refuse with 400 "needs predictions"
        answer = api.post(
            "/api/evaluation/runs/",
            {"suite": "chaos", "gold": SimpleUploadedFile("g.jsonl", b"[1]\n"), "predictions": predictions},
            format="multipart",
        )
        assert answer.status_code == 409 and "predictions" not in answer.json().get("field", ""), answer.content
        assert not Job.objects.exists()


def test_api_refuses_bad_requests_and_reports_failed_runs(chaos_files, author, tmp_path):
    human, predictions = chaos_files
    api = APIClient()
    api.force_authenticate(author)
    refused = api.post(
        "/api/evaluation/runs/",
        {"suite": "unli", "gold": upload(human), "seed": "2", "predictions": upload(predictions)},
        format="multipart",
    )
    assert refused.status_code == 400 and "no setting 'seed'" in json.dumps(refused.json())
    assert not Job.objects.exists()

    negative = api.post(
        "/api/evaluation/runs/",
        {"suite": "chaos", "gold": upload(human), "predictions": upload(predictions), "bootstrap": "-1"},
        format="multipart",
    )
    assert negative.status_code == 400 and "bootstrap" in json.dumps(negative.json())
    assert not Job.objects.exists()

    bad = api.post(
        "/api/evaluation/runs/",
        {"suite": "transitivity", "gold": SimpleUploadedFile("t.jsonl", b"[1]\n")},
        format="multipart",
    )
    assert bad.status_code == 409 and "t.jsonl:1 field '(json)'" in json.dumps(bad.json())
    assert not Job.objects.exists()
    # A file that reads but leaves the metric nothing to compute is refused the same way, not run and failed.
    constant = api.post(
        "/api/evaluation/runs/",
        {
            "suite": "unli",
            "gold": SimpleUploadedFile("g.csv", b"id,pre,hyp,nli,unli\n1,P,H,1,0.2\n2,P,H,2,0.2\n"),
            "predictions": SimpleUploadedFile("p.csv", b"id,prediction\n1,0.3\n2,0.8\n"),
        },
        format="multipart",
    )
    assert constant.status_code == 409 and "g.csv:3 field 'unli': every gold probability is 0.2" in json.dumps(
        constant.json()
    )
    assert not Job.objects.exists()

    failed = Job.objects.create(
        kind="evaluate",
        params={"suite": "transitivity", "parameters": {}},
        status="failed",
        error="boom",
        created_by=author,
    )
    results = api.get(f"/api/evaluation/runs/{failed.pk}/results/")
    assert results.status_code == 409 and results.json()["status"] == "failed"


def test_admins_list_every_run_including_command_line_ones(chaos_run, make_user):
    cli_run = Job.objects.create(
        kind="evaluate",
        params={"suite": "unli", "parameters": {}},
        status="failed",
        error="gold.csv:3 field 'unli': bad",
    )
    api = APIClient()
    api.force_authenticate(make_user("boss", "admin"))
    rows = api.get("/api/evaluation/runs/").json()["results"]
    assert [(row["id"], row["created_by"]) for row in rows] == [(cli_run.pk, None), (chaos_run.pk, "author1")]
    assert api.get(f"/api/evaluation/runs/{cli_run.pk}/").json()["error"] == cli_run.error


def test_admin_site_lists_runs(client, chaos_run, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", password="a-test-password"))
    assert client.get("/admin/jobs/job/").status_code == 200
    assert client.get(f"/admin/jobs/job/{chaos_run.pk}/change/").status_code == 200


def test_api_runs_against_a_project_need_its_author(chaos_files, author, make_project, make_user):
    human, predictions = chaos_files
    project = make_project("nli_label")
    api = APIClient()

    def post(slug):
        form = {"suite": "chaos", "gold": upload(human), "predictions": upload(predictions), "project": slug}
        return api.post("/api/evaluation/runs/", form, format="multipart")

    api.force_authenticate(make_user("author2", "author"))
    # Another author's project does not exist for them: the same answer as a slug that names nothing.
    assert post(project.slug).status_code == 404 and post("nope").status_code == 404
    api.force_authenticate(author)
    created = post(project.slug)
    assert created.status_code == 201 and created.json()["project"] == project.slug
    assert Job.objects.get().project == project


def test_schema_lists_the_run_endpoints(client, author):
    login(client, author)
    schema = client.get("/api/schema/").content.decode()
    assert "/api/v1/evaluation/runs/" in schema and "/api/v1/evaluation/runs/{id}/results/" in schema


# Command -----------------------------------------------------------------------------------------------


def test_evaluate_save_stores_the_run(chaos_files, author):
    human, predictions = chaos_files
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "evaluate",
        "chaos",
        "--human",
        str(human),
        "--predictions",
        str(predictions),
        "--json",
        "--save",
        "--user",
        author.username,
        stdout=out,
        stderr=err,
    )
    printed = json.loads(out.getvalue().strip().splitlines()[-1])
    run = Job.objects.get()
    assert run.result == printed and run.created_by == author and run.status == "done"
    assert f"stored as evaluation run {run.pk}" in err.getvalue()
    assert run.inputs[1]["sha256"] == sha256(predictions)


def test_evaluate_save_of_a_bad_file_stores_nothing(tmp_path):
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"label_p_h": "e"}\n')
    with pytest.raises(CommandError, match=r"t\.jsonl:1 field 'id': missing") as error:
        call_command("evaluate", "transitivity", "--input", str(bad), "--save", stdout=io.StringIO())
    assert error.value.returncode == 2
    assert not Job.objects.exists()


def test_evaluate_without_save_stores_nothing(chaos_files):
    human, predictions = chaos_files
    call_command("evaluate", "chaos", "--human", str(human), "--predictions", str(predictions), stdout=io.StringIO())
    assert not Job.objects.exists()
