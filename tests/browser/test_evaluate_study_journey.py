"""An author evaluates two studies with two tiny checkpoints each, from the study page (issue 52, items 1-2):
a defeasible study and a 3-way label study, both with the demo's simulated answers. "Evaluate" with both
models starts one job; its page shows the reference's sources, each model's figures, the models compared
with paired bootstrap intervals and a plot per metric, and the LaTeX table downloads. The checkpoints are
built into the demo server's models folder by this test (tiny, no downloads); the form and the result are
checked at 360 px."""

import importlib.util
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import REPO, no_sideways_scroll, save_screenshot, too_wide

pytestmark = pytest.mark.browser
JOB_WAIT_MS = 300_000  # a worker loads torch and runs two models on a loaded 2-core machine


def build_checkpoints(folder):
    spec = importlib.util.spec_from_file_location("tiny_checkpoints", REPO / "tests" / "models_backend" / "conftest.py")
    builders = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builders)
    updates = {0: "strengthener", 1: "weakener", 2: "neutral"}
    for name, labels, seed in (
        ("journey-nli-a", None, 1),
        ("journey-nli-b", None, 2),
        ("journey-defeasible-a", updates, 3),
        ("journey-defeasible-b", updates, 4),
    ):
        if not (folder / name).is_dir():
            builders.build_bert_classifier(folder / name, id2label=labels, seed=seed)


def evaluate(author, base, slug, models):
    """From the study's page to a finished evaluation's page, with `models` ticked."""
    author.goto(f"{base}/projects/{slug}/")
    author.get_by_role("link", name="Evaluate models on this study").click()
    author.wait_for_url(f"{base}/evaluation/studies/{slug}/")
    for name in models:
        author.locator(f"input[name=models][value='shared/{name}']").check()
    author.fill("#id_bootstrap", "200")
    author.get_by_role("button", name="Evaluate").click()
    author.wait_for_url(re.compile(rf"{base}/jobs/\d+/$"))
    expect(author.get_by_role("heading", name="Models compared (paired bootstrap)")).to_be_visible(timeout=JOB_WAIT_MS)
    return int(author.url.rstrip("/").rsplit("/", 1)[1])


def comparison_rows(author):
    table = author.locator("#model-comparison table")
    return [[cell.inner_text() for cell in row.locator("td").all()] for row in table.locator("tbody tr").all()]


def test_two_checkpoints_are_evaluated_and_compared_on_two_studies(sign_in, demo_server, tmp_path):
    base = demo_server["url"]
    build_checkpoints(demo_server["var"] / "models")
    author = sign_in("author", 1280, 900)

    job = evaluate(author, base, "demo-defeasible", ["journey-defeasible-a", "journey-defeasible-b"])
    expect(author.get_by_role("heading", name="Models against the study's reference")).to_be_visible()
    expect(author.locator("body")).to_contain_text("reference values collected")
    rows = comparison_rows(author)
    assert {row[0] for row in rows} == {"full_accuracy", "atom_accuracy", "critical_atom_accuracy"}
    assert all(re.fullmatch(r"\[.*, .*\]", row[3]) for row in rows)  # every estimate with its interval
    assert sum(row[1].endswith("(best)") for row in rows if row[0] == "full_accuracy") == 1
    assert author.locator("#model-comparison svg").count() == 3  # a plot per metric
    with author.expect_download() as download:
        author.get_by_role("link", name="Download tex").click()
    latex = open(download.value.path(), encoding="utf-8").read()
    assert "\\begin{tabular}" in latex and "journey-defeasible-a" in latex
    save_screenshot(author, "evaluate-study-defeasible")

    # The study page links the evaluation.
    author.goto(f"{base}/projects/demo-defeasible/")
    expect(author.locator(f"a[href='/jobs/{job}/']")).to_be_visible()

    label_job = evaluate(author, base, "demo-nli", ["journey-nli-a", "journey-nli-b"])
    rows = comparison_rows(author)
    assert {row[0] for row in rows} == {"jsd", "kl", "majority_acc", "old_acc"}
    with author.expect_download() as download:
        author.get_by_role("link", name="Download tex").click()
    assert "journey-nli-b" in open(download.value.path(), encoding="utf-8").read()

    # The form and the result at a phone's width: no sideways scrolling (wide tables scroll in their box).
    phone = sign_in("author", 360, 800)
    for path in ("/evaluation/studies/demo-nli/", f"/jobs/{label_job}/"):
        phone.goto(f"{base}{path}")
        assert no_sideways_scroll(phone), (path, too_wide(phone))
