"""Crowd platforms in the browser, on the real demo server: a Prolific participant goes from the entry link
through qualification and work back to Prolific with the code (by keyboard, on a phone); an MTurk worker
previews, accepts and works inside a HIT frame on a local stand-in for MTurk, and the finished HIT is posted
to the stand-in's external-submit endpoint. The new screens have no sideways scroll at 1280 and 360 px."""

import json
import re
import threading
from http.server import ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlparse

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import (
    WAIT_MS,
    MTurkStandIn,
    focused_item,
    manage,
    next_item,
    no_sideways_scroll,
    save_screenshot,
    tab_to_link,
    too_wide,
)

pytestmark = pytest.mark.browser

PROLIFIC_STUDY, MTURK_STUDY = "crowd-prolific", "crowd-mturk"
PROLIFIC_CODE, MTURK_CODE = "CC-PROLIFIC-42", "CC-MTURK-42"
ROWS = [
    {"id": f"c{i}", "premise": "A woman rides a bicycle along a river.", "hypothesis": hypothesis}
    for i, hypothesis in enumerate(
        [
            "A person is outside.",
            "The woman is late.",
            "The woman is asleep.",
            "Someone moves.",
            "The river is frozen.",
            "It is morning.",
        ]
    )
]
QUALIFICATION = [
    {"premise": "A chef tastes soup.", "hypothesis": "Someone is cooking.", "reference": "e"},
    {"premise": "A chef tastes soup.", "hypothesis": "The soup is for a wedding.", "reference": "n"},
]


@pytest.fixture(scope="module")
def crowd_studies(demo_server, tmp_path_factory):
    """Two published studies that end after one page with a fixed code; the Prolific one has a
    qualification test with per-item feedback."""
    folder = tmp_path_factory.mktemp("crowd")
    items, references = folder / "items.jsonl", folder / "qualification.jsonl"
    items.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    references.write_text("".join(json.dumps(row) + "\n" for row in QUALIFICATION))
    manage(
        demo_server,
        [
            "create_project",
            PROLIFIC_STUDY,
            "--task-type",
            "nli_label",
            "--owner",
            "author",
            "--items-per-page",
            "2",
            "--completion-code",
            PROLIFIC_CODE,
            "--completion-pages",
            "1",
            "--title",
            "Crowd: Prolific",
        ],
        [
            "create_project",
            MTURK_STUDY,
            "--task-type",
            "nli_label",
            "--owner",
            "author",
            "--items-per-page",
            "2",
            "--completion-code",
            MTURK_CODE,
            "--completion-pages",
            "1",
            "--title",
            "Crowd: MTurk",
        ],
    )
    manage(
        demo_server,
        ["import_items", PROLIFIC_STUDY, str(items), "--format", "jsonl"],
        ["import_items", MTURK_STUDY, str(items), "--format", "jsonl"],
        [
            "create_qualification",
            "qual-crowd-prolific",
            "--task-type",
            "nli_label",
            "--items",
            str(references),
            "--project",
            PROLIFIC_STUDY,
            "--min-accuracy",
            "1",
            "--max-attempts",
            "2",
            "--show-feedback",
        ],
    )


def answer_by_keyboard(page, keys: list[str]) -> None:
    current = focused_item(page)
    assert current, "focus should start on the first item's answer"
    for index in range(page.locator("fieldset.item").count()):
        if index:
            current = next_item(page, current)
        page.keyboard.press(keys[index % len(keys)])
    expect(page.locator("#unanswered")).to_contain_text("All answered")
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")


