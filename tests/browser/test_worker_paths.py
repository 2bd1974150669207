"""A Prolific participant's whole path at 360 px, by keyboard: the qualification page with the author's
instructions, a failed attempt whose feedback fits the screen and says what failed, a passed one, two pages
of work without a premature "finish", and the end page without a stale message. No worker page scrolls
sideways and every link is a tap target of 24 px at least. Then the slider's ticks and the sticky clock, and
the dashboard's console."""

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import manage, no_sideways_scroll, save_screenshot, too_wide
from tests.browser.test_journeys import answer_page, submit_by_keyboard

pytestmark = pytest.mark.browser
STUDY = "paths-paid"
ROWS = [
    {"id": f"p{i}", "premise": "A man paints a fence on a sunny morning.", "hypothesis": hypothesis}
    for i, hypothesis in enumerate(
        [
            "Someone is outside.",
            "The fence is white.",
            "The man is asleep.",
            "A person works.",
            "The man is a painter by trade.",
            "It is night.",
        ]
    )
]
QUALIFICATION = [
    {"premise": "A girl flies a kite on a windy beach.", "hypothesis": "Someone is outside.", "reference": "e"},
    {
        "premise": "A girl flies a kite on a windy beach with her grandfather, who built the kite for her last summer.",
        "hypothesis": "The kite is the girl's first one and she has never flown a kite before today.",
        "reference": "n",
    },
]
SMALLEST_TAP = 24  # px: WCAG 2.5.8's target size


def fits(page, name: str) -> None:
    assert no_sideways_scroll(page), f"{name} scrolls sideways: {too_wide(page)}"
    small = page.evaluate(
        """(smallest) => [...document.querySelectorAll("main a, main button")]
        .filter(el => el.offsetParent !== null && el.getBoundingClientRect().height < smallest)
        .map(el => el.textContent.trim().slice(0, 40) + " " + Math.round(el.getBoundingClientRect().height))""",
        SMALLEST_TAP,
    )
    assert not small, f"{name}: tap targets under {SMALLEST_TAP} px: {small}"
    save_screenshot(page, f"paths-{name}-360")


@pytest.fixture(scope="module")
def paid_study(demo_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("paths")
    items, references = folder / "items.jsonl", folder / "qualification.jsonl"
    items.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    references.write_text("".join(json.dumps(row) + "\n" for row in QUALIFICATION))
    manage(
        demo_server,
        [
            "create_project",
            STUDY,
            "--task-type",
            "nli_label",
            "--owner",
            "author",
            "--items-per-page",
            "2",
            "--completion-code",
            "PATHS-CODE",
            "--completion-pages",
            "2",
            "--title",
            "Paths: paid",
            "--instructions",
            "Read the **premise** before you answer; see the [guidelines](/).",
        ],
    )
    manage(
        demo_server,
        ["import_items", STUDY, str(items), "--format", "jsonl"],
        [
            "create_qualification",
            "qual-paths",
            "--task-type",
            "nli_label",
            "--items",
            str(references),
            "--project",
            STUDY,
            "--min-accuracy",
            "1",
            "--max-attempts",
            "2",
            "--show-feedback",
        ],
    )
    return STUDY


def test_a_participant_on_a_phone_from_qualification_to_the_code(open_window, demo_server, paid_study):
    base = demo_server["url"]
    page = open_window(360, 740)
    page.goto(f"{base}/enter/{paid_study}/?PROLIFIC_PID=PATHS1&STUDY_ID=ST&SESSION_ID=SE")
    page.wait_for_url(f"{base}/qualify/{paid_study}/")
    expect(page.locator("h1")).to_have_text("Qualification test")
    expect(page.locator(".instructions")).to_contain_text("Read the premise before you answer")
    fits(page, "qualification")

    answer_page(page, ["c"])  # both wrong
    submit_by_keyboard(page)
    expect(page.locator("#qualification-result")).to_contain_text("Not passed")
    expect(page.locator("#qualification-unmet")).to_contain_text("0 of 2 answers matched the references")
    table = page.locator("#qualification-feedback")
    expect(table).to_be_visible()
    widths = table.evaluate("t => [t.scrollWidth, t.parentElement.clientWidth, t.getBoundingClientRect().right]")
    assert widths[0] <= widths[1] and widths[2] <= 360, f"the feedback table does not fit: {widths}"
    match_column = table.locator("th").nth(3)
    expect(match_column).to_have_text("Match")
    box = match_column.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 360, f"the Match column is off screen: {box}"
    fits(page, "qualification-feedback")

    texts = page.locator("fieldset.item").all_inner_texts()  # the test's items come in a random order
    answer_page(page, ["n" if "first one" in text else "e" for text in texts])
    submit_by_keyboard(page)
    expect(page.locator("#qualification-result")).to_contain_text("You passed")
    expect(page.locator("main")).not_to_contain_text("attempts left")
    fits(page, "qualification-passed")
    page.locator("#start-work").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/work/{paid_study}/")
    for number in (1, 2):
        assert page.get_by_text("Finish and get my completion code").count() == 0  # it would refuse here
        fits(page, f"work-page-{number}")
        answer_page(page, ["e", "n"])
        submit_by_keyboard(page)
    page.wait_for_url(f"{base}/done/{paid_study}/")
    expect(page.locator("#completion-code")).to_have_text("PATHS-CODE")
    expect(page.locator("main")).not_to_contain_text("next page")
    fits(page, "done")


def test_the_slider_ticks_and_the_clock_leave_labels_readable(sign_in, demo_server):
    base = demo_server["url"]
    page = sign_in("worker3", 360, 740)
    page.goto(f"{base}/work/demo-slider/")
    backgrounds = page.evaluate(
        "() => [...document.querySelectorAll('.slider .tick')].map(t => getComputedStyle(t).backgroundColor)"
    )
    assert backgrounds and "rgba(0, 0, 0, 0)" not in backgrounds, backgrounds  # a later tick's line passes behind
    # The next item, scrolled to by keyboard, is not under the sticky clock.
    page.locator("fieldset.item input[type=range]").first.focus()
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    legend, clock = page.evaluate("""() => {
        const item = document.activeElement.closest('fieldset.item');
        return [item.querySelector('legend').getBoundingClientRect().top,
                document.getElementById('page-status').getBoundingClientRect().bottom];
    }""")
    assert legend >= clock, f"the next item's legend ({legend}) is under the clock ({clock})"
    fits(page, "slider")


def test_the_dashboard_logs_no_htmx_warning(sign_in, demo_server):
    page = sign_in("author")
    messages = []
    page.on("console", lambda message: messages.append(message.text))
    page.goto(f"{demo_server['url']}/projects/demo-nli/")
    expect(page.locator("#live-state")).to_have_text("(live)")
    page.evaluate("() => document.body.dispatchEvent(new Event('progress-changed'))")
    page.wait_for_timeout(1500)  # the table reloads 700 ms after the event
    assert not [text for text in messages if "htmx" in text.lower() or "hx-include" in text], messages
