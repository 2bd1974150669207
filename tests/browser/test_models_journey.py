"""An author exports a slider study's gold, trains a UNLI model on it from /models/ by keyboard alone, watches
the job's progress move on its page, finds the model in the checkpoint registry and evaluates it on the study
(the study evaluation's form, the checkpoint ticked), whose result counts where the reference values come
from; another author sees neither job. The server's models folder holds a tiny encoder (the
browser conftest builds it), so training takes seconds; the pages are checked at 1280 and 360 px."""

import csv
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import (
    create_study,
    import_through_preview,
    manage,
    no_sideways_scroll,
    save_screenshot,
    too_wide,
)
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.browser
SLUG = "journey-unli-training"
ROWS = 600  # enough training steps (ROWS / batch 4 x 4 epochs) to see the job running before it ends


def tab_to(page, selector: str, presses: int = 80) -> None:
    """Press Tab until the focused element matches `selector`."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        if page.evaluate("(selector) => document.activeElement.matches(selector)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def type_into(page, selector: str, text: str) -> None:
    """Tab to a field and replace its value by typing (a select picks the option whose label starts so)."""
    tab_to(page, selector)
    if page.evaluate("() => document.activeElement.tagName") != "SELECT":
        page.keyboard.press("Control+A")
    page.keyboard.type(text)


def test_an_author_trains_a_unli_model_from_a_studys_gold_and_evaluates_it(sign_in, demo_server, tmp_path):
    base = demo_server["url"]
    subset = tmp_path / "usnli-subset.csv"
    with open(SHARED_DATA / "u-snli" / "dev.csv", newline="") as source, open(subset, "w", newline="") as out:
        reader = csv.reader(source)
        writer = csv.writer(out)
        for index, row in enumerate(reader):
            if index > ROWS:
                break
            writer.writerow(row)
    manage(demo_server, ["create_user", "journey-author2", "--role", "author", "--password", "journey-author2-pass"])
    author = sign_in("author", 1280, 900)
    create_study(author, base, "unli_slider", {"slug": SLUG, "title": "Journey: training on a study's gold"})
    import_through_preview(author, "usnli", subset)
    expect(author.locator(".message.success")).to_contain_text(f"Imported {ROWS} examples")

    # The study's gold, as the author exports it.
    with author.expect_download() as download:
        author.get_by_role("button", name="usnli", exact=True).click()
    with open(download.value.path(), newline="") as handle:
        exported = list(csv.DictReader(handle))
    assert len(exported) == ROWS and all(row["unli"] for row in exported)

    # /models/, the training form, by keyboard: the study for both files, the tiny encoder, tiny settings.
    author.goto(f"{base}/models/")
    tab_to(author, "a[href='?job=train_unli']")
    author.keyboard.press("Enter")
    author.wait_for_url(f"{base}/models/?job=train_unli")
    expect(author.get_by_role("heading", name="Train a UNLI model")).to_be_visible()
    type_into(author, "#id_base", "tiny-encoder")
    type_into(author, "#id_train_study", SLUG)
    type_into(author, "#id_eval_study", SLUG)
    assert [author.input_value(f"#id_{name}") for name in ("base", "train_study", "eval_study")] == [
        "shared/tiny-encoder",
        SLUG,
        SLUG,
    ]
    assert str(demo_server["var"]) not in author.content()  # checkpoints are named, never shown as server paths
    for name, value in (("epochs", "4"), ("batch_size", "4"), ("lr", "0.001"), ("max_length", "32")):
        type_into(author, f"#id_{name}", value)
    tab_to(author, "#id_pretrain")
    author.keyboard.press("Space")  # no surrogate pre-training: the tiny encoder knows no SNLI anyway
    assert not author.is_checked("#id_pretrain")
    save_screenshot(author, "models-journey-train-form")
    tab_to(author, "button[type=submit]")
    author.keyboard.press("Enter")
    author.wait_for_url(f"{base}/jobs/*/")
    training_url = author.url
    expect(author.get_by_role("heading", name="UNLI training")).to_be_visible()

    # Live: the status fragment (polled) shows the job running part of the way, then the page shows it done.
    author.wait_for_function(
        "() => { const state = document.querySelector('#job-state'), bar = document.querySelector('#job-status progress');"
        " return state && bar && state.textContent === 'Running' && bar.value > 0 && bar.value < 100; }",
        timeout=60000,
    )
    expect(author.locator("#job-state")).to_have_text("Done", timeout=120000)
    expect(author.locator("main")).to_contain_text("pearson")
    expect(author.locator("main")).to_contain_text(f"study {SLUG}")
    expect(author.get_by_role("link", name="Download the output")).to_be_visible()
    save_screenshot(author, "models-journey-trained")
    job_id = training_url.rstrip("/").rsplit("/", 1)[-1]

    # The registry lists the model; "Evaluate on the study" opens the study evaluation with the model ticked.
    author.goto(f"{base}/models/")
    tab_to(author, "a[href='/models/checkpoints/']")
    author.keyboard.press("Enter")
    author.wait_for_url(f"{base}/models/checkpoints/")
    card = author.locator("section.card", has=author.get_by_role("heading", name=f"job {job_id}: model"))
    expect(card).to_contain_text("0: probability")
    expect(card.get_by_role("link", name=f"trained by job {job_id}")).to_be_visible()
    select_id = card.locator("select[name=study]").get_attribute("id")
    type_into(author, f"#{select_id}", SLUG)
    tab_to(author, f"#{select_id} ~ button")
    author.keyboard.press("Enter")
    author.wait_for_url(f"{base}/evaluation/studies/{SLUG}/?model=*")
    expect(author.get_by_label(f"job {job_id}: model (unli)")).to_be_checked()
    tab_to(author, "form button[type=submit]")
    author.keyboard.press("Enter")
    author.wait_for_url(f"{base}/jobs/*/")
    evaluation_url = author.url
    expect(author.locator("#job-state")).to_have_text("Done", timeout=120000)
    expect(author.locator("main")).to_contain_text("Study evaluation")
    # Where the reference values come from: every one imported with the study's rows.
    expect(
        author.locator("tr", has=author.locator("th", has_text=re.compile("^reference values imported$"))).locator("td")
    ).to_have_text(str(ROWS))
    expect(author.get_by_role("heading", name="Models against the study's reference")).to_be_visible()
    expect(author.locator("section[aria-labelledby=headline-h] thead")).to_contain_text("pearson")
    save_screenshot(author, "models-journey-evaluated")
    author.goto(f"{base}/models/checkpoints/")
    expect(card).to_contain_text(f"#{evaluation_url.rstrip('/').rsplit('/', 1)[-1]} Study evaluation")

    # At 360 px nothing scrolls sideways.
    narrow = sign_in("author", 360, 740)
    for url in (f"{base}/models/?job=train_unli", f"{base}/models/checkpoints/", training_url, evaluation_url):
        narrow.goto(url)
        assert no_sideways_scroll(narrow), (narrow.url, too_wide(narrow))
    save_screenshot(narrow, "models-journey-360")

    # Another author: the jobs are not there for them, nor is the trained model or the study.
    other = sign_in("journey-author2", password="journey-author2-pass")
    for url in (training_url, evaluation_url, f"{training_url}output/"):
        assert other.goto(url).status == 404, url
    other.goto(f"{base}/models/checkpoints/")
    expect(other.locator("main")).not_to_contain_text(f"job {job_id}: model")
    other.goto(f"{base}/models/?job=train_unli")
    expect(other.locator("#id_train_study option")).to_have_count(1)  # only the empty choice: no study of theirs
    expect(other.locator("main")).not_to_contain_text(SLUG)
