"""A worker completes a page of each task type in headless Chromium, with the keyboard alone, on a desktop
and on a phone-sized screen: answer (each key moves on to the next item), undo, reload mid-page (the draft
brings the answers back), review, send. Every worker page fits a 360 px screen and passes an axe-core scan."""

import json
import re
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import assert_fits_and_is_accessible, focused_item, save_screenshot

pytestmark = pytest.mark.browser

DESKTOP, PHONE = (1280, 900), (360, 740)
CHOICE_KEYS = {"demo-atoms": ["v", "i"], "demo-defeasible": ["1", "3", "5"], "demo-nli": ["e", "n", "c"]}
# The item's answer as the page holds it: a choice, a slider position, or the written sentences.
ANSWERS_JS = """() => Object.fromEntries(Array.from(document.querySelectorAll('fieldset.item')).map(f => {
  const radio = f.querySelector('input[type=radio]:checked'), hidden = f.querySelector('.slider-value');
  const reason = f.querySelector('.reason input');
  const value = radio ? radio.value : hidden ? hidden.value : Array.from(f.querySelectorAll('textarea')).map(b => b.value).join('|');
  return [f.dataset.item, reason && reason.value ? value + ' / ' + reason.value : value];
}))"""


def query(database, sql, *args):
    with sqlite3.connect(database) as db:
        return db.execute(sql, args).fetchall()


def stored_values(database, username: str, slug: str) -> dict[str, str]:
    rows = query(
        database,
        "SELECT a.item_id, a.value FROM annotation_annotation a JOIN auth_user u ON a.worker_id = u.id "
        "JOIN annotation_item i ON a.item_id = i.id JOIN annotation_project p ON i.project_id = p.id "
        "WHERE u.username = ? AND p.slug = ?",
        username,
        slug,
    )
    return {str(item): value for item, value in rows}


def focus_name(page) -> str:
    return page.evaluate(
        "() => document.activeElement.name || document.activeElement.id || document.activeElement.tagName"
    )


def answer_by_key(page, slug: str, index: int) -> None:
    """Answer the focused item; the page moves on by itself (a slider: arrows set it, Enter moves on)."""
    if slug == "demo-slider":
        page.keyboard.press("ArrowRight" if index % 2 else "Home")
        page.keyboard.press("Shift+ArrowRight")
        page.keyboard.press("Enter")
    else:
        keys = CHOICE_KEYS[slug]
        page.keyboard.press(keys[index % len(keys)])


def write(page, width: int, item: str, targets: str) -> None:
    """Type one sentence in each of the item's boxes named by `targets`; Enter moves to the next box."""
    for target in targets:
        assert focus_name(page) == f"value_{item}.{target}"
        page.keyboard.type(f"A person of screen {width} writes sentence {target} for item {item} today.")
        page.keyboard.press("Enter")


