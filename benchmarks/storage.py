"""Benchmark: a big study's dataset bundle built as production builds it, on an RQ worker host, and downloaded
through a web host, the two sharing no disk: PostgreSQL, Redis and an S3 bucket (moto's server) only.

Builds an unli_slider study of --answers answers (--per-item answers to each of answers / per-item items, from a
crowd of --crowd workers in rotation; benchmarks/export.py's build_project, in INSERT ... SELECT statements) in a
scratch PostgreSQL database (or --database-url's), then starts, each with its own NLI_STUDIO_VAR:
  - a Redis server of its own (on a free port, nothing kept on disk) and moto's S3 server with a bucket;
  - a worker host: `bin/worker default`, RQ through django-tasks-rq and jobs/rq_backend.py, which hands RQ the
    job's own time limit (the bundle kind's, 8 h); RQ forks a work process for the job;
  - a web host: `TASK_WORKERS=0 bin/serve` (AppServer.production, one uvicorn process).
The study's author asks the web host for the bundle (POST /api/v1/projects/<slug>/bundle/, with a token); the
worker host builds it and writes it to the bucket; the author then downloads it from the web host
(GET /api/v1/jobs/<id>/output/), which reads it out of the bucket (whether its memory stays flat is what
web_peak_mb shows; the run logs it when Django held the whole file, docs/benchmarks.md). The downloaded file is
checked: its size is the bucket object's, every file of it is valid (validation.json) and its jsonl file and
Parquet copy hold every answer.

Figures (MB are MiB; memory from /proc/<pid>/status):
  build_seconds                the job's started_at to finished_at (its row); queue_seconds: created_at to started_at
  rq_timeout_s                 the time limit RQ holds for the job (its Redis hash): the kind's limit plus a grace
  job_process_rss_start_mb     RSS of the job's work process (the Job row's runner_pid, forked by RQ) when first seen
  job_process_peak_mb          its peak (VmHWM, read every 0.1 s while it lives; the last reading counts)
  worker_rss_before_mb         the worker's main process (RQ's, which forks the work process) before the job
  worker_peak_mb               its peak while the job ran (VmHWM, reset before the job through clear_refs)
  bundle_mb                    the downloaded file
  download_seconds, download_mb_per_s  the GET, from the request to its last byte
  web_rss_before_mb            the web host's uvicorn process before the download
  web_peak_mb                  its peak during the download (VmHWM, reset before it); web_rss_after_mb after it
  web_peak_above_before_mb     the difference: what the download cost the web process
  second_download_seconds, second_web_peak_mb, second_web_rss_after_mb  the same file downloaded again: the first
                               download also loads what the process had not needed before (the bucket's client);
                               memory the first freed stays in the process's allocator, so the second peak can
                               only show growth beyond the first's
Progress goes to stderr; the figures go to stdout as `name: value` lines, then one JSON line.

Usage: python benchmarks/storage.py [--answers 1000000] [--per-item 5] [--crowd W] [--database-url URL] [--keep]

--database-url: a PostgreSQL database to use instead of a scratch one (migrated here, never dropped); a study an
earlier run left there with the same answers is reused. --keep: leave the scratch database and the scratch
folder (hosts' logs, the downloaded bundle) in place and print where they are.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from http.client import HTTPConnection
from pathlib import Path

from _common import (
    POSTGRES_SERVER,
    PRODUCTION_SECRET_KEY,
    PYTHON,
    REPO_ROOT,
    AppServer,
    argument_parser,
    django_env,
    free_port,
    load_average,
    log,
    migrate,
    port_accepts,
    scratch_postgres,
    session_processes,
    setup_django,
)
from export import SLUG, build_project, check_bundle

BUCKET = "nli-studio-bench"
# Django's warning when its ASGI handler reads a streamed response's sync iterator into a list before sending it.
WHOLE_FILE = "StreamingHttpResponse must consume synchronous iterators"
PRODUCTION = {"DEBUG": "false", "SECRET_KEY": PRODUCTION_SECRET_KEY, "ALLOWED_HOSTS": "127.0.0.1"}


# ---------------------------------------------------------------------------- processes


def status_kb(pid: int, field: str) -> int | None:
    """A memory field (VmRSS, VmHWM) of /proc/<pid>/status in KiB; None once the process is gone (or a zombie)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


