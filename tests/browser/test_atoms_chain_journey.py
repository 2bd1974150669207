"""The atoms pipeline in the browser (issue 52, item 4): the demo's atom validity study, with its simulated
answers, sends its settled valid atoms to a new defeasible study; the author publishes it, two workers rate
its (premise, update, atom) items by keyboard (one on a phone-sized screen), sending again adds nothing, and
a tiny defeasible checkpoint is scored on the settled items from the study's page (the study evaluation)."""

import importlib.util
import json
import re
import sqlite3
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import REPO, assert_fits_and_is_accessible, focused_item, save_screenshot

pytestmark = pytest.mark.browser

SOURCE = "demo-atoms"
TITLE = "Journey: effects of the valid atoms"
TARGET = "journey-effects-of-the-valid-atoms"
PHONE = (360, 740)
JOB_WAIT_MS = 300_000  # a worker loads torch and runs the model on a loaded 2-core machine


def query(database, sql, *args):
    with sqlite3.connect(database) as db:
        return db.execute(sql, args).fetchall()


def settled_atoms(database) -> dict[str, list[tuple[str, str]]]:
    """The validity study's atom items by their settled label (adjudicated, else the aggregate; open and tied
    items under None), each as (atom, update)."""
    rows = query(
        database,
        "SELECT CASE WHEN i.status = 'open' THEN NULL ELSE json_extract(COALESCE(i.adjudicated, i.aggregate), '$') END,"
        ' a.text, e."update" FROM annotation_item i JOIN annotation_atom a ON i.atom_id = a.id'
        " JOIN annotation_example e ON i.example_id = e.id JOIN annotation_project p ON i.project_id = p.id"
        " WHERE p.slug = ? AND NOT i.is_gold",
        SOURCE,
    )
    by_label: dict = {}
    for label, atom, update in rows:
        by_label.setdefault(label, []).append((atom, update))
    return by_label


def tiny_defeasible(folder: Path) -> Path:
    """A tiny strengthener / weakener classifier from the models tests' builders (nothing fetched)."""
    spec = importlib.util.spec_from_file_location("tiny_checkpoints", REPO / "tests" / "models_backend" / "conftest.py")
    builders = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builders)
    model = folder / "tiny-defeasible"
    builders.build_bert_classifier(model, num_labels=2, id2label={0: "strengthener", 1: "weakener"})
    return model


