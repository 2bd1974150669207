"""Background jobs under real faults, in real processes (bin/serve, bin/worker, a Redis of the test's own on its own
port, moto's S3 server), on PostgreSQL:

- a job whose limit is far above RQ's default timeout (set small here) runs past that default and finishes; one
  past its own limit ends failed, saying so;
- a worker's whole process group killed mid-training: the job ends failed within the bound and no process of it is
  left (RQ's work process leads a process group of its own: killing the worker's group does not reach it);
- Redis restarted without persistence while two jobs are queued: both run to done once a worker listens, and a
  queued job cancelled before the restart stays cancelled;
- the bucket frozen (SIGSTOP) while downloads are in flight: claims and submits of a running study still answer,
  downloads answer 503 with the API's error shape within the configured timeouts;
- /readyz names each failed component in those tests; /healthz stays 200.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import threading
import time
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from benchmarks._common import AppServer, free_port
from jobs.models import Job
from jobs.workers import _alive
from tests.faults.test_deployment import (
    TINY_TRAINING,
    WorkerHost,
    api,
    chaos_files,
    host_env,
    job_state,
    multipart,
    start_model_job,
    tiny_models,  # noqa: F401 - the module's fixture
    training_files,
    wait_for,
)
from tests.faults.test_server_faults import call, served_database_url

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
RQ_DEFAULT = 2  # RQ's default timeout on these hosts: a job given no limit of its own would die at 2 s
REQUEUE_AFTER = 3  # JOB_REQUEUE_AFTER_SECONDS on these hosts
FAST = {"JOB_REQUEUE_AFTER_SECONDS": str(REQUEUE_AFTER), "RQ_DEFAULT_TIMEOUT": str(RQ_DEFAULT)}


class OwnRedis:
    """redis-server on a port of its own, keeping nothing on disk (as the shared Redis here, and many managed
    ones): a restart empties it."""

    def __init__(self, folder: Path):
        self.port, self.folder = free_port(), folder
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> OwnRedis:
        self.folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"),
                *("--daemonize", "yes", "--dir", str(self.folder), "--logfile", str(self.folder / "redis.log")),
            ],
            check=True,
        )
        client = self.client()
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                return self
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        try:
            self.client().shutdown(nosave=True)
        except Exception:  # redis-py reads the closed connection as an error: the server is gone, as asked
            pass

    def client(self):
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)


@pytest.fixture
def own_redis(tmp_path):
    server = OwnRedis(tmp_path / "redis").start()
    yield server
    server.stop()


def readiness(port: int) -> tuple[int, dict]:
    status, _, data = api(port, "GET", "/readyz", "none")
    return status, json.loads(data)


def healthy(port: int) -> bool:
    status, _, data = api(port, "GET", "/healthz", "none")
    return status == 200 and json.loads(data)["status"] == "ok"


def runner_pid(job_id: int, seconds: float = 120) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = Job.objects.get(pk=job_id)
        if job.status == Job.Status.RUNNING and job.runner_pid and job.done:
            return job.runner_pid
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not start its steps: {Job.objects.get(pk=job_id).log}")


def wait_dead(pid: int, seconds: float) -> float:
    started = time.monotonic()
    while _alive(pid):
        assert time.monotonic() - started < seconds, f"process {pid} still alive after {seconds} s"
        time.sleep(0.2)
    return time.monotonic() - started


def long_training(tmp_path, shared_data, epochs: int, rows: int = 400) -> tuple[dict, dict]:
    return training_files(tmp_path, shared_data, rows=rows), {**TINY_TRAINING, "epochs": epochs, "batch_size": 2}


def web_host(tmp_path, own_redis) -> AppServer:
    """A web host as deployed with its workers elsewhere (TASK_WORKERS=0), its expiry loop every 2 s."""
    return AppServer.production(
        served_database_url(),
        tmp_path / "web",
        processes=1,
        REDIS_URL=own_redis.url,
        TASKS_BACKEND=None,
        TASK_WORKERS="0",
        EXPIRY_SECONDS="2",
        NLI_STUDIO_HOST_NAME="web",
        **FAST,
    )


def test_time_limits_and_a_killed_worker(author, tmp_path, own_redis, tiny_models, shared_data):  # noqa: F811
    token = Token.objects.create(user=author).key
    web = web_host(tmp_path, own_redis)
    # One disk for both (no bucket here): the worker reads the inputs the web host stored.
    worker_env = host_env(
        tmp_path / "web", own_redis.url, NLI_STUDIO_MODELS=str(tiny_models), NLI_STUDIO_HOST_NAME="worker", **FAST
    )
    starting = host_env(tmp_path / "web", own_redis.url, NLI_STUDIO_HOST_NAME="web", **FAST)
    worker = None
    try:
        web.start()
        worker = WorkerHost(tmp_path / "worker", worker_env)
        worker.wait_listening()
        files, settings = long_training(tmp_path, shared_data, epochs=2, rows=200)

        # Its limit (the kind's own, hours) goes to RQ with it: it runs well past RQ's default and finishes.
        long_run = start_model_job(starting, author, "train_unli", {"base": "shared/tiny-encoder"}, files, settings)
        done = wait_for(web.port, token, long_run, log=worker.log_tail)
        took = Job.objects.get(pk=long_run).seconds
        print(f"\nA training of {took:.1f} s ran to done on hosts where RQ's default timeout is {RQ_DEFAULT} s")
        assert took > 2 * RQ_DEFAULT and done["result"]["pearson"] is not None
        assert done["time_limit"] == 48 * 3600 and "JobTimeoutException" not in worker.log_tail()

        # A limit of 3 s (JOB_TIME_LIMITS where it is started): failed at it, saying so, and its process ends.
        short_env = {**starting, "JOB_TIME_LIMITS": "train_unli=3"}
        files, settings = long_training(tmp_path, shared_data, epochs=50)
        limited = start_model_job(short_env, author, "train_unli", {"base": "shared/tiny-encoder"}, files, settings)
        wait_for(web.port, token, limited, states=("failed",), seconds=60, log=worker.log_tail)
        pid = Job.objects.get(pk=limited).runner_pid
        failed = job_state(web.port, token, limited)
        assert failed["time_limit"] == 3 and "time limit of 3 s" in failed["error"], failed
        assert "JOB_TIME_LIMITS=train_unli" in failed["error"]
        wait_dead(pid, 20)

        # The worker's whole process group killed mid-training: failed within the bound, no process of it left.
        files, settings = long_training(tmp_path, shared_data, epochs=50)
        orphan = start_model_job(starting, author, "train_unli", {"base": "shared/tiny-encoder"}, files, settings)
        pid = runner_pid(orphan)
        assert os.getpgid(pid) != worker.process.pid  # RQ's work process is out of reach of a group kill
        worker.kill()
        killed_at = time.monotonic()
        gone_after = wait_dead(pid, 20)
        while job_state(web.port, token, orphan)["status"] == "running":
            assert time.monotonic() - killed_at < 45, "the job of a killed worker still shows running after 45 s"
            time.sleep(0.5)
        ended = job_state(web.port, token, orphan)
        print(
            f"worker killed: its job's process gone after {gone_after:.1f} s, "
            f"the job {ended['status']} after {time.monotonic() - killed_at:.1f} s"
        )
        assert ended["status"] == "failed" and "worker" in ended["error"], ended
        status, ready = readiness(web.port)
        assert status == 503 and not ready["components"]["workers"]["ok"], ready
        assert healthy(web.port)
    finally:
        if worker is not None:
            worker.stop()
        web.stop()


def test_jobs_queued_across_a_redis_restart_run_and_a_cancelled_one_stays_cancelled(
    author, tmp_path, own_redis, shared_data
):
    token = Token.objects.create(user=author).key
    web = web_host(tmp_path, own_redis)
    worker = None
    try:
        web.start()
        human, predictions = chaos_files(shared_data)
        queued = []
        for _ in range(3):
            body, kind = multipart({"suite": "chaos", "bootstrap": "0"}, {"gold": human, "predictions": predictions})
            status, _, data = api(web.port, "POST", "/api/v1/evaluation/runs/", token, body, kind)
            assert status == 201, data[:500]
            queued.append(json.loads(data)["id"])
        assert own_redis.client().llen("rq:queue:default") == 3  # their messages, waiting for a worker
        status, _, data = api(web.port, "POST", f"/api/v1/jobs/{queued[2]}/cancel/", token, b"")
        assert status == 200 and json.loads(data)["status"] == "cancelled", data  # at once, not "stopping"

        own_redis.stop()  # the restart: everything Redis held is gone
        status, ready = readiness(web.port)
        assert status == 503 and not ready["components"]["redis"]["ok"] and ready["components"]["redis"]["detail"]
        assert ready["components"]["database"]["ok"] and healthy(web.port)
        own_redis.start()
        assert own_redis.client().llen("rq:queue:default") == 0

        worker = WorkerHost(tmp_path / "worker", host_env(tmp_path / "web", own_redis.url, **FAST))
        worker.wait_listening()
        listening_at = time.monotonic()
        for job_id in queued[:2]:
            wait_for(web.port, token, job_id, seconds=60, log=worker.log_tail)
        print(f"\nboth lost jobs done {time.monotonic() - listening_at:.1f} s after a worker listened")
        first = job_state(web.port, token, queued[0])
        assert "sent again" in Job.objects.get(pk=queued[0]).log and first["result"]
        cancelled = Job.objects.get(pk=queued[2])
        assert cancelled.status == Job.Status.CANCELLED and cancelled.worker == "" and cancelled.attempts == 0
        status, ready = readiness(web.port)
        assert status == 200 and ready["ready"], ready
    finally:
        if worker is not None:
            worker.stop()
        web.stop()


def test_a_frozen_bucket_leaves_claims_and_submits_answering(
    make_project, import_rows, make_user, author, tmp_path, s3_server
):
    bucket_env, bucket, moto = s3_server
    project = make_project("unli_slider", items_per_page=3, owner=author)
    import_rows(project, [{"id": str(i), "premise": f"P{i % 9}", "hypothesis": f"H{i}"} for i in range(600)])
    tokens = [Token.objects.create(user=make_user(f"crowd{i}")).key for i in range(3)]
    author_token = Token.objects.create(user=author).key
    outputs = []
    for i in range(5):
        job = Job.objects.create(kind="export", status=Job.Status.DONE, created_by=author, output=f"jobs/x{i}/out.txt")
        bucket.put_object(Bucket="nli-studio-test", Key=job.output, Body=b"stored\n" * 1000)
        outputs.append(job.pk)
    timeouts = {"STORAGE_CONNECT_TIMEOUT": "1", "STORAGE_READ_TIMEOUT": "2", "STORAGE_MAX_ATTEMPTS": "1"}
    web = AppServer.production(
        served_database_url(),
        tmp_path / "web",
        processes=1,
        TASK_WORKERS="0",
        EXPIRY_SECONDS="0",
        READYZ_STORAGE_TIMEOUT="3",
        **timeouts,
        **bucket_env,
    )
    try:
        web.start()
        status, _, data = api(web.port, "GET", f"/api/v1/jobs/{outputs[0]}/output/", author_token)
        assert status == 200 and data == b"stored\n" * 1000

        os.kill(moto.pid, signal.SIGSTOP)
        downloads: list[tuple[int, float, dict]] = []

        def download(job_id: int) -> None:
            started = time.monotonic()
            status, content_type, data = api(web.port, "GET", f"/api/v1/jobs/{job_id}/output/", author_token)
            downloads.append((status, time.monotonic() - started, json.loads(data) if "json" in content_type else {}))

        in_flight = [threading.Thread(target=download, args=(job_id,)) for job_id in outputs]
        for thread in in_flight:
            thread.start()
        latencies, statuses = crowd_for(web.port, project, tokens, seconds=4)
        for thread in in_flight:
            thread.join(timeout=60)
        status, ready = readiness(web.port)
        assert healthy(web.port)
        os.kill(moto.pid, signal.SIGCONT)
    finally:
        os.kill(moto.pid, signal.SIGCONT)
        web.stop()
    p99 = statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else latencies[0]
    print(
        f"\nbucket frozen, 5 downloads in flight: {len(latencies)} claims and submits, p50 "
        f"{statistics.median(latencies) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms; downloads answered "
        + ", ".join(f"{status} in {seconds:.1f} s" for status, seconds, _ in downloads)
    )
    assert statuses and all(status < 500 for status in statuses), sorted(set(statuses))
    assert sum(status in (200, 201) for status in statuses) >= 10  # work went on
    assert p99 < 2.0
    assert len(downloads) == 5
    for status, seconds, body in downloads:
        assert status == 503 and body["code"] == "unavailable" and "bucket 'nli-studio-test'" in body["detail"]
        assert seconds < 1 + 2 * 2 + 3  # connect, then botocore waits out the read timeout twice; a margin
    assert status == 503 and not ready["components"]["storage"]["ok"], ready
    assert ready["components"]["database"]["ok"]


def crowd_for(port: int, project, tokens, seconds: float) -> tuple[list[float], list[int]]:
    """Claim and submit pages from a few threads for `seconds`; every call's latency and status."""
    latencies: list[float] = []
    statuses: list[int] = []
    stop_at = time.monotonic() + seconds

    def work(token):
        while time.monotonic() < stop_at:
            started = time.monotonic()
            status, page = call(port, "POST", f"/api/projects/{project.slug}/claim/", token)
            latencies.append(time.monotonic() - started)
            statuses.append(status)
            if status != 201:
                continue
            answers = {str(item["id"]): {"value": 7000} for item in page["items"]}
            started = time.monotonic()
            status, _ = call(port, "POST", f"/api/assignments/{page['id']}/submit/", token, {"answers": answers})
            latencies.append(time.monotonic() - started)
            statuses.append(status)

    threads = [threading.Thread(target=work, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 30)
    return latencies, statuses
