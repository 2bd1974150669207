"""A worker completes a page of each task type in headless Chromium, with the keyboard alone."""
import sqlite3

import pytest

from tests.browser.conftest import login

pytestmark = pytest.mark.browser


def stored_annotations(database, username: str, slug: str) -> int:
    with sqlite3.connect(database) as db:
        return db.execute(
            "SELECT COUNT(*) FROM annotation_annotation a JOIN auth_user u ON a.worker_id = u.id "
            "JOIN annotation_item i ON a.item_id = i.id JOIN annotation_project p ON i.project_id = p.id "
            "WHERE u.username = ? AND p.slug = ?",
            (username, slug),
        ).fetchone()[0]


def focus_in(page) -> str:
    return page.evaluate("() => { const f = document.activeElement.closest('fieldset.item'); return f ? f.dataset.item : ''; }")


def tab_into_next_item(page, current: str) -> str:
    for _ in range(12):
        page.keyboard.press("Tab")
        now = focus_in(page)
        if now and now != current:
            return now
    raise AssertionError("Tab did not reach the next item")


ANSWER_KEYS = {
    "demo-atoms": ["v", "i"],
    "demo-defeasible": ["1", "3", "5"],
    "demo-nli": ["e", "n", "c"],
}


@pytest.mark.parametrize("slug", ["demo-atoms", "demo-defeasible", "demo-nli", "demo-slider"])
def test_worker_completes_a_page_by_keyboard(page, demo_server, slug):
    base = demo_server["url"]
    login(page, base, "worker1", "demo-worker-pass")
    page.goto(f"{base}/work/{slug}/")
    items = page.locator("fieldset.item")
    count = items.count()
    assert count >= 1
    current = focus_in(page)
    assert current, "the first item should have focus"
    for index in range(count):
        if index:
            current = tab_into_next_item(page, current)
        if slug == "demo-slider":
            page.keyboard.press("Shift+ArrowRight")  # coarse step
            page.keyboard.press("ArrowLeft")  # fine step
            readout = page.locator(f"#readout-{current}").inner_text()
            assert "0.5" in readout or "1 in" in readout or "%" in readout
        else:
            keys = ANSWER_KEYS[slug]
            page.keyboard.press(keys[index % len(keys)])
    assert "All answered" in page.locator("#unanswered").inner_text()
    page.keyboard.press("Control+Enter")
    page.wait_for_selector(".message.success")
    assert stored_annotations(demo_server["database"], "worker1", slug) == count


def test_unanswered_slider_blocks_submit(page, demo_server):
    base = demo_server["url"]
    login(page, base, "worker2", "demo-worker-pass")
    page.goto(f"{base}/work/demo-slider/")
    page.keyboard.press("ArrowRight")  # answers only the first pair
    page.keyboard.press("Control+Enter")
    assert "still need an answer" in page.locator("#unanswered").inner_text()
    assert stored_annotations(demo_server["database"], "worker2", "demo-slider") == 0


def test_home_page_is_served_on_the_chosen_port(page, demo_server):
    page.goto(demo_server["url"] + "/")
    assert "NLI Studio" in page.title()
