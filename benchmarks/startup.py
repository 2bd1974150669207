"""Benchmark: what a web process costs before it has done any work: the import time of the ASGI
application and the resident memory of one web process after its first request.

Every figure is taken in fresh processes, --repeat times, and the median is printed:

  import_asgi_s         seconds `import config.asgi` takes in a fresh interpreter (it sets Django up and
                        builds the ASGI application, as a uvicorn process does at start), measured inside
                        the child so that the interpreter's own start is left out
  rss_started_mb        VmRSS of the web process of bin/serve once it listens (the application loaded)
  rss_first_request_mb  VmRSS of the same process after GET /accounts/login/ (the first request also loads
                        the URLconf, every view module and the templates of the page) and GET /api/projects/

The server is bin/serve in the production shape (DEBUG off, DEMO=0, no task worker, no expiry loop) with
one uvicorn process, on a SQLite database in a temporary NLI_STUDIO_VAR folder migrated once beforehand.
With one process uvicorn serves in its own process, so the web process is the one running uvicorn.
heavy_modules lists which of pandas, scipy, matplotlib, sklearn, torch and transformers `import
config.asgi` followed by `import config.urls` loads: none is needed until a report, an evaluation or a
job asks for it.

Goal: import_asgi_s < 0.5 s and rss_first_request_mb < 150 MB.

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


def get(port: int, path: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def serve_once(var_dir: Path) -> dict:
    server = AppServer.production(None, var_dir, processes=1, TASK_WORKERS="0", EXPIRY_SECONDS="0")
    server.launch()
    try:
        # uvicorn loads the application before it binds the port: listening means config.asgi is imported.
        if not port_accepts(server.port, 180):
            raise RuntimeError(f"bin/serve did not listen on port {server.port}: {server.log_tail()}")
        web_process = uvicorn_process(server)
        started = rss_mb(web_process)
        statuses = {path: get(server.port, path) for path in PAGES}
        if statuses[PAGES[0]] != 200 or statuses[PAGES[1]] >= 500:
            raise RuntimeError(f"unexpected answers {statuses}: {server.log_tail()}")
        return {"started": started, "first_request": rss_mb(web_process)}
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
        imports = []
        for run in range(args.repeat):
            imports.append(import_once(var_dir))
            log(f"import {run + 1}: {imports[-1]['seconds']:.3f} s")
        servers = []
        for run in range(args.repeat):
            started = time.perf_counter()
            servers.append(serve_once(var_dir))
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
        "goal_import_s": GOAL_IMPORT_S,
        "goal_rss_mb": GOAL_RSS_MB,
        "load_average": load_average(),
    }
    emit(figures, args.json)


if __name__ == "__main__":
    main()
