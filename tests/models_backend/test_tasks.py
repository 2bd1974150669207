"""Model jobs: queued through the one jobs module, progress recorded, cancellable, shown on the job page."""

import json

import pytest
from conftest import PAIRS, write_pairs_jsonl
from django.test import override_settings

from jobs import files, running, services
from jobs.kinds import KINDS, JobKind
from jobs.models import Job
from models_backend.runs import PREDICT
from tests.conftest import IMMEDIATE_TASKS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_media")]


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_a_prediction_job_records_progress_and_result(tiny_nli, tmp_path, author):
    source = write_pairs_jsonl(tmp_path / "in.jsonl")
    params = {"model_dir": str(tiny_nli), "batch_size": 2}
    job = services.start_job(PREDICT, params, author, inputs={"input": source}, queue="gpu")
    assert job.status == "done", job.error
    assert (job.done, job.total) == (len(PAIRS), len(PAIRS))
    assert job.result["rows"] == len(PAIRS)
    assert job.inputs[0]["role"] == "input" and job.output.endswith("predictions.jsonl")
    written = b"".join(files.read_chunks(job.output)).decode()
    assert json.loads(written.splitlines()[0])["id"] == "p0"


def test_cancel_stops_a_running_job_at_its_next_step(tiny_nli, tmp_path, author):
    source = write_pairs_jsonl(tmp_path / "in.jsonl")
    params = {
        "model_dir": str(tiny_nli),
        "input_path": str(source),
        "output_path": str(tmp_path / "o.jsonl"),
        "batch_size": 1,
    }
    job = Job.objects.create(kind=PREDICT, params=params, created_by=author)
    original = KINDS[PREDICT]

    def cancel_midway(running, progress):
        def watching(done, total):
            if done == 1:
                services.cancel(Job.objects.get(pk=job.pk))
            progress(done, total)

        return original.run(running, watching)

    KINDS[PREDICT] = JobKind(PREDICT, original.title, cancel_midway, original.group)
    try:
        finished = running.execute(job.pk)
    finally:
        KINDS[PREDICT] = original
    assert finished.status == "cancelled" and finished.done < len(PAIRS)


def test_a_job_cancelled_before_it_starts_never_runs(author):
    job = Job.objects.create(kind=PREDICT, params={}, created_by=author, cancel_requested=True)
    assert running.execute(job.pk).status == "cancelled"


def test_a_failing_job_is_stored_as_failed(tmp_path, author):
    job = Job.objects.create(
        kind=PREDICT, params={"model_dir": str(tmp_path / "none"), "input_path": "x", "output_path": "y"}
    )
    finished = running.execute(job.pk)
    assert finished.status == "failed" and "none" in finished.error


def test_a_job_delivered_twice_runs_once(tiny_nli, tmp_path, author):
    source = write_pairs_jsonl(tmp_path / "in.jsonl")
    job = Job.objects.create(
        kind=PREDICT,
        params={"model_dir": str(tiny_nli), "input_path": str(source), "output_path": str(tmp_path / "o.jsonl")},
        created_by=author,
    )
    first = running.execute(job.pk)
    second = running.execute(job.pk)
    assert first.status == second.status == "done" and second.finished_at == first.finished_at


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_model_pages_for_authors_only(tiny_nli, tmp_path, author, worker, client, make_user, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.MODELS_DIR = tiny_nli.parent  # the checkpoint is picked from the registry, never typed as a path
    client.force_login(worker)
    assert client.get("/models/").status_code == 403
    client.force_login(author)
    assert client.get("/models/").status_code == 200
    pairs = SimpleUploadedFile("pairs.jsonl", write_pairs_jsonl(tmp_path / "in.jsonl").read_bytes())
    response = client.post(
        "/models/",
        {
            "job": "predict",
            "model_dir": f"shared/{tiny_nli.name}",
            "input_file": pairs,
            "output_format": "jsonl",
            "batch_size": 4,
            "queue": "default",
        },
    )
    job = Job.objects.get()
    assert response["Location"] == f"/jobs/{job.pk}/" and job.status == "done"
    assert "Download the output" in client.get(f"/jobs/{job.pk}/status/").content.decode()
    download = client.get(f"/jobs/{job.pk}/output/")
    assert b"".join(download.streaming_content).decode().count("\n") == len(PAIRS)
    typed = client.post(
        "/models/",
        {
            "job": "predict",
            "model_dir": str(tmp_path),
            "input_file": SimpleUploadedFile("p.jsonl", b"{}"),
            "output_format": "jsonl",
            "batch_size": 4,
            "queue": "default",
        },
    )
    assert typed.status_code == 400 and "Select a valid choice" in typed.content.decode()
    client.force_login(make_user("author2", "author"))
    assert (
        client.get(f"/jobs/{job.pk}/").status_code == 404 and client.get(f"/jobs/{job.pk}/output/").status_code == 404
    )