def test_prolific_participant_qualifies_works_and_returns_to_prolific_with_the_code(
    open_window, demo_server, crowd_studies
):
    base = demo_server["url"]
    page = open_window(360, 740)
    # Prolific itself is not reachable from the test machine: a stand-in page answers its completion URL.
    page.route(
        "https://app.prolific.com/**",
        lambda route: route.fulfill(status=200, content_type="text/html", body="<h1>Prolific stand-in</h1>"),
    )
    page.goto(f"{base}/enter/{PROLIFIC_STUDY}/?PROLIFIC_PID=PP-7&STUDY_ID=ST-7&SESSION_ID=SE-7")
    page.wait_for_url(f"{base}/qualify/{PROLIFIC_STUDY}/")
    answer_by_keyboard(page, ["e", "c"])  # the second is wrong
    expect(page.locator("#qualification-result")).to_contain_text("Not passed this time.")
    expect(page.locator("#qualification-score")).to_have_text("0.50")
    expect(page.locator("#qualification-pass-mark")).to_have_text("1.00")
    expect(page.locator("#qualification-result")).to_contain_text("1 attempt left")
    assert no_sideways_scroll(page)
    page.locator("fieldset.item input[type=radio]").first.focus()
    answer_by_keyboard(page, ["e", "n"])
    expect(page.locator("#qualification-result")).to_contain_text("You passed.")
    expect(page.locator("#qualification-feedback tbody tr")).to_have_count(2)
    save_screenshot(page, "crowd-qualification-feedback-360")
    tab_to_link(page, "Start working")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url == f"{base}/work/{PROLIFIC_STUDY}/"
    assert "CC-PROLIFIC" not in page.content()
    answer_by_keyboard(page, ["e", "n"])
    # One page was the quota: the end page shows the code, then sends the participant on to Prolific.
    expect(page.locator("#completion-code")).to_have_text(PROLIFIC_CODE)
    assert no_sideways_scroll(page)
    page.wait_for_url("https://app.prolific.com/**", timeout=WAIT_MS)
    assert parse_qs(urlparse(page.url).query) == {"cc": [PROLIFIC_CODE]}
    assert page.url.startswith("https://app.prolific.com/submissions/complete?")