def test_valid_atoms_go_on_to_a_defeasible_study_that_a_worker_rates(sign_in, demo_server, tmp_path):
    base, database = demo_server["url"], demo_server["database"]
    settled = settled_atoms(database)
    valid = settled.get("valid", [])
    assert valid, "the demo's simulated answers settle some atoms valid"

    author = sign_in("author", *PHONE)
    author.goto(f"{base}/projects/{SOURCE}/")
    state = author.locator("#atom-chain-state")
    expect(state).to_contain_text(f"{len(valid)} valid, {len(settled.get('invalid', []))} invalid")
    expect(state).to_contain_text(f"{len(settled.get(None, []))} not settled yet")
    assert_fits_and_is_accessible(author, PHONE[0], "#atom-chain")

    # A new study, by keyboard: the title typed in, Enter sends.
    author.select_option("#atom-chain-to", "")
    author.fill("#atom-chain-title", "")
    author.focus("#atom-chain-title")
    author.keyboard.type(TITLE)
    with author.expect_navigation():
        author.keyboard.press("Enter")
    expect(author.locator(".message.success")).to_contain_text(
        f"{len(valid)} new valid atom{'s' * (len(valid) != 1)} sent to {TARGET} (0 sent before)"
    )
    expect(author.locator("#atom-chain-past")).to_contain_text(f"{len(valid)} sent to {TITLE}")
    save_screenshot(author, "atoms-chain-sent")

    # The defeasible study holds one item per valid atom; a draft until its author publishes it.
    author.locator("#atom-chain-past").get_by_role("link", name=TITLE).click()
    author.wait_for_url(f"{base}/projects/{TARGET}/")
    expect(author.locator("#progress [data-key=items]")).to_have_text(str(len(valid)))
    expect(author.locator("#study-status")).to_have_text("Draft")
    with author.expect_navigation():
        author.get_by_role("button", name="Publish").click()
    expect(author.locator("#study-status")).to_have_text("Published")

    # A worker rates a page of them by keyboard on a phone: each item shows the update and the atom sent.
    worker = sign_in("worker3", *PHONE)
    worker.goto(f"{base}/work/{TARGET}/")
    items = worker.locator("fieldset.item").evaluate_all("(all) => all.map(f => f.dataset.item)")
    assert 0 < len(items) <= len(valid)
    shown = set(zip(worker.locator("dd.atom").all_inner_texts(), worker.locator("dd.update").all_inner_texts()))
    assert shown <= set(valid) and len(shown) == len(items)
    assert_fits_and_is_accessible(worker, PHONE[0])
    for item in items:
        assert focused_item(worker) == item
        worker.keyboard.press("4")  # +1, strengthens: the page moves on by itself
    expect(worker.locator("#review")).to_be_visible()
    with worker.expect_navigation():
        worker.keyboard.press("Enter")
    expect(worker.locator(".message.success")).to_contain_text("Saved")
    stored = query(
        database,
        "SELECT a.item_id, a.value FROM annotation_annotation a JOIN annotation_item i ON a.item_id = i.id"
        " JOIN annotation_project p ON i.project_id = p.id JOIN auth_user u ON a.worker_id = u.id"
        " WHERE p.slug = ? AND u.username = 'worker3'",
        TARGET,
    )
    assert sorted(str(item) for item, _ in stored) == sorted(items)
    assert {value for _, value in stored} == {"1"}
    # A second worker agrees: the study's redundancy of 2 settles each item at +1.
    second = sign_in("worker2")
    second.goto(f"{base}/work/{TARGET}/")
    expect(second.locator("fieldset.item")).to_have_count(len(items))
    for _ in items:
        second.keyboard.press("4")
    with second.expect_navigation():
        second.keyboard.press("Enter")
    expect(second.locator(".message.success")).to_contain_text("Saved")

    # Sending again (the last target is chosen already) adds nothing and keeps the answers.
    author.goto(f"{base}/projects/{SOURCE}/")
    expect(author.locator("#atom-chain-to")).to_have_value(TARGET)
    with author.expect_navigation():
        author.get_by_role("button", name="Send the valid atoms").click()
    expect(author.locator(".message.success")).to_contain_text(
        f"0 new valid atoms sent to {TARGET} ({len(valid)} sent before)"
    )
    counts = query(
        database,
        "SELECT COUNT(DISTINCT i.id), COUNT(a.id) FROM annotation_item i JOIN annotation_project p ON i.project_id = p.id"
        " LEFT JOIN annotation_annotation a ON a.item_id = i.id WHERE p.slug = ?",
        TARGET,
    )
    assert counts == [(len(valid), 2 * len(items))]

    # The end of the chain, in the browser: a tiny defeasible checkpoint (built into the server's models
    # folder) scored on the study's settled items from the study's page.
    tiny_defeasible(demo_server["var"] / "models")
    author.goto(f"{base}/projects/{TARGET}/")
    author.get_by_role("link", name="Evaluate models on this study").click()
    author.wait_for_url(f"{base}/evaluation/studies/{TARGET}/")
    author.locator("input[name=models][value='shared/tiny-defeasible']").check()
    author.fill("#id_bootstrap", "200")
    author.get_by_role("button", name="Evaluate").click()
    author.wait_for_url(re.compile(rf"{base}/jobs/\d+/$"))
    expect(author.get_by_role("heading", name="Models against the study's reference")).to_be_visible(
        timeout=JOB_WAIT_MS
    )
    job = int(author.url.rstrip("/").rsplit("/", 1)[1])
    result = json.loads(query(database, "SELECT result FROM jobs_job WHERE id = ?", job)[0][0])
    settled_examples = query(
        database,
        "SELECT COUNT(DISTINCT i.example_id) FROM annotation_item i JOIN annotation_project p ON i.project_id = p.id"
        " WHERE p.slug = ? AND i.status = 'done'",
        TARGET,
    )[0][0]
    assert result["reference"]["items"] == settled_examples > 0
    figures = result["models"]["tiny-defeasible"]
    assert all(0 <= figures[name] <= 1 for name in ("full_accuracy", "atom_accuracy"))
