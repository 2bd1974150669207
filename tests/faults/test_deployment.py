"""The evaluation backend as docs/deploying.md deploys it, in real processes:

- the production configuration (bin/serve with PostgreSQL and Redis and its own task worker) takes every job
  kind to "done": a background import, an export, a bundle, an evaluation run, a prediction, a few steps of
  UNLI training and atom generation with tiny local models;
- two hosts with no shared disk (a web host `TASK_WORKERS=0 bin/serve` and a worker host `bin/worker default
  gpu`, each with its own NLI_STUDIO_VAR), sharing only PostgreSQL, Redis and an S3 endpoint (moto's server):
  an evaluation run uploaded on the web host, a bundle built on the worker and downloaded from the web host, a
  checkpoint trained on one worker host used by a prediction on another;
- a worker host killed mid-job: the job ends failed within the documented bound, nothing is half-written to
  storage under the job's final name, and a new worker takes the next job.

Jobs are started where the web host starts them: through its API (uploads) or, for the forms of the models
pages, by the same services those forms call, run with the web host's settings (`manage.py shell`).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import time
import zipfile
from http.client import HTTPConnection
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from benchmarks._common import PYTHON, REPO_ROOT, AppServer, django_env
from tests.conftest import redis_url as pass_redis_url
from tests.conftest import require_service
from tests.faults.test_server_faults import served_database_url
from tests.models_backend.conftest import build_bert_classifier, build_bert_encoder, build_gpt2

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
REDIS_DB = 5  # this suite's own Redis database
SECRET = "deployment-test-secret-key"
JOB_SECONDS = 240


# ---------------------------------------------------------------------------- processes


@pytest.fixture
def redis_url():
    require_service("Redis", "127.0.0.1", 6379)
    import redis

    url = pass_redis_url(REDIS_DB)
    client = redis.Redis.from_url(url)
    client.flushdb()  # no job queued by an earlier run
    yield url
    client.flushdb()


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("host-models")
    build_bert_classifier(folder / "tiny-nli")
    build_bert_encoder(folder / "tiny-encoder")
    build_gpt2(folder / "tiny-lm")
    return folder


def host_env(var_dir: Path, redis_url: str, **extra) -> dict:
    return django_env(
        served_database_url(),
        var_dir,
        DEBUG="false",
        SECRET_KEY=SECRET,
        ALLOWED_HOSTS="127.0.0.1",
        REDIS_URL=redis_url,
        TASKS_BACKEND=None,
        **extra,
    )


class WorkerHost:
    """bin/worker as a worker or GPU host runs it, in a session of its own (so it can be killed whole)."""

    def __init__(self, var_dir: Path, env: dict):
        var_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = var_dir / "worker.log"
        self.process = subprocess.Popen(
            [str(REPO_ROOT / "bin" / "worker"), "default", "gpu"],
            cwd=REPO_ROOT,
            env={**env, "PY": PYTHON},
            stdout=open(self.log_path, "wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_listening(self, seconds: float = 120) -> None:
        from jobs.workers import listening

        deadline = time.monotonic() + seconds
        while not listening("gpu"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"bin/worker did not start: {self.log_tail()}")
            time.sleep(0.5)

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # anything of its session still alive (a job's process)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=10)


def on_host(env: dict, code: str) -> dict:
    """Run Python with a host's settings (as its web process would) and return the JSON it prints last."""
    done = subprocess.run(
        [PYTHON, "manage.py", "shell", "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


START_MODEL_JOB = """
import json
from django.contrib.auth import get_user_model
from django.core.files import File
from models_backend.launch import start_model_job
user = get_user_model().objects.get(username={user!r})
sources = {{role: File(open(path, "rb")) for role, path in {sources!r}.items()}}
job = start_model_job({form!r}, user, {checkpoints!r}, sources, {settings!r})
print(json.dumps({{"id": job.pk}}))
"""

START_EXPORT = """
import json
from django.contrib.auth import get_user_model
from annotation.models import Project
from dataset_io.services.background import start_export
job = start_export(Project.objects.get(slug={slug!r}), "jsonl", get_user_model().objects.get(username={user!r}))
print(json.dumps({{"id": job.pk}}))
"""


def start_model_job(env, user, form, checkpoints, sources, settings) -> int:
    code = START_MODEL_JOB.format(
        user=user.username,
        form=form,
        checkpoints=checkpoints,
        sources={role: str(path) for role, path in sources.items()},
        settings=settings,
    )
    return on_host(env, code)["id"]


def api(port: int, method: str, path: str, token: str, body=None, content_type="application/json"):
    connection = HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        headers = {"Authorization": f"Token {token}"}
        if body is not None:
            headers["Content-Type"] = content_type
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        return response.status, response.getheader("Content-Type", ""), data
    finally:
        connection.close()


def multipart(fields: dict, files: dict) -> tuple[bytes, str]:
    boundary = "----nli-studio-test-boundary"
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, path in files.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{Path(path).name}"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n".encode()
            + Path(path).read_bytes()
            + b"\r\n"
        )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def job_state(port: int, token: str, job_id: int) -> dict:
    status, _, data = api(port, "GET", f"/api/v1/jobs/{job_id}/", token)
    assert status == 200, data[:500]
    return json.loads(data)


def wait_for(port: int, token: str, job_id: int, states=("done",), seconds: float = JOB_SECONDS, log=None) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = job_state(port, token, job_id)
        if job["status"] in states:
            return job
        if job["status"] in ("failed", "cancelled"):
            pytest.fail(f"job {job_id} ({job['kind']}) {job['status']}: {job['error']}\n{log() if log else ''}")
        time.sleep(0.5)
    pytest.fail(
        f"job {job_id} still {job_state(port, token, job_id)['status']} after {seconds} s\n{log() if log else ''}"
    )


def download(port: int, token: str, job_id: int) -> bytes:
    status, content_type, data = api(port, "GET", f"/api/v1/jobs/{job_id}/output/", token)
    assert status == 200 and content_type == "application/octet-stream", data[:500]
    return data


def big_import_file(path: Path, rows: int = 10_050) -> Path:
    with path.open("w") as handle:
        for i in range(rows):
            handle.write(json.dumps({"id": f"r{i}", "premise": f"A man walks {i} dogs.", "hypothesis": "He is out."}))
            handle.write("\n")
    return path


def chaos_files(shared_data):
    folder = shared_data / "chaosnli"
    return folder / "chaosNLI_snli.jsonl", folder / "prediction_samples" / "snli_random_baseline.json"


def pairs_file(path: Path, rows: int = 40) -> Path:
    with path.open("w") as handle:
        for i in range(rows):
            handle.write(json.dumps({"id": f"p{i}", "premise": f"two dogs run {i}", "hypothesis": "dogs move"}) + "\n")
    return path


TINY_TRAINING = {"epochs": 1, "batch_size": 8, "max_length": 32, "lr": 0.001, "pretrain": False, "with_baseline": False}


def training_files(tmp_path: Path, shared_data: Path, rows: int = 48) -> dict:
    lines = (shared_data / "u-snli" / "dev.csv").read_text().splitlines()
    train = tmp_path / "train.csv"
    train.write_text("\n".join(lines[: rows + 1]) + "\n")
    evaluation = tmp_path / "eval.csv"
    evaluation.write_text("\n".join([lines[0], *lines[rows + 1 : 2 * rows + 1]]) + "\n")
    return {"train": train, "eval": evaluation}


# ---------------------------------------------------------------------------- the production configuration


def test_bin_serve_with_postgresql_and_redis_runs_every_job_kind(
    make_project, import_rows, author, tmp_path, redis_url, tiny_models, shared_data
):
    project = make_project("nli_label", slug="deployed", owner=author)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(12)])
    target = make_project("nli_label", slug="big-import", owner=author)
    token = Token.objects.create(user=author).key
    var = tmp_path / "host"
    server = AppServer.production(
        served_database_url(),
        var,
        processes=1,
        REDIS_URL=redis_url,
        TASKS_BACKEND=None,
        NLI_STUDIO_MODELS=str(tiny_models),
        NLI_STUDIO_HOST_NAME="host",
        EXPIRY_SECONDS="5",
    )
    env = host_env(var, redis_url, NLI_STUDIO_MODELS=str(tiny_models), NLI_STUDIO_HOST_NAME="host")
    try:
        server.start()
        port = server.port
        jobs = {}
        body, kind = multipart({"format": "jsonl"}, {"file": big_import_file(tmp_path / "big.jsonl")})
        status, _, data = api(port, "POST", f"/api/v1/projects/{target.slug}/import/", token, body, kind)
        assert status == 202, data[:500]
        jobs["import"] = json.loads(data)["job"]
        status, _, data = api(port, "POST", f"/api/v1/projects/{project.slug}/bundle/", token, b"{}")
        assert status == 202, data[:500]
        jobs["bundle"] = json.loads(data)["job"]
        human, predictions = chaos_files(shared_data)
        body, kind = multipart({"suite": "chaos", "bootstrap": "0"}, {"gold": human, "predictions": predictions})
        status, _, data = api(port, "POST", "/api/v1/evaluation/runs/", token, body, kind)
        assert status == 201, data[:500]
        jobs["evaluate"] = json.loads(data)["id"]
        jobs["export"] = on_host(env, START_EXPORT.format(slug=project.slug, user=author.username))["id"]
        pairs = pairs_file(tmp_path / "pairs.jsonl")
        jobs["predict"] = start_model_job(
            env, author, "predict", {"model_dir": "shared/tiny-nli"}, {"input": pairs}, {}
        )
        jobs["train_unli"] = start_model_job(
            env,
            author,
            "train_unli",
            {"base": "shared/tiny-encoder"},
            training_files(tmp_path, shared_data),
            TINY_TRAINING,
        )
        jobs["generate_atoms"] = start_model_job(
            env,
            author,
            "generate_atoms",
            {"lm_dir": "shared/tiny-lm", "nli_dir": "shared/tiny-nli"},
            {"input": pairs_file(tmp_path / "few.jsonl", rows=3)},
            {"max_new_tokens": 8},
        )
        finished = {name: wait_for(port, token, job_id, log=server.log_tail) for name, job_id in jobs.items()}
    finally:
        server.stop()
    assert all(job["status"] == "done" for job in finished.values()), finished
    assert finished["import"]["result"]["created"] == 10_050
    assert finished["predict"]["result"]["rows"] == 40 and finished["generate_atoms"]["result"]
    assert finished["train_unli"]["output_url"] and -1 <= finished["train_unli"]["result"]["pearson"] <= 1
    # Every job ran on the RQ worker bin/serve started (django-tasks-rq's job class), none in the web process.
    assert all(job["worker"] for job in finished.values())