@pytest.fixture
def mturk_stand_in(demo_server):
    server = ThreadingHTTPServer(("127.0.0.1", demo_server["mturk_port"]), MTurkStandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    MTurkStandIn.submitted, MTurkStandIn.frame_src = [], ""
    yield f"http://127.0.0.1:{demo_server['mturk_port']}"
    server.shutdown()
    server.server_close()


def test_mturk_worker_previews_accepts_works_in_the_frame_and_the_hit_is_posted(
    open_window, demo_server, crowd_studies, mturk_stand_in
):
    base, host = demo_server["url"], mturk_stand_in
    page = open_window(1280, 900)

    def hit(assignment: str, worker: str = "") -> str:
        link = f"{base}/enter/{MTURK_STUDY}/?assignmentId={assignment}&hitId=HIT-9&turkSubmitTo={quote(host)}"
        return f"{host}/hit?src={quote(link + (f'&workerId={worker}' if worker else ''))}"

    page.goto(hit("ASSIGNMENT_ID_NOT_AVAILABLE"))
    frame = page.frame_locator("#hit")
    expect(frame.locator("#mturk-preview")).to_contain_text("Accept the HIT")
    expect(frame.locator("fieldset.item")).to_have_count(2)
    expect(frame.locator("#submit-page")).to_be_disabled()

    page.goto(hit("ASG-9", worker="WK-9"))  # accepted: MTurk loads the HIT again with the assignment
    frame = page.frame_locator("#hit")
    expect(frame.locator("fieldset.item")).to_have_count(2)
    items = frame.locator("fieldset.item")
    for index, key in enumerate(["e", "c"]):
        items.nth(index).locator(f'input[type=radio][data-key="{key}"]').check()
    frame.locator("#submit-page").click()
    expect(frame.locator("#completion-code")).to_have_text(MTURK_CODE)
    save_screenshot(page, "crowd-mturk-frame-end")
    frame.get_by_role("button", name="Submit the HIT to MTurk").click()
    expect(frame.locator("h1")).to_have_text("HIT submitted")
    assert MTurkStandIn.submitted == [
        {
            "path": "/mturk/externalSubmit",
            "assignmentId": "ASG-9",
            "pages": "1",
            "answers": "2",
            "completionCode": MTURK_CODE,
        }
    ]


@pytest.mark.parametrize("width", [1280, 360])
def test_new_screens_and_the_dashboard_do_not_scroll_sideways(open_window, sign_in, demo_server, crowd_studies, width):
    base = demo_server["url"]
    page = open_window(width, 800)
    # A participant who gives back and stops lands on the study's returned page, by keyboard alone.
    page.goto(f"{base}/enter/{MTURK_STUDY}/?workerId=WK-{width}&assignmentId=ASG-{width}&hitId=HIT-9")
    page.wait_for_url(re.compile(rf"{re.escape(base)}/work/{MTURK_STUDY}/\?frame=.+"))  # the frame's token
    tab_to_link(page, "Give this page back and stop", presses=60)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.startswith(f"{base}/done/{MTURK_STUDY}/?frame=")
    expect(page.locator("main")).to_contain_text("Please return this study")
    expect(page.locator("#resume-link")).to_be_visible()
    assert no_sideways_scroll(page)
    # The MTurk preview, outside a frame.
    page.goto(f"{base}/enter/{MTURK_STUDY}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=HIT-9")
    expect(page.locator("#mturk-preview")).to_be_visible()
    assert no_sideways_scroll(page)
    # A paused Prolific-only study turns arrivals away with its code and the way back, and an MTurk worker
    # sent to it is told it takes Prolific participants only: pages, never a 404 or a debug page.
    paused = f"crowd-paused-{width}"
    manage(
        demo_server,
        [
            "create_project",
            paused,
            "--task-type",
            "nli_label",
            "--owner",
            "author",
            "--status",
            "paused",
            "--audience",
            "prolific",
            "--returned-code",
            "RET-PAUSED",
            "--returned-message",
            "Thank you: come back later.",
        ],
    )
    response = page.goto(f"{base}/enter/{paused}/?PROLIFIC_PID=p-{width}&STUDY_ID=s&SESSION_ID=x")
    assert response.status == 200
    expect(page.locator("#turnaway")).to_have_attribute("data-reason", "paused")
    expect(page.locator("#returned-message")).to_have_text("Thank you: come back later.")
    expect(page.locator("#returned-code")).to_have_text("RET-PAUSED")
    tab_to_link(page, "Go back to Prolific with this code")
    assert "RET-PAUSED" in page.evaluate("document.activeElement.href")
    save_screenshot(page, f"crowd-turnaway-paused-{width}")
    assert no_sideways_scroll(page), too_wide(page)
    response = page.goto(f"{base}/enter/{paused}/?workerId=W-{width}&assignmentId=A-{width}&hitId=H")
    assert response.status == 403
    expect(page.locator("#turnaway-explanation")).to_contain_text("Prolific only")
    expect(page.locator("#platform-action")).to_contain_text("return the HIT")
    assert "RET-PAUSED" not in page.content()  # never the other platform's code
    assert no_sideways_scroll(page), too_wide(page)
    # Someone with an account but no role yet is told what to do (logged in by keyboard).
    manage(
        demo_server,
        [
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model; U = get_user_model(); "
            f"U.objects.filter(username='newcomer-{width}').exists() or "
            f"U.objects.create_user('newcomer-{width}', password='newcomer-pass')",
        ],
    )
    page = sign_in(f"newcomer-{width}", width, 800, password="newcomer-pass")
    expect(page.locator("#no-role")).to_contain_text("Ask the researcher")
    assert no_sideways_scroll(page), too_wide(page)
    page = sign_in("author", width, 800)
    page.goto(f"{base}/projects/demo-paid/")
    expect(page.locator("#live-state")).to_have_text("(live)")
    save_screenshot(page, f"crowd-dashboard-{width}")
    assert no_sideways_scroll(page), f"the dashboard scrolls sideways: {too_wide(page)}"
    # The entry links' copy buttons answer the keyboard: Enter copies (or selects the link for Ctrl+C).
    expect(page.locator("#entry-prolific")).to_have_value(
        f"{base}/enter/demo-paid/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}&SESSION_ID={{{{%SESSION_ID%}}}}"
    )
    page.focus('[data-copy="entry-mturk"]')
    page.keyboard.press("Enter")
    expect(page.locator('[data-copied-for="entry-mturk"]')).to_have_text(re.compile("Copied|Selected"))