def wait_saved(page) -> None:
    expect(page.locator("#save-state")).to_have_text("Saved")


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280px", "360px"])
@pytest.mark.parametrize("slug", ["demo-atoms", "demo-defeasible", "demo-nli", "demo-slider", "demo-writing"])
def test_a_page_by_keyboard_with_undo_reload_and_review(sign_in, demo_server, slug, size):
    base, database = demo_server["url"], demo_server["database"]
    username = "worker1" if size == DESKTOP else "worker2"
    page = sign_in(username, *size)
    before = stored_values(database, username, slug)
    page.goto(f"{base}/work/{slug}/")
    items = page.locator("fieldset.item").evaluate_all("(all) => all.map(f => f.dataset.item)")
    assert items and focused_item(page) == items[0]
    assert re.fullmatch(r"\d\d:\d\d", page.locator("#countdown").inner_text())
    assert_fits_and_is_accessible(page, size[0])
    if slug == "demo-writing":
        page.keyboard.press("Escape")  # out of the first box, where ? would be text
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#keys-help")).to_be_hidden()
    if slug == "demo-writing":
        page.keyboard.press("Tab")  # from the item back into its first box

    if slug == "demo-writing":
        first = items[0]
        write(page, size[0], first, "en")
        page.keyboard.press("Escape")  # out of the box: keys are keys again
        page.keyboard.press("Backspace")  # undo: the item's sentences go
        assert page.evaluate(ANSWERS_JS)[first] == "||"
        assert focus_name(page) == f"value_{first}.e"
        write(page, size[0], first, "e")  # mid-page: one of three sentences
    else:
        answer_by_key(page, slug, 0)
        assert focused_item(page) == items[1], "an answer moves on to the next item"
        page.keyboard.press("Backspace")
        assert focused_item(page) == items[0], "undo goes back to the undone item"
        assert page.evaluate(ANSWERS_JS)[items[0]] == ""
        if slug == "demo-atoms":
            # The reason box takes keys only when asked for (R); Escape leaves it and keys answer again.
            page.keyboard.press("r")
            assert focus_name(page) == f"reason_{items[0]}"
            page.keyboard.type("vivid")
            assert page.evaluate(ANSWERS_JS)[items[0]] == " / vivid"
            page.keyboard.press("Escape")
        for index in range(len(items) - 1):
            assert focused_item(page) == items[index]
            answer_by_key(page, slug, index)
        assert focused_item(page) == items[-1]

    wait_saved(page)
    answers = page.evaluate(ANSWERS_JS)
    page.reload()
    expect(page.locator("#save-state")).to_have_text(re.compile("Your saved answers are back|Saved"))
    assert page.evaluate(ANSWERS_JS) == answers, "the reload kept every answer"

    if slug == "demo-writing":
        assert focused_item(page) == items[0]
        page.keyboard.press("Enter")  # from the written box on to the next, empty one
        write(page, size[0], items[0], "nc")
    else:
        assert focused_item(page) == items[-1], "the reload brings focus to the first open item"
        answer_by_key(page, slug, len(items) - 1)
    # Finished: focus is on the send button under the review, one line per item.
    expect(page.locator("#review")).to_be_visible()
    expect(page.locator("#review-list li")).to_have_count(len(items))
    assert focus_name(page) == "submit-page"
    assert_fits_and_is_accessible(page, size[0], "#review")  # the rest was scanned on arrival
    save_screenshot(page, f"worker-page-{slug}-{size[0]}")
    final = page.evaluate(ANSWERS_JS)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.locator(".message.success")).to_contain_text("Saved")
    stored = stored_values(database, username, slug)
    new = {item: value for item, value in stored.items() if item not in before}
    assert sorted(new) == sorted(items)
    if slug in CHOICE_KEYS:
        assert {item: value.strip('"') for item, value in new.items()} == {
            item: answer.split(" / ")[0] for item, answer in final.items()
        }


def test_an_untouched_slider_is_unset_and_blocks_submit(sign_in, demo_server):
    base = demo_server["url"]
    page = sign_in("worker3", *PHONE)
    page.goto(f"{base}/work/demo-slider/")
    expect(page.locator(".slider.unset")).to_have_count(page.locator("fieldset.item").count())
    first = focused_item(page)
    expect(page.locator(f"#readout-{first}")).to_have_text("not set yet")
    page.keyboard.press("End")
    expect(page.locator(f"#readout-{first}")).to_have_text("certain (100%)")
    page.keyboard.press("Home")
    page.keyboard.press("Shift+ArrowRight")  # a fine step from 0: rounded to what a hand can set
    expect(page.locator(f"#readout-{first}")).to_have_text(
        re.compile(r"about 1 in \d{1,3}(,000)+$|about 1 in \d\d?0+$")
    )
    page.keyboard.press("Control+Enter")
    expect(page.locator("#unanswered")).to_contain_text("4 item(s) still need an answer")
    assert focused_item(page) != first  # taken to the first unset slider
    assert page.locator(".message.success").count() == 0
    # The slider's track is the width of the screen, less the page's margins.
    track = page.locator(f"#slider-{first}").bounding_box()["width"]
    assert track >= 360 - 80, track


