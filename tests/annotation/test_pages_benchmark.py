"""benchmarks/pages.py at a small size, so that it keeps running as the pages change (issue 54, item 4): every
page answers, and each gets its p50 and p95."""

import argparse
from pathlib import Path

import pytest

from tests.conftest import IMMEDIATE_TASKS

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.django_db
def test_the_pages_benchmark_times_every_page_at_a_small_size(settings, monkeypatch):
    from annotation.models import Project
    from annotation.services.analysis import annotator_models, report_job
    from annotation.services.crowd.pay import median_page_seconds

    settings.TASKS = IMMEDIATE_TASKS  # as the benchmark runs it: the report's job inside the first request
    monkeypatch.setattr(report_job, "REPORT_BOOTSTRAP", 20)
    # MACE and GLAD take tens of seconds however few the answers: the job and the API fit the fast methods.
    monkeypatch.setattr(report_job, "JOB_MODEL_ANSWERS", 0)
    monkeypatch.setattr(annotator_models, "INTERACTIVE_ANSWERS", 0)
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import pages

    args = argparse.Namespace(items=200, answers=400, workers=4, label_items=20, repeat=2)
    figures = pages.measure(args)

    assert figures["answers"] == 400 and figures["label_answers"] == 100
    timed = {key.removesuffix("_p95_ms") for key in figures if key.endswith("_p95_ms")}
    assert timed == {*pages.AUTHOR_PAGES, "work_page", "api_claim", "api_submit", "worker_home"}
    assert all(figures[f"{name}_p50_ms"] <= figures[f"{name}_p95_ms"] for name in timed)
    assert figures["report_job_s"] > 0 and figures["label_report_job_s"] > 0
    # The study's pages are timed as a real study's (20-200 s each), so the dashboard's median reads them.
    median, timed = median_page_seconds(Project.objects.get(slug=pages.SLUG))
    assert timed > 80 and 20 <= median <= 200
