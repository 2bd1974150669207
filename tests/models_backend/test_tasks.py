"""Background model runs: queued through the Tasks API, progress recorded, cancellable, shown on pages."""
import json

import pytest
from conftest import PAIRS, write_pairs_jsonl
from django.test import override_settings

from models_backend import runs
from models_backend.models import ModelRun

IMMEDIATE = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend", "QUEUES": ["default", "gpu"]}}
pytestmark = pytest.mark.django_db


@override_settings(TASKS=IMMEDIATE)
def test_a_prediction_run_records_progress_and_result(tiny_nli, tmp_path, author):
    source = write_pairs_jsonl(tmp_path / "in.jsonl")
    output = tmp_path / "out.jsonl"
    params = {"model_dir": str(tiny_nli), "input_path": str(source), "output_path": str(output), "batch_size": 2}
    run = runs.start_model_run(ModelRun.Job.PREDICT, params, author, queue="gpu")
    assert run.status == "done", run.error
    assert (run.done, run.total) == (len(PAIRS), len(PAIRS))
    assert run.result["rows"] == len(PAIRS)
    assert json.loads(output.read_text().splitlines()[0])["id"] == "p0"


def test_cancel_stops_a_running_job_at_its_next_step(tiny_nli, tmp_path, author):
    source = write_pairs_jsonl(tmp_path / "in.jsonl")
    params = {"model_dir": str(tiny_nli), "input_path": str(source), "output_path": str(tmp_path / "o.jsonl"), "batch_size": 1}
    run = ModelRun.objects.create(job=ModelRun.Job.PREDICT, params=params, created_by=author)
    original = runs.JOBS[ModelRun.Job.PREDICT]

    def cancel_midway(job_params, progress):
        def watching(done, total):
            if done == 1:
                runs.cancel(ModelRun.objects.get(pk=run.pk))
            progress(done, total)

        return original(job_params, watching)

    runs.JOBS[ModelRun.Job.PREDICT] = cancel_midway
    try:
        finished = runs.execute(run.pk)
    finally:
        runs.JOBS[ModelRun.Job.PREDICT] = original
    assert finished.status == "cancelled" and finished.done < len(PAIRS)


def test_a_failing_job_is_stored_as_failed(tmp_path, author):
    run = ModelRun.objects.create(job=ModelRun.Job.PREDICT, params={"model_dir": str(tmp_path / "none"), "input_path": "x", "output_path": "y"})
    finished = runs.execute(run.pk)
    assert finished.status == "failed" and "none" in finished.error


@override_settings(TASKS=IMMEDIATE)
def test_run_pages_for_authors_only(tiny_nli, tmp_path, author, worker, client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(worker)
    assert client.get("/models/").status_code == 403
    client.force_login(author)
    assert client.get("/models/").status_code == 200
    pairs = SimpleUploadedFile("pairs.jsonl", write_pairs_jsonl(tmp_path / "in.jsonl").read_bytes())
    response = client.post("/models/", {"model_dir": str(tiny_nli), "input_file": pairs, "output_format": "jsonl", "batch_size": 4, "queue": "default"})
    run = ModelRun.objects.get()
    assert response["Location"] == f"/models/{run.pk}/" and run.status == "done"
    assert "Download the output" in client.get(f"/models/{run.pk}/status/").content.decode()
    download = client.get(f"/models/{run.pk}/output/")
    assert b"".join(download.streaming_content).decode().count("\n") == len(PAIRS)
    bad = client.post("/models/", {"model_dir": str(tmp_path), "input_file": SimpleUploadedFile("p.jsonl", b"{}"), "output_format": "jsonl", "batch_size": 4, "queue": "default"})
    assert bad.status_code == 200 and "no config.json" in bad.content.decode()
