"""Benchmark: what a web process costs before it has done any work: the import time of the ASGI
application and the resident memory of one web process after its first request.

Every figure is taken in fresh processes, --repeat times, and the median is printed:

  import_asgi_s         seconds `import config.asgi` takes in a fresh interpreter (it sets Django up and
                        builds the ASGI application, as a uvicorn process does at start), measured inside
                        the child so that the interpreter's own start is left out
  rss_started_mb        VmRSS of the web process of bin/serve once it listens (the application loaded)
  rss_first_request_mb  VmRSS of the same process after GET /accounts/login/ (the first request also loads
                        the URLconf, every view module and the templates of the page) and GET /api/projects/
  report_first_s        seconds of the process's first report page (a 3-way label study's, then a slider
                        study's, each with answers and its figures computed beforehand by a task worker, as
                        the report job does in production), signed in as their author
  rss_after_report_mb   VmRSS of the same process after the two report pages
  report_heavy_modules  which of the heavy modules below the web process has mapped after them (read from
                        /proc/<pid>/maps): the page shows the figures the job computed and needs none

The server is bin/serve in the production shape (DEBUG off, DEMO=0, no task worker, no expiry loop) with
one uvicorn process, on a SQLite database in a temporary NLI_STUDIO_VAR folder migrated once beforehand.
With one process uvicorn serves in its own process, so the web process is the one running uvicorn.
heavy_modules lists which of pandas, scipy, matplotlib, sklearn, torch and transformers `import
config.asgi` followed by `import config.urls` loads: none is needed until a report, an evaluation or a
job asks for it.

Goal: import_asgi_s < 0.5 s and rss_first_request_mb < 150 MB; no heavy module after a report page.

Usage: python benchmarks/startup.py [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _common import (
    PRODUCTION_SECRET_KEY,
    PYTHON,
    REPO_ROOT,
    AppServer,
    django_env,
    emit,
    load_average,
    log,
    migrate,
    port_accepts,
    session_processes,
)

GOAL_IMPORT_S = 0.5
GOAL_RSS_MB = 150
HEAVY_MODULES = ("pandas", "scipy", "matplotlib", "sklearn", "torch", "transformers")
IMPORT_PROBE = f"""
import json, sys, time
started = time.perf_counter()
import config.asgi
seconds = time.perf_counter() - started
import config.urls
heavy = sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY_MODULES!r}))
print(json.dumps({{"seconds": seconds, "heavy": heavy}}))
"""
PAGES = ("/accounts/login/", "/api/projects/")
REPORTS = ("/projects/labels/report/", "/projects/slider/report/")
# Two studies with answers, their report jobs queued (a task worker then computes them), and a session of
# their author, its key printed: signed with the server's secret key, so the server reads it.
FILL_STUDIES = """
import io, json
import django
django.setup()
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from annotation.services.analysis import report_job
from annotation.services.assignments import claim_page, submit_page
from annotation.services.projects import create_project
from core.roles import grant_role
from dataset_io.services.importers import import_stream

User = get_user_model()
author = User.objects.create_user("author", password="-")
grant_role(author, "author")
workers = [User.objects.create_user(name, password="-") for name in ("w1", "w2", "w3")]
for worker in workers:
    grant_role(worker, "worker")
rows = [{"id": f"e{n}", "premise": "A dog runs.", "hypothesis": f"An animal moves {n}."} for n in range(20)]
for slug, task_type, answers in (("labels", "nli_label", "enc"), ("slider", "unli_slider", (1000, 5000, 9000))):
    study = create_project(slug, task_type, author, status="published", items_per_page=20, redundancy=3)
    import_stream(study, io.StringIO("".join(json.dumps(row) + "\\n" for row in rows)), "jsonl")
    for number, worker in enumerate(workers):
        page = claim_page(study, worker)
        chosen = {str(claim.item_id): {"value": answers[(claim.item_id + number) % 3]} for claim in page.claims.all()}
        submit_page(page.pk, worker, chosen)
    report_job.check(study, author)
