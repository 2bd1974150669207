"""Benchmark: a big study's dataset bundle built on a worker host and downloaded through a web host, the two
sharing no disk: the kept files live in an S3 bucket (moto's server as the stand-in).

Builds an unli_slider project of --annotations answers (as benchmarks/export.py does, on SQLite in a temporary
folder), then starts a web host (`TASK_WORKERS=0 bin/serve`) and a worker host (`bin/worker default`, the
database worker: the job runs in that process), each with its own NLI_STUDIO_VAR and the bucket's settings.
The bundle is asked for through the web host's API, built on the worker, written to the bucket, then
downloaded from the web host, which streams it out of the bucket.

Figures (MB; the processes' own /proc counters):
  worker_rss_before_mb / worker_peak_mb   the worker process before the job and at its peak (VmHWM)
  web_rss_before_mb / web_peak_mb         the web process before the download and at its peak during it
  bundle_mb, build_seconds, download_seconds, download_mb_per_s

Usage: python benchmarks/storage.py [--annotations 1000000] [--per-item 5] [--json]
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.client import HTTPConnection
from pathlib import Path

from _common import (
    PYTHON,
    REPO_ROOT,
    AppServer,
    argument_parser,
    django_env,
    django_on_scratch_database,
    emit,
    free_port,
    load_average,
    log,
)
from export import SLUG, build_project

BUCKET = "nli-studio-bench"
SECRET = "benchmark-secret-key-not-for-production"


def memory_mb(pid: int, field: str) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for process {pid}")


def start_s3(folder: Path) -> tuple[subprocess.Popen, dict]:
    import boto3

    port = free_port()
    with open(folder / "moto.log", "wb") as server_log:  # the child keeps its own copy of the descriptor
        server = subprocess.Popen(
            [PYTHON, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=server_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    env = {
        "AWS_STORAGE_BUCKET_NAME": BUCKET,
        "AWS_S3_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_S3_REGION_NAME": "us-east-1",
    }
    client = boto3.client(
        "s3",
        endpoint_url=env["AWS_S3_ENDPOINT_URL"],
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        region_name="us-east-1",
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            client.create_bucket(Bucket=BUCKET)
            return server, env
        except Exception as error:
            if time.monotonic() > deadline:
                raise RuntimeError("moto's S3 server did not start") from error
            time.sleep(0.3)


def api(port: int, method: str, path: str, token: str):
    connection = HTTPConnection("127.0.0.1", port, timeout=120)
    connection.request(
        method, path, body=b"{}" if method == "POST" else None, headers={"Authorization": f"Token {token}"}
    )
    response = connection.getresponse()
    return connection, response


def web_process(server: AppServer) -> int:
    """The uvicorn process bin/serve started (one web process: it answers every request itself)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if parent == server.process.pid and "uvicorn" in cmdline:
            return int(entry)
    raise RuntimeError("the web process was not found")


def main():
    parser = argument_parser(__doc__)
    parser.add_argument("--annotations", type=int, default=1_000_000)
    parser.add_argument("--per-item", type=int, default=5)
    args = parser.parse_args()
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="nli-bench-s3-") as scratch:
        scratch = Path(scratch)
        s3, bucket_env = start_s3(scratch)
        try:
            with django_on_scratch_database("storage", "sqlite") as (url, _):
                from django.db import connections
                from rest_framework.authtoken.models import Token

                from annotation.models import Project

                build_project(args.annotations, args.per_item)
                owner = Project.objects.get(slug=SLUG).owner
                token = Token.objects.get_or_create(user=owner)[0].key
                connections.close_all()
                figures = measure(url, scratch, bucket_env, token)
        finally:
            os.killpg(s3.pid, signal.SIGKILL)
    emit({"annotations": args.annotations, **figures, "load_average_before": load_before}, args.json)


def measure(url: str, scratch: Path, bucket_env: dict, token: str) -> dict:
    production = {"DEBUG": "false", "SECRET_KEY": SECRET, "ALLOWED_HOSTS": "127.0.0.1", **bucket_env}
    web = AppServer(
        scratch / "web",
        1,
        url,
        DEMO="0",
        MIGRATE="0",
        TASK_WORKERS="0",
        EXPIRY_SECONDS="0",
        NLI_STUDIO_HOST_NAME="web",
        **production,
    )
    (scratch / "worker").mkdir()
    with open(scratch / "worker" / "worker.log", "wb") as worker_log:
        worker = subprocess.Popen(
            [str(REPO_ROOT / "bin" / "worker"), "default"],
            cwd=REPO_ROOT,
            env={**django_env(url, scratch / "worker", NLI_STUDIO_HOST_NAME="worker", **production), "PY": PYTHON},
            stdout=worker_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        web.start()
        time.sleep(10)  # the worker has loaded Django and is polling
        worker_before = memory_mb(worker.pid, "VmRSS")
        log("asking the web host for the bundle")
        connection, response = api(web.port, "POST", f"/api/v1/projects/{SLUG}/bundle/", token)
        job_id = json.loads(response.read())["job"]
        connection.close()
        started = time.monotonic()
        while True:
            connection, response = api(web.port, "GET", f"/api/v1/jobs/{job_id}/", token)
            job = json.loads(response.read())
            connection.close()
            if job["status"] in ("done", "failed", "cancelled"):
                break
            time.sleep(1)
        if job["status"] != "done":
            raise RuntimeError(f"the bundle job {job['status']}: {job['error']}")
        build_seconds = time.monotonic() - started
        worker_peak = memory_mb(worker.pid, "VmHWM")
        log(f"built in {build_seconds:.0f} s on the worker; downloading through the web host")

        pid = web_process(web)
        web_before = memory_mb(pid, "VmRSS")
        peak, done = [web_before], threading.Event()

        def sample():
            while not done.is_set():
                peak.append(memory_mb(pid, "VmRSS"))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample)
        sampler.start()
        started, received = time.monotonic(), 0
        connection, response = api(web.port, "GET", f"/api/v1/jobs/{job_id}/output/", token)
        while chunk := response.read(1 << 20):
            received += len(chunk)
        connection.close()
        download_seconds = time.monotonic() - started
        done.set()
        sampler.join()
        if response.status != 200 or received != int(response.getheader("Content-Length")):
            raise RuntimeError(f"download: status {response.status}, {received} bytes")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        web.stop()
    return {
        "bundle_mb": round(received / 2**20, 1),
        "build_seconds": round(build_seconds, 1),
        "worker_rss_before_mb": round(worker_before, 1),
        "worker_peak_mb": round(worker_peak, 1),
        "download_seconds": round(download_seconds, 1),
        "download_mb_per_s": round(received / 2**20 / download_seconds, 1),
        "web_rss_before_mb": round(web_before, 1),
        "web_peak_mb": round(max(peak), 1),
    }


if __name__ == "__main__":
    sys.exit(main())
