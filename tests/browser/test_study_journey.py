"""An author runs a paid slider study in the browser from creation to close, with no command line or admin
step: create, import with preview, gold checks, qualification, members, publish; a worker is refused, admitted,
qualifies and works; the dashboard follows live; the author blocks the (speeding) worker, pauses, exports, closes."""

import csv

import pytest
from playwright.sync_api import expect

from annotation.tasktypes.unli_slider import probability_to_position
from tests.browser.conftest import create_study, import_through_preview, save_screenshot
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.browser
SLUG = "journey-paid-slider"
DEV = SHARED_DATA / "u-snli" / "dev.csv"
# The qualification's references, and the probabilities the worker answers with (close, not equal).
REFERENCES = [0.05, 0.5, 0.95]
ANSWERS = [0.08, 0.45, 0.9]


def set_sliders(page, probabilities):
    # After the load event: a slider moved before annotate.js has run keeps its answer unset, and the page
    # is then refused as "not set yet" (a page shown by a redirect can be visible before its deferred scripts).
    page.wait_for_load_state()
    sliders = page.locator("input[type=range]")
    for index in range(sliders.count()):
        position = probability_to_position(probabilities[index % len(probabilities)])
        sliders.nth(index).evaluate(
            "(slider, value) => { slider.value = value; slider.dispatchEvent(new Event('input', {bubbles: true})); "
            "slider.dispatchEvent(new Event('change', {bubbles: true})); }",
            position,
        )


def test_an_author_runs_a_paid_slider_study_in_the_browser(sign_in, demo_server):
    base = demo_server["url"]
    author = sign_in("author")
    create_study(
        author,
        base,
        "unli_slider",
        {
            "slug": SLUG,
            "title": "Journey: a paid slider study",
            "items_per_page": "2",
            "redundancy": "1",
            "speeder_seconds": "3600",
            "completion_code": "PAID-JOURNEY",
        },
        {"audience": "members"},
    )
    expect(author.locator("#study-status")).to_have_text("Draft")

    # The whole U-SNLI dev file, through its preview.
    import_through_preview(author, "usnli", DEV)
    expect(author.locator(".message.success")).to_contain_text("Imported 3040 examples (3040 new items")

    # Two items become hidden gold checks from their item pages.
    for row in (0, 1):
        author.goto(f"{base}/projects/{SLUG}/")
        author.locator("#item-table tbody tr").nth(row).locator("a").first.click()
        author.fill("#gold-reference", "0.9")
        author.get_by_role("button", name="Make it a gold check").click()
        expect(author.locator(".message.success")).to_contain_text("gold check")
    author.goto(f"{base}/projects/{SLUG}/items/?show=gold")
    expect(author.locator("tbody tr")).to_have_count(2)

    # A qualification test of three items with their references, and its rules.
    author.goto(f"{base}/projects/{SLUG}/qualification/")
    for reference in REFERENCES:
        form = author.locator("section[aria-labelledby=candidates-h] tbody tr").nth(10).locator("form")
        form.locator("input[name=reference]").fill(str(reference))
        form.get_by_role("button", name="Copy into the test").click()
        expect(author.locator(".message.success")).to_contain_text("copied into the test")
    author.fill("#rule-min_pearson", "0.5")
    author.fill("#rule-min_spearman", "0.4")
    author.get_by_role("button", name="Save rules").click()
    expect(author.locator("section[aria-labelledby=test-items-h] tbody tr")).to_have_count(3)

    author.goto(f"{base}/projects/{SLUG}/")
    author.get_by_role("button", name="Publish").click()
    expect(author.locator("#study-status")).to_have_text("Published")

    # A worker who is not a member does not even see the study.
    worker = sign_in("worker2", 360, 740)
    assert worker.goto(f"{base}/work/{SLUG}/").status == 404

    author.goto(f"{base}/projects/{SLUG}/settings/")
    author.fill("#member-names", "worker2")
    author.get_by_role("button", name="Admit").click()
    expect(author.locator(".message.success")).to_contain_text("1 member admitted")

    # Admitted: the qualification first, then two pages of work.
    worker.goto(f"{base}/work/{SLUG}/")
    worker.wait_for_url(f"{base}/qualify/{SLUG}/")
    set_sliders(worker, ANSWERS)
    worker.get_by_role("button", name="Submit answers").click()
    worker.wait_for_url(f"{base}/work/{SLUG}/")

    author.goto(f"{base}/projects/{SLUG}/")
    expect(author.locator("#live-state")).to_have_text("(live)")
    for page_number in (1, 2):
        set_sliders(worker, [0.3, 0.7])
        with worker.expect_navigation():  # page 1's "Saved" is still on screen until page 2's submit returns
            worker.get_by_role("button", name="Submit page").click()
        expect(worker.locator(".message.success")).to_contain_text("Saved")
        # The author's dashboard follows without a reload.
        expect(author.locator('#progress [data-key="annotations"]')).to_have_text(str(2 * page_number))
    expect(author.locator("#worker-figures")).to_contain_text("worker2")
    expect(author.locator("#worker-figures")).to_contain_text("speeder")
    save_screenshot(author, "journey-paid-study-dashboard")

    # The author blocks the speeding worker, who gets no new page.
    author.locator("#worker-figures").get_by_role("link", name="worker2").click()
    author.get_by_role("button", name="Block from this study").click()
    expect(author.locator(".message.success")).to_contain_text("blocked")
    assert worker.goto(f"{base}/work/{SLUG}/").status == 403

    # Pause, export the U-SNLI CSV, close.
    author.goto(f"{base}/projects/{SLUG}/")
    author.get_by_role("button", name="Pause").click()
    expect(author.locator("#study-status")).to_have_text("Paused")
    with author.expect_download() as download:
        author.get_by_role("button", name="usnli", exact=True).click()
    assert download.value.suggested_filename == f"{SLUG}-usnli.csv"
    with open(download.value.path(), newline="") as handle:
        exported = list(csv.DictReader(handle))
    assert len(exported) == 3040 - 2 and list(exported[0])[:6] == ["id", "pre", "hyp", "nli", "unli", "unli_source"]
    assert {row["unli_source"] for row in exported} == {"imported"}  # the 2 gold checks are not data
    author.get_by_role("button", name="Close").click()
    expect(author.get_by_role("heading", level=1)).to_have_text("Close this study?")
    expect(author.get_by_role("alert")).to_contain_text("pages in progress can no longer be submitted")
    author.get_by_role("button", name="Close the study").click()
    expect(author.locator("#study-status")).to_have_text("Closed")
