"""Kept files in an S3-compatible bucket (moto's server as the stand-in), from this process: what a bad bucket
looks like to `manage.py check` and to a job, and that an outage while a job writes leaves no output behind."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from jobs import files, running, services
from jobs.kinds import JobKind, register
from jobs.models import Job
from tests.conftest import IMMEDIATE_TASKS
from tests.faults.conftest import BUCKET

pytestmark = pytest.mark.django_db


def bucket_settings(env: dict, bucket: str = BUCKET) -> dict:
    """The settings config/settings.py derives from the AWS_* variables, for this process."""
    return {
        "AWS_STORAGE_BUCKET_NAME": bucket,
        "AWS_S3_ENDPOINT_URL": env["AWS_S3_ENDPOINT_URL"],
        "AWS_ACCESS_KEY_ID": env["AWS_ACCESS_KEY_ID"],
        "AWS_SECRET_ACCESS_KEY": env["AWS_SECRET_ACCESS_KEY"],
        "AWS_S3_REGION_NAME": "us-east-1",
        "AWS_DEFAULT_ACL": None,
        "STORAGES": {
            "default": {"BACKEND": "storages.backends.s3.S3Storage"},
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        },
        "TASKS": IMMEDIATE_TASKS,
    }


def keys(client) -> list[str]:
    return [item["Key"] for item in client.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def test_a_bucket_that_does_not_exist_is_named_by_check_and_by_the_job(s3, author, tmp_path):
    env, _ = s3
    with override_settings(**bucket_settings(env, "no-such-bucket")):
        with pytest.raises(SystemCheckError) as refused:
            call_command("check", stdout=io.StringIO(), stderr=io.StringIO())
        assert "no-such-bucket" in str(refused.value) and "NoSuchBucket" in str(refused.value)
        source = tmp_path / "in.txt"
        source.write_text("x\n")
        with pytest.raises(files.StorageError) as not_started:  # a 503 on a page or the API, not a bad input
            services.start_job("import", {}, author, inputs={"file": source})
        assert "not started" in str(not_started.value) and "bucket 'no-such-bucket'" in str(not_started.value)
        assert "Traceback" not in str(not_started.value)
    assert not Job.objects.exists()  # nothing stored


def test_check_passes_on_a_bucket_it_can_write(s3):
    env, client = s3
    with override_settings(**bucket_settings(env)):
        call_command("check", stdout=io.StringIO())
    assert keys(client) == []  # its probe removed


def test_files_round_trip_through_the_bucket_in_chunks(s3):
    env, client = s3
    content = bytes(range(256)) * 8192  # 2 MiB
    with override_settings(**bucket_settings(env)):
        size, _ = files.save_chunks(
            "jobs/1/output/big.bin", (content[i : i + 65536] for i in range(0, len(content), 65536))
        )
        assert size == len(content) and files.local_path("jobs/1/output/big.bin") is None
        chunks = list(files.read_chunks("jobs/1/output/big.bin", chunk_size=1 << 20))
        assert len(chunks) == 2 and b"".join(chunks) == content
        files.delete_tree("jobs/1/")
    assert keys(client) == []


def test_an_outage_while_a_job_writes_leaves_no_output(s3, author):
    env, client = s3

    def write_then_lose_the_bucket(job, progress):
        path = running.output_file(job, "out.jsonl")
        path.write_text('{"a": 1}\n' * 1000)
        client.delete_bucket(Bucket=BUCKET)  # the store goes away before the output is published
        return {"rows": 1000}

    register(JobKind("storage-outage-test", "Outage", write_then_lose_the_bucket, group="data"))
    with override_settings(**bucket_settings(env)):
        job = services.start_job("storage-outage-test", {}, author)
    assert job.status == "failed" and job.output == ""
    assert "could not write jobs/" in job.error and "NoSuchBucket" in job.error and "Traceback" not in job.error
    client.create_bucket(Bucket=BUCKET)
    assert keys(client) == []
    assert not running.scratch_folder(job).joinpath("output").exists()


def test_a_missing_bucket_answers_503_naming_it_on_the_api_and_the_pages(s3, author, client, shared_data):
    """An evaluation uploaded into a bucket that is gone, and downloads from it: 503 with the message, never a
    bare 500 (the API's one error shape; a short page elsewhere)."""
    env, _ = s3
    client.force_login(author)
    job = Job.objects.create(kind="export", status=Job.Status.DONE, created_by=author, output="jobs/9/output/a.jsonl")
    human = shared_data / "chaosnli" / "chaosNLI_snli.jsonl"
    predictions = shared_data / "chaosnli" / "prediction_samples" / "snli_random_baseline.json"
    with override_settings(**bucket_settings(env, "gone-bucket")):
        with human.open("rb") as gold, predictions.open("rb") as predicted:
            upload = client.post(
                "/api/v1/evaluation/runs/", {"suite": "chaos", "bootstrap": "0", "gold": gold, "predictions": predicted}
            )
        api_download = client.get(f"/api/v1/jobs/{job.pk}/output/")
        page_download = client.get(f"/jobs/{job.pk}/output/")
    assert upload.status_code == 503, upload.content[:300]
    assert upload.json()["code"] == "unavailable" and "bucket 'gone-bucket'" in upload.json()["detail"]
    assert "not started" in upload.json()["detail"] and Job.objects.count() == 1  # the run was not stored
    assert api_download.status_code == 503 and api_download["Content-Type"] == "application/json"
    assert "could not read jobs/9/output/a.jsonl" in api_download.json()["detail"]
    assert page_download.status_code == 503 and b"gone-bucket" in page_download.content


def test_a_download_served_over_asgi_streams_from_an_async_iterator(author, tmp_path):
    """Django reads a sync iterator whole into memory before sending it over ASGI (docs/benchmarks.md): the ASGI
    handler opens downloads with asynchronous=True, and gets one chunk at a time."""
    size, _ = files.save_chunks("jobs/7/output/file.bin", [b"x" * files.CHUNK, b"y" * 10])
    response = files.download_response("jobs/7/output/file.bin", "file.bin", api=True).open_off_turn(asynchronous=True)
    assert response.is_async and response["Content-Length"] == str(size)
    sync = files.download_response("jobs/7/output/file.bin", "file.bin", api=True).open_off_turn()
    assert not sync.is_async and b"".join(sync.streaming_content) == b"x" * files.CHUNK + b"y" * 10