def memory_mb(pid: int, field: str) -> float:
    kb = status_kb(pid, field)
    if kb is None:
        raise RuntimeError(f"no {field} for process {pid}: it ended")
    return kb / 1024


def reset_peak(pid: int) -> None:
    """Set the process's VmHWM back to its current RSS (proc(5): clear_refs, 5), so that the next reading is the
    peak since now."""
    with open(f"/proc/{pid}/clear_refs", "w") as clear:
        clear.write("5")


def parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def end_session(process: subprocess.Popen, seconds: float = 20) -> None:
    """SIGTERM to a process's session (it leads it), then SIGKILL to whatever of it is left."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=10)


def start_redis(folder: Path) -> tuple[subprocess.Popen, str]:
    """A Redis server of this run's own on a free port (no snapshot, no append-only file: nothing on disk)."""
    port = free_port()
    with open(folder / "redis.log", "wb") as server_log:
        server = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            cwd=folder,
            stdout=server_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    if not port_accepts(port, 30):
        end_session(server)
        raise RuntimeError(f"redis-server did not start: {(folder / 'redis.log').read_text()[-2000:]}")
    return server, f"redis://127.0.0.1:{port}/0"


def start_s3(folder: Path) -> tuple[subprocess.Popen, dict, object]:
    """moto's S3 server with an empty bucket (as tests/faults/conftest.py starts it): the process, the settings
    every host reads to use it, and a client of it."""
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
            return server, env, client
        except Exception as error:
            if server.poll() is not None or time.monotonic() > deadline:
                end_session(server)
                raise RuntimeError(
                    f"moto's S3 server did not start: {(folder / 'moto.log').read_text()[-2000:]}"
                ) from (error)
            time.sleep(0.3)


def start_worker(folder: Path, env: dict) -> subprocess.Popen:
    """bin/worker default as a worker host runs it, in a session of its own. bin/worker execs Python, so the
    process returned is the worker's main process (RQ's, which forks a work process per job)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "worker.log", "wb") as worker_log:
        return subprocess.Popen(
            [str(REPO_ROOT / "bin" / "worker"), "default"],
            cwd=REPO_ROOT,
            env={**env, "PY": PYTHON},
            stdout=worker_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_listening(worker: subprocess.Popen, log_path: Path, seconds: float = 180) -> None:
    """Until the worker's heartbeat row says it takes the default queue."""
    from jobs.workers import listening

    deadline = time.monotonic() + seconds
    while not listening("default"):
        if worker.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"bin/worker did not start: {log_path.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)


def web_process(server: AppServer) -> int:
    """The web host's uvicorn process: with one web process uvicorn serves in its own process (a child of
    bin/serve's shell), with more its supervisor's children do (AppServer.web_processes)."""
    spawned = server.web_processes()
    if spawned:
        if len(spawned) != 1:
            raise RuntimeError(f"expected one web process, found {spawned}")
        return spawned[0]
    found = [pid for pid in session_processes(server.process.pid) if "uvicorn" in command_of(pid)]
    if len(found) != 1:
        raise RuntimeError(f"expected one uvicorn process in bin/serve's session, found {found}")
    return found[0]


def api(port: int, method: str, path: str, token: str):
    """An open response (the caller reads it and closes the connection)."""
    connection = HTTPConnection("127.0.0.1", port, timeout=300)
    headers = {"Authorization": f"Token {token}"}
    body = None
    if method == "POST":
        body, headers["Content-Type"] = b"{}", "application/json"
    connection.request(method, path, body=body, headers=headers)
    return connection, connection.getresponse()