def test_the_countdown_warns_and_gives_more_time_once(sign_in, demo_server):
    base, database = demo_server["url"], demo_server["database"]
    page = sign_in("worker3", *DESKTOP)
    page.goto(f"{base}/work/demo-defeasible/")
    expect(page.locator("#time-warning")).to_be_hidden()
    # Four minutes left on this page.
    soon = (datetime.now(UTC) + timedelta(minutes=4)).strftime("%Y-%m-%d %H:%M:%S.%f")
    query(
        database,
        "UPDATE annotation_assignment SET expires_at = ? WHERE status = 'open' AND worker_id = "
        "(SELECT id FROM auth_user WHERE username = 'worker3') AND project_id = "
        "(SELECT id FROM annotation_project WHERE slug = 'demo-defeasible')",
        soon,
    )
    page.reload()
    expect(page.locator("#time-warning")).to_be_visible()
    assert re.fullmatch(r"0[34]:\d\d", page.locator("#countdown").inner_text())
    page.locator("#more-time").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#time-warning")).to_be_hidden()
    expect(page.locator("#more-time")).to_be_hidden()
    assert int(page.locator("#countdown").inner_text().split(":")[0]) >= 30
    page.reload()
    expect(page.locator("#more-time")).to_be_hidden()  # once per page


def test_answers_survive_a_lost_connection_and_a_reload(sign_in, demo_server):
    base, database = demo_server["url"], demo_server["database"]
    page = sign_in("worker3", *PHONE)
    page.route("**/draft/", lambda route: route.abort())  # the network is gone
    page.goto(f"{base}/work/demo-nli/")
    first = focused_item(page)
    page.keyboard.press("e")
    page.keyboard.press("c")
    expect(page.locator("#save-state")).to_contain_text("Not saved to the server yet")
    answers = page.evaluate(ANSWERS_JS)
    page.unroute("**/draft/")  # back online
    page.reload()
    assert page.evaluate(ANSWERS_JS) == answers, "the browser kept what the server never got"
    wait_saved(page)  # and hands it to the server once it can
    ((data,),) = query(
        database,
        "SELECT d.data FROM annotation_pagedraft d JOIN annotation_assignment a ON "
        "d.assignment_id = a.id JOIN auth_user u ON a.worker_id = u.id WHERE u.username = 'worker3' "
        "AND a.status = 'open' AND a.project_id = (SELECT id FROM annotation_project WHERE slug = 'demo-nli')",
    )
    assert json.loads(data)[first]["value"] == "e"


def test_time_while_the_tab_is_hidden_is_not_counted(sign_in, demo_server):
    base, database = demo_server["url"], demo_server["database"]
    visibility = (
        "() => { Object.defineProperty(document, 'visibilityState', {value: '%s', configurable: true}); "
        "document.dispatchEvent(new Event('visibilitychange')); }"
    )
    page = sign_in("worker3", *DESKTOP)
    page.goto(f"{base}/work/demo-atoms/")
    first = focused_item(page)
    page.evaluate(visibility % "hidden")
    page.wait_for_timeout(3000)  # the worker is in another tab
    page.evaluate(visibility % "visible")
    page.keyboard.press("v")
    since_load = page.evaluate("() => performance.now()") / 1000
    for _ in range(page.locator("fieldset.item").count() - 1):
        page.keyboard.press("i")
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")
    ((seconds,),) = query(
        database,
        "SELECT seconds_spent FROM annotation_annotation WHERE item_id = ? AND worker_id = "
        "(SELECT id FROM auth_user WHERE username = 'worker3')",
        int(first),
    )
    assert 0 < seconds <= since_load - 2.9, (seconds, since_load)


def test_the_qualification_test_fits_a_phone(sign_in, demo_server):
    base = demo_server["url"]
    page = sign_in("worker3", *PHONE)
    page.goto(f"{base}/qualify/demo-paid/")
    expect(page.locator("fieldset.item").first).to_be_visible()
    assert_fits_and_is_accessible(page, PHONE[0])


def test_home_page_is_served_on_the_chosen_port(page, demo_server):
    page.goto(demo_server["url"] + "/")
    assert "NLI Studio" in page.title()