session = SessionStore()
session["_auth_user_id"] = str(author.pk)
session["_auth_user_backend"] = settings.AUTHENTICATION_BACKENDS[-1]  # the model backend
session["_auth_user_hash"] = author.get_session_auth_hash()
session.create()
print(session.session_key)
"""


def import_once(var_dir: Path) -> dict:
    probe = subprocess.run(
        [PYTHON, "-c", IMPORT_PROBE],
        cwd=REPO_ROOT,
        env=django_env(None, var_dir),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(probe.stdout.strip().splitlines()[-1])


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"process {pid} reports no VmRSS")


def uvicorn_process(server: AppServer) -> int:
    """The process running uvicorn (bin/serve's shell is its parent; with one process it serves itself)."""
    for pid in session_processes(server.process.pid):
        with open(f"/proc/{pid}/cmdline", "rb") as command:
            if b"uvicorn" in command.read().split(b"\0"):
                return pid
    raise RuntimeError(f"no uvicorn process under bin/serve: {server.log_tail()}")


def get(port: int, path: str, session: str | None = None) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", path, headers={"Cookie": f"sessionid={session}"} if session else {})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def fill_studies(var_dir: Path) -> str:
    """The two studies of REPORTS with their figures computed; returns their author's session key."""
    env = django_env(None, var_dir, DEBUG="false", SECRET_KEY=PRODUCTION_SECRET_KEY, REDIS_URL=None)
    filled = subprocess.run(
        [PYTHON, "-c", FILL_STUDIES], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=True
    )
    subprocess.run(
        [PYTHON, "manage.py", "run_worker", "--burst"], cwd=REPO_ROOT, env=env, capture_output=True, check=True
    )
    return filled.stdout.strip().splitlines()[-1]


def mapped_heavy_modules(pid: int) -> list[str]:
    """Which of HEAVY_MODULES the process has loaded: their compiled libraries in its memory map."""
    with open(f"/proc/{pid}/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/site-packages/" in line}
    return sorted({name for name in HEAVY_MODULES for path in paths if f"/site-packages/{name}/" in path})


def serve_once(var_dir: Path, session: str) -> dict:
    server = AppServer.production(None, var_dir, processes=1, TASK_WORKERS="0", EXPIRY_SECONDS="0")
    server.launch()
    try:
        # uvicorn loads the application before it binds the port: listening means config.asgi is imported.
        if not port_accepts(server.port, 180):
            raise RuntimeError(f"bin/serve did not listen on port {server.port}: {server.log_tail()}")
        web_process = uvicorn_process(server)
        started = rss_mb(web_process)
        statuses = {path: get(server.port, path)[0] for path in PAGES}
        if statuses[PAGES[0]] != 200 or statuses[PAGES[1]] >= 500:
            raise RuntimeError(f"unexpected answers {statuses}: {server.log_tail()}")
        first_request = rss_mb(web_process)
        timer = time.perf_counter()
        reports = [get(server.port, path, session) for path in REPORTS[:1]]
        report_seconds = time.perf_counter() - timer
        reports += [get(server.port, path, session) for path in REPORTS[1:]]
        # The job's figures are on the page (its heading names their Krippendorff level).
        if any(status != 200 or "Krippendorff level" not in page for status, page in reports):
            raise RuntimeError(f"the report pages answered {[status for status, _ in reports]} without figures")
        return {
            "started": started,
            "first_request": first_request,
            "report_seconds": report_seconds,
            "after_report": rss_mb(web_process),
            "report_heavy": mapped_heavy_modules(web_process),
        }
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nli-bench-startup-") as folder:
        var_dir = Path(folder)
        migrate(None, var_dir)
        session = fill_studies(var_dir)
        imports = []
        for run in range(args.repeat):
            imports.append(import_once(var_dir))
            log(f"import {run + 1}: {imports[-1]['seconds']:.3f} s")
        servers = []
        for run in range(args.repeat):
            started = time.perf_counter()
            servers.append(serve_once(var_dir, session))
            log(
                f"server {run + 1}: {servers[-1]['first_request']:.1f} MB after the first request "
                f"({time.perf_counter() - started:.1f} s)"
            )
    figures = {
        "repeat": args.repeat,
        "import_asgi_s": round(statistics.median(run["seconds"] for run in imports), 3),
        "import_asgi_max_s": round(max(run["seconds"] for run in imports), 3),
        "rss_started_mb": round(statistics.median(run["started"] for run in servers), 1),
        "rss_first_request_mb": round(statistics.median(run["first_request"] for run in servers), 1),
        "rss_first_request_max_mb": round(max(run["first_request"] for run in servers), 1),
        "heavy_modules": imports[-1]["heavy"],
        "report_first_s": round(statistics.median(run["report_seconds"] for run in servers), 3),
        "rss_after_report_mb": round(statistics.median(run["after_report"] for run in servers), 1),
        "report_heavy_modules": sorted({name for run in servers for name in run["report_heavy"]}),
        "goal_import_s": GOAL_IMPORT_S,
        "goal_rss_mb": GOAL_RSS_MB,
        "load_average": load_average(),
    }
    emit(figures, args.json)


if __name__ == "__main__":
    main()