class PeakSampler(threading.Thread):
    """Reads a process's VmHWM and VmRSS every `every` seconds until it ends (or stop() is called): the first
    RSS seen and the last peak seen."""

    def __init__(self, pid: int, every: float):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.first_rss_kb: int | None = None
        self.peak_kb: int | None = None
        self.max_rss_kb = 0
        self.readings = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            peak, rss = status_kb(self.pid, "VmHWM"), status_kb(self.pid, "VmRSS")
            if peak is None or rss is None:
                return
            if self.first_rss_kb is None:
                self.first_rss_kb = rss
            self.peak_kb = max(self.peak_kb or 0, peak)
            self.max_rss_kb = max(self.max_rss_kb, rss)
            self.readings += 1
            self._halt.wait(self.every)

    def stop(self) -> None:
        self._halt.set()
        self.join()


# ---------------------------------------------------------------------------- the database and the study


@contextmanager
def database(url: str | None, keep: bool):
    """--database-url's database (never dropped), a scratch one kept with --keep, else scratch_postgres's."""
    if url:
        yield url
        return
    if not keep:
        with scratch_postgres("storage") as scratch:
            yield scratch
        return
    import psycopg

    name = f"nli_bench_storage_{os.getpid()}"
    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    log(f"created database {name} (kept: --keep)")
    yield f"{POSTGRES_SERVER}/{name}"


def the_study(answers: int, per_item: int, crowd: int) -> tuple[int, int]:
    """The study of `answers` answers (built, or reused from an earlier run on this database); (answers, items)."""
    from annotation.models import Annotation, Item, Project

    if Project.objects.filter(slug=SLUG).exists():
        held = Annotation.objects.filter(item__project__slug=SLUG).count()
        if held != answers // per_item * per_item:
            raise RuntimeError(f"this database holds a study {SLUG} of {held} answers; use another --database-url")
        log(f"reusing the study {SLUG} of {held} answers in this database")
    else:
        started = time.perf_counter()
        held = build_project(answers, per_item, crowd)
        log(f"built the study in {time.perf_counter() - started:.1f} s")
    return held, Item.objects.filter(project__slug=SLUG).count()


def author_token() -> str:
    from rest_framework.authtoken.models import Token

    from annotation.models import Project

    return Token.objects.get_or_create(user=Project.objects.get(slug=SLUG).owner)[0].key


# ---------------------------------------------------------------------------- the run


