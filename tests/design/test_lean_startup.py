"""A web process loads no plotting, data-frame, statistics or model library at start: those cost about a
second and 100 MB per process, and only a report, an evaluation or a job needs them (benchmarks/startup.py
measures the time and memory)."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY_MODULES = ("numpy", "pandas", "scipy", "matplotlib", "sklearn", "torch", "transformers")


def test_setting_up_django_and_loading_the_urls_imports_no_heavy_library(tmp_path):
    # A fresh interpreter: this test process has imported everything the other tests use.
    probe = (
        "import json, sys, django; django.setup(); import config.urls, config.asgi; "
        f"print(json.dumps(sorted({{name.split('.')[0] for name in sys.modules}} & set({HEAVY_MODULES!r}))))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "NLI_STUDIO_VAR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_a_report_page_loads_no_statistics_library_into_the_web_process():
    """benchmarks/startup.py once: bin/serve in the production shape serves two studies' report pages, their
    figures computed beforehand by a task worker as in production; the page shows them and needs none of
    the heavy libraries (pandas and scipy came with the report's tables and its reasons panel)."""
    result = subprocess.run(
        [sys.executable, "benchmarks/startup.py", "--repeat", "1", "--json"],
        cwd=REPO,
        env={**os.environ, "DEBUG": "true"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["heavy_modules"] == [] and figures["report_heavy_modules"] == []
    assert figures["rss_after_report_mb"] > figures["rss_started_mb"] > 0
