"""The report's annotator models (worker reliability beside the agreement figures), computed by the report's
background job, at 1280 and 360 pixels."""

import pytest

from tests.browser.conftest import save_screenshot

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", [1280, 360])
def test_author_reads_worker_reliability_on_the_report(sign_in, demo_server, width):
    page = sign_in("author", width)
    page.goto(f"{demo_server['url']}/projects/demo-nli/report/")
    # The figures come from a background job: the page says it is computing them and reloads once they are
    # (the first width starts the job; the second finds them computed).
    section = page.locator("#annotator-models")
    section.wait_for(timeout=180_000)
    assert "from " in page.locator("#computed-at").inner_text()
    assert section.locator("h2").inner_text() == "Annotator models"
    # The demo study's simulated workers are rated by each model; each row links to the worker's page.
    rows = page.locator("#worker-reliability tbody tr")
    assert rows.count() >= 2
    assert page.locator("#worker-reliability thead th").all_inner_texts()[-3:] == ["Dawid-Skene", "MACE", "GLAD"]
    rows.first.locator("a").click()
    page.wait_for_url("**/workers/**")
    page.go_back()
    # The section fits the window; a table wider than the window scrolls in its own box.
    box = page.locator("#annotator-models").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
    scroller = page.locator("#worker-reliability").locator("xpath=..").bounding_box()
    assert scroller["x"] + scroller["width"] <= width, scroller
    save_screenshot(page, f"report-annotator-models-{width}")