def main():
    parser = argument_parser(__doc__)  # its --json is accepted; the JSON line is printed in any case
    parser.add_argument("--answers", type=int, default=1_000_000)
    parser.add_argument("--per-item", type=int, default=5, help="answers (workers) per item")
    parser.add_argument("--crowd", type=int, help="the workers the answers rotate through (default: --per-item)")
    parser.add_argument("--database-url", help="a PostgreSQL database to use (not dropped) instead of a scratch one")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database and folder")
    args = parser.parse_args()
    args.crowd = args.crowd or args.per_item
    if not 1 <= args.per_item <= 100 or args.answers < args.per_item:
        parser.error("--per-item must be 1..100 and --answers at least --per-item")
    if not args.per_item <= args.crowd <= 100_000:
        parser.error("--crowd must be at least --per-item (each item's workers differ) and at most 100,000")
    if args.database_url and not args.database_url.startswith(("postgres://", "postgresql://")):
        parser.error("--database-url must be a PostgreSQL URL (postgres://user@host:port/name)")
    if shutil.which("redis-server") is None:
        parser.error("redis-server is not on PATH (the benchmark runs a Redis of its own)")

    load_before = load_average()
    os.environ.update(PRODUCTION)  # this process's Django (the study, the checks) too: DEBUG off, as deployed
    scratch = Path(tempfile.mkdtemp(prefix="nli-bench-storage-"))
    figures: dict = {}
    try:
        with database(args.database_url, args.keep) as url:
            migrate(url, scratch)
            setup_django(url, scratch)
            try:
                answers, items = the_study(args.answers, args.per_item, args.crowd)
                token = author_token()
                figures = {
                    "answers": answers,
                    "items": items,
                    "per_item": args.per_item,
                    "crowd": args.crowd,
                    **measure(url, scratch, token, answers),
                }
            finally:
                from django.db import connections

                connections.close_all()
            if args.keep or args.database_url:
                log(f"the database is kept: {url}")
    finally:
        if args.keep:
            log(f"the scratch folder is kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    figures["load_average_before"] = load_before
    figures["load_average_after"] = load_average()
    for key, value in figures.items():
        print(f"{key}: {value}")
    print(json.dumps(figures))


def measure(url: str, scratch: Path, token: str, answers: int) -> dict:
    from jobs.models import Job

    redis_server, redis_url = start_redis(scratch)
    s3, bucket_env, bucket = start_s3(scratch)
    hosts = {"REDIS_URL": redis_url, "TASKS_BACKEND": None, **bucket_env}
    web = AppServer.production(
        url, scratch / "web", 1, TASK_WORKERS="0", NLI_STUDIO_HOST_NAME="web", **hosts
    )  # the housekeeping loop (EXPIRY_SECONDS) runs at its default, as deployed
    worker = None
    try:
        web.launch()
        worker = start_worker(
            scratch / "worker",
            django_env(url, scratch / "worker", NLI_STUDIO_HOST_NAME="worker", **PRODUCTION, **hosts),
        )
        web.wait_until_serving()
        wait_listening(worker, scratch / "worker" / "worker.log")
        time.sleep(5)  # both settled after their first requests and beats
        log("the web and worker hosts are up")

        # The build, on the worker host.
        worker_before = memory_mb(worker.pid, "VmRSS")
        reset_peak(worker.pid)
        connection, response = api(web.port, "POST", f"/api/v1/projects/{SLUG}/bundle/", token)
        body = response.read()
        connection.close()
        if response.status != 202:
            raise RuntimeError(f"POST bundle: {response.status} {body[:500]!r}")
        job_id = json.loads(body)["job"]
        log(f"asked the web host for the bundle: job {job_id}")
        sampler, rq_timeout, last_log = None, None, time.monotonic()
        while True:
            job = Job.objects.get(pk=job_id)
            if sampler is None and job.runner_pid:
                if parent_of(job.runner_pid) != worker.pid:
                    raise RuntimeError(f"the job runs in process {job.runner_pid}, not a child of the worker")
                sampler = PeakSampler(job.runner_pid, 0.1)
                sampler.start()
                rq_timeout = rq_job_timeout(redis_url, job.message_id)
                log(
                    f"running in process {job.runner_pid} (forked by the worker {worker.pid}); RQ's limit {rq_timeout} s"
                )
            if job.status in (Job.Status.DONE, Job.Status.FAILED, Job.Status.CANCELLED):
                break
            if worker.poll() is not None:
                raise RuntimeError(f"the worker ended: {(scratch / 'worker' / 'worker.log').read_text()[-3000:]}")
            if time.monotonic() - last_log > 60:
                log(f"job {job_id}: {job.status}, {job.done} of {job.total or '?'}")
                last_log = time.monotonic()
            time.sleep(0.1)
        if job.status != Job.Status.DONE:
            raise RuntimeError(f"the bundle job ended {job.status}: {job.error}")
        if sampler is None:
            raise RuntimeError("the job ended before its process was seen")
        deadline = time.monotonic() + 30
        while sampler.is_alive() and time.monotonic() < deadline:  # its last readings, until the process ends
            time.sleep(0.1)
        sampler.stop()
        worker_peak = memory_mb(worker.pid, "VmHWM")
        build_seconds = (job.finished_at - job.started_at).total_seconds()
        log(f"built in {build_seconds:.1f} s on the worker; downloading through the web host")

        # The download, through the web host: twice, the first one also loads what the process had not needed
        # before (the bucket's client), the second shows what a download alone costs.
        pid = web_process(web)
        out = scratch / "downloaded.zip"
        first = download(web.port, pid, job_id, token, out)
        log(f"downloaded {first['received'] / 2**20:.1f} MB in {first['seconds']:.1f} s; once more")
        second = download(web.port, pid, job_id, token, scratch / "downloaded-again.zip")
        received = first["received"]
        if not filecmp.cmp(out, scratch / "downloaded-again.zip", shallow=False):
            raise RuntimeError("the two downloads differ")
        (scratch / "downloaded-again.zip").unlink()
        stored = [
            item for item in bucket.list_objects_v2(Bucket=BUCKET).get("Contents", []) if item["Key"].endswith(".zip")
        ]
        if [item["Size"] for item in stored] != [received]:
            raise RuntimeError(f"the bucket holds {stored}, the download was {received} bytes")
    finally:
        if worker is not None:
            end_session(worker)
        web.stop()
        for server in (redis_server, s3):
            end_session(server, seconds=5)
    if WHOLE_FILE in web.log_tail(None):  # Django's ASGI handler lists a sync iterator before sending it
        log(f"the web host's log says: {WHOLE_FILE} (the download was held whole in the web process)")

    lines, checked = check_bundle(out, scratch)
    if checked != answers:
        raise RuntimeError(f"the bundle's jsonl file holds {checked} answers, the study {answers}")
    log(f"the bundle is valid and holds all {checked} answers ({lines} items)")
    mb = 2**20
    return {
        "build_seconds": round(build_seconds, 1),
        "queue_seconds": round((job.started_at - job.created_at).total_seconds(), 1),
        "job_time_limit_s": job.time_limit,
        "rq_timeout_s": rq_timeout,
        "job_process_rss_start_mb": round(sampler.first_rss_kb / 1024, 1),
        "job_process_peak_mb": round(sampler.peak_kb / 1024, 1),
        "job_process_readings": sampler.readings,
        "worker_rss_before_mb": round(worker_before, 1),
        "worker_peak_mb": round(worker_peak, 1),
        "bundle_mb": round(received / mb, 1),
        "bundle_bytes": received,
        "download_seconds": round(first["seconds"], 2),
        "download_mb_per_s": round(received / mb / first["seconds"], 1),
        "web_rss_before_mb": first["before_mb"],
        "web_peak_mb": first["peak_mb"],
        "web_peak_above_before_mb": round(first["peak_mb"] - first["before_mb"], 1),
        "web_rss_after_mb": first["after_mb"],
        "second_download_seconds": round(second["seconds"], 2),
        "second_web_peak_mb": second["peak_mb"],
        "second_web_rss_after_mb": second["after_mb"],
        "database": "postgresql",
        "tasks": "rq",
    }


def download(port: int, pid: int, job_id: int, token: str, out: Path) -> dict:
    """GET the job's output from the web host into `out`: its seconds and bytes, and the web process's RSS
    before, at its peak during the download (VmHWM reset before it) and after (MB)."""
    before = memory_mb(pid, "VmRSS")
    reset_peak(pid)
    started, received = time.monotonic(), 0
    connection, response = api(port, "GET", f"/api/v1/jobs/{job_id}/output/", token)
    with open(out, "wb") as file:
        while chunk := response.read(1 << 20):
            file.write(chunk)
            received += len(chunk)
    connection.close()
    seconds = time.monotonic() - started
    peak, after = memory_mb(pid, "VmHWM"), memory_mb(pid, "VmRSS")
    if response.status != 200 or received != int(response.getheader("Content-Length") or -1):
        raise RuntimeError(f"download: status {response.status}, {received} bytes")
    return {
        "seconds": seconds,
        "received": received,
        "before_mb": round(before, 1),
        "peak_mb": round(peak, 1),
        "after_mb": round(after, 1),
    }


def rq_job_timeout(redis_url: str, message_id: str) -> int | None:
    """The timeout RQ keeps for the job (its hash in Redis), or None if RQ has no such job."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        value = client.hget(f"rq:job:{message_id}", "timeout")
    finally:
        client.close()
    return int(value) if value else None


if __name__ == "__main__":
    sys.exit(main())