# ---------------------------------------------------------------------------- two hosts, no shared disk


def test_web_and_worker_hosts_share_only_the_database_redis_and_a_bucket(
    make_project, import_rows, author, tmp_path, redis_url, s3, tiny_models, shared_data
):
    bucket_env, bucket = s3
    project = make_project("nli_label", slug="two-hosts", owner=author)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(20)])
    token = Token.objects.create(user=author).key
    web = AppServer.production(
        served_database_url(),
        tmp_path / "web",
        processes=1,
        REDIS_URL=redis_url,
        TASKS_BACKEND=None,
        TASK_WORKERS="0",
        EXPIRY_SECONDS="5",
        NLI_STUDIO_HOST_NAME="web",
        **bucket_env,
    )
    web_env = host_env(tmp_path / "web", redis_url, NLI_STUDIO_HOST_NAME="web", **bucket_env)
    worker_env = host_env(
        tmp_path / "worker-a",
        redis_url,
        NLI_STUDIO_MODELS=str(tiny_models),
        NLI_STUDIO_HOST_NAME="worker-a",
        **bucket_env,
    )
    worker = None
    try:
        web.start()
        port = web.port
        worker = WorkerHost(tmp_path / "worker-a", worker_env)
        worker.wait_listening()

        # An evaluation run uploaded on the web host, run by the worker host from the bucket.
        human, predictions = chaos_files(shared_data)
        body, kind = multipart({"suite": "chaos", "bootstrap": "0"}, {"gold": human, "predictions": predictions})
        status, _, data = api(port, "POST", "/api/v1/evaluation/runs/", token, body, kind)
        assert status == 201, data[:500]
        run = wait_for(port, token, json.loads(data)["id"], log=worker.log_tail)
        assert run["worker"].startswith("worker-a:") and run["result"]

        # A bundle built on the worker host, downloaded through the web host.
        status, _, data = api(port, "POST", f"/api/v1/projects/{project.slug}/bundle/", token, b"{}")
        assert status == 202, data[:500]
        bundle_job = wait_for(port, token, json.loads(data)["job"], log=worker.log_tail)
        archive = zipfile.ZipFile(io.BytesIO(download(port, token, bundle_job["id"])))
        assert any(name.endswith(".jsonl") for name in archive.namelist())
        kept = [item["Key"] for item in bucket.list_objects_v2(Bucket="nli-studio-test").get("Contents", [])]
        assert f"jobs/{bundle_job['id']}/output/two-hosts-dataset.zip" in kept
        assert not (tmp_path / "web" / "media" / "jobs").exists()  # nothing of the jobs on the web host's disk

        # A checkpoint trained on worker host A ...
        trained = start_model_job(
            web_env,
            author,
            "train_unli",
            {"base": "shared/tiny-encoder"},
            training_files(tmp_path, shared_data),
            TINY_TRAINING,
        )
        wait_for(port, token, trained, log=worker.log_tail)

        # ... then worker host A dies in the middle of a long job.
        long_job = start_model_job(
            web_env,
            author,
            "train_unli",
            {"base": "shared/tiny-encoder"},
            training_files(tmp_path, shared_data, rows=400),
            {**TINY_TRAINING, "epochs": 50, "batch_size": 2},
        )
        wait_for(port, token, long_job, states=("running",), log=worker.log_tail)
        time.sleep(2)
        worker.kill()
        killed_at = time.monotonic()
        while job_state(port, token, long_job)["status"] == "running":
            assert time.monotonic() - killed_at < 60, "the job of a killed worker still shows running after 60 s"
            time.sleep(1)
        failed = job_state(port, token, long_job)
        # Its watch saw the worker go (jobs/running.py); the heartbeats would have said so 30 s later.
        assert failed["status"] == "failed" and "its task worker (worker-a:" in failed["error"], failed
        kept = [item["Key"] for item in bucket.list_objects_v2(Bucket="nli-studio-test").get("Contents", [])]
        assert not [key for key in kept if key.startswith(f"jobs/{long_job}/output/")]  # nothing half-written

        # With no worker alive, a queued job says why it waits.
        pairs = pairs_file(tmp_path / "pairs.jsonl")
        prediction = start_model_job(
            web_env, author, "predict", {"model_dir": f"job/{trained}"}, {"input": pairs}, {"output_format": "jsonl"}
        )
        waiting = job_state(port, token, prediction)
        assert waiting["status"] == "queued" and "no worker listens on queue default" in waiting["waiting_reason"]

        # A new worker host B (its own disk: no checkpoint cache) takes the next job, fetching the checkpoint.
        worker.stop()
        worker = WorkerHost(
            tmp_path / "worker-b",
            host_env(tmp_path / "worker-b", redis_url, NLI_STUDIO_HOST_NAME="worker-b", **bucket_env),
        )
        done = wait_for(port, token, prediction, log=worker.log_tail)
        assert done["result"]["rows"] == 40 and done["worker"] != run["worker"]
        rows = [json.loads(line) for line in download(port, token, prediction).splitlines()]
        assert [row["id"] for row in rows] == [f"p{i}" for i in range(40)]
        assert list((tmp_path / "worker-b" / "checkpoint-cache").iterdir())  # fetched into B's cache
    finally:
        if worker is not None:
            worker.stop()
        web.stop()
