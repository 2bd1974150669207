"""A Prolific study run from the app, on the real demo server and the Prolific stand-in (tests/recruitment/
standin.py, on the port the server's PROLIFIC_API_URL names): the author links the study and creates and
publishes it; three participants arrive (one fails the qualification and gets the screen-out code, one
gives back and gets the returned code, one completes); the author settles (approves one, screens one out,
rejects none), pays a bonus twice with the paying process killed in between (Prolific records one payment)
and builds a participant group for wave 2. The Prolific page is used by keyboard at 360 px."""

import json
import os
import signal
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PROLIFIC_TOKEN as TOKEN
from tests.browser.conftest import REPO, manage, no_sideways_scroll, save_screenshot, tab_to_link, too_wide
from tests.browser.test_crowd_platforms import answer_by_keyboard

pytestmark = pytest.mark.browser

SLUG = "prolific-wave-one"
ROWS = [
    {"id": f"p{i}", "premise": "Two dogs run across a field.", "hypothesis": hypothesis, "label": "entailment"}
    for i, hypothesis in enumerate(["Animals are moving.", "Dogs are outside.", "Something runs.", "A field has dogs."])
]
QUALIFICATION = [
    {"premise": "A chef tastes soup.", "hypothesis": "Someone is cooking.", "reference": "e"},
    {"premise": "A chef tastes soup.", "hypothesis": "The soup is for a wedding.", "reference": "n"},
]


def make_study(demo_server, folder, slug: str, title: str) -> str:
    """A label study of two items and two gold checks on a page, one page to complete, behind a qualification
    test of its own that a participant must get right, made with manage.py."""
    items, gold, references = folder / "items.jsonl", folder / "gold.jsonl", folder / "qualification.jsonl"
    items.write_text("".join(json.dumps(row) + "\n" for row in ROWS[:2]))
    gold.write_text("".join(json.dumps(row) + "\n" for row in ROWS[2:]))
    references.write_text("".join(json.dumps(row) + "\n" for row in QUALIFICATION))
    manage(
        demo_server,
        ["create_project", slug, "--task-type", "nli_label", "--owner", "author", "--items-per-page", "2",
         "--completion-pages", "1", "--gold-rate", "1", "--redundancy", "3", "--max-annotations", "3",
         "--title", title],
    )  # fmt: skip
    manage(
        demo_server,
        ["import_items", slug, str(items), "--format", "jsonl"],
        ["import_items", slug, str(gold), "--format", "jsonl", "--gold"],
        ["create_qualification", f"qual-{slug}", "--task-type", "nli_label", "--items", str(references),
         "--project", slug, "--min-accuracy", "1", "--max-attempts", "2"],
    )  # fmt: skip
    return slug


@pytest.fixture(scope="module")
def wave_one(demo_server, tmp_path_factory):
    return make_study(demo_server, tmp_path_factory.mktemp("prolific"), SLUG, "Prolific wave one")


def press(page, text: str, presses: int = 150) -> None:
    """Reach a button or link by Tab and press Enter, waiting for the page it leads to."""
    tab_to_link(page, text, presses)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def participant(open_window, base: str, pid: str, study_id: str, slug: str = SLUG):
    """A participant Prolific sends to the study's entry link, on a phone-sized window, at its qualification."""
    page = open_window(360, 740)
    page.route("https://app.prolific.com/**", lambda route: route.fulfill(status=200, body="<h1>Prolific</h1>"))
    page.goto(f"{base}/enter/{slug}/?PROLIFIC_PID={pid}&STUDY_ID={study_id}&SESSION_ID=SE-{pid}")
    page.wait_for_url(f"{base}/qualify/{slug}/")
    return page


def test_a_prolific_study_from_link_to_second_wave(open_window, sign_in, demo_server, wave_one, prolific):
    base = demo_server["url"]
    author = sign_in("author", 360, 800)
    author.goto(f"{base}/projects/{SLUG}/")
    with author.expect_navigation():
        author.get_by_role("link", name="Prolific", exact=True).press("Enter")
    assert "{{%PROLIFIC_PID%}}" in author.locator("#entry-url").input_value()

    # Link and study, by keyboard: the token field shows nothing back once set.
    author.locator("#token").focus()
    author.keyboard.type(TOKEN)
    for field, value in (("#study-name", "Judge sentence pairs"), ("#places", "3"), ("#reward", "150"),
                         ("#minutes", "5"), ("#screen-reward", "20"), ("#screen-slots", "2"),
                         ("#workspace", "ws000001")):  # fmt: skip
        author.locator(field).fill(value)
    author.locator("#screen-slots").focus()
    with author.expect_navigation():
        author.keyboard.press("Enter")  # submits the form
    expect(author.locator("label[for=token]")).to_contain_text("set: type a new one to replace it")
    assert TOKEN not in author.content()
    press(author, "Create the draft study on Prolific")
    press(author, "Publish")
    expect(author.locator("#link-state")).to_have_text("Active")
    (study_id,) = prolific.studies
    sent = prolific.studies[study_id]
    assert sent["status"] == "ACTIVE" and sent["reward"] == 150 and sent["total_available_places"] == 3
    codes = {code["code_type"]: code["code"] for code in sent["completion_codes"]}
    assert no_sideways_scroll(author), too_wide(author)
    save_screenshot(author, "prolific-study-360")

    # Three participants arrive.
    failing = participant(open_window, base, "PQFAIL", study_id)
    answer_by_keyboard(failing, ["c", "c"])
    failing.locator("fieldset.item input[type=radio]").first.focus()
    answer_by_keyboard(failing, ["c", "c"])
    expect(failing.locator("#returned-code")).to_have_text(codes["FIXED_SCREENOUT"])

    leaving = participant(open_window, base, "PRETURN", study_id)
    answer_by_keyboard(leaving, ["e", "n"])  # passed: on to the work page
    leaving.wait_for_url(f"{base}/work/{SLUG}/")
    press(leaving, "Give this page back and stop")
    expect(leaving.locator("#returned-code")).to_have_text(codes["OTHER"])

    done = participant(open_window, base, "PDONE", study_id)
    answer_by_keyboard(done, ["e", "n"])
    done.wait_for_url(f"{base}/work/{SLUG}/")
    answer_by_keyboard(done, ["e"])  # every item of this study, gold checks included, is entailed
    expect(done.locator("#completion-code")).to_have_text(codes["COMPLETED"])

    submissions = {
        "PDONE": prolific.add_submission(study_id, "PDONE", "AWAITING REVIEW", codes["COMPLETED"]),
        "PRETURN": prolific.add_submission(study_id, "PRETURN", "RETURNED"),
        "PQFAIL": prolific.add_submission(study_id, "PQFAIL", "ACTIVE"),
    }

    # Settle: read Prolific's submissions, approve the completed one, screen out the failed one.
    press(author, "Read submissions from Prolific")
    expect(author.locator("#settle-table tbody tr")).to_have_count(3)
    expect(author.locator("#settle-table")).to_contain_text("AWAITING REVIEW")
    author.get_by_label("choose PDONE").check()
    press(author, "Approve the chosen")
    author.get_by_label("choose PQFAIL").check()
    press(author, "Screen out the chosen one")
    assert prolific.submissions[submissions["PDONE"]]["status"] == "APPROVED"
    assert prolific.submissions[submissions["PQFAIL"]]["status"] == "SCREENED OUT"
    transitions = prolific.calls_to("POST", r"/api/v1/submissions/\w+/transition/")
    assert [call.body["action"] for call in transitions] == ["SCREEN_OUT"]  # approved in bulk, nobody rejected

    # A bonus for the completer; the paying process is killed after Prolific set it up, then paid again.
    author.locator("#manual-participant").fill("PDONE")
    author.locator("#manual-amount").fill("0.50")
    author.locator("#manual-reason").fill("careful answers")
    author.locator("#manual-reason").focus()
    with author.expect_navigation():
        author.keyboard.press("Enter")
    expect(author.locator("#bonus-table")).to_contain_text("Planned")
    hold = prolific.hold(r"/api/v1/submissions/bonus-payments/", record=True)
    env = {key: value for key, value in demo_server["env"].items() if key != "PORT"}
    paying = subprocess.Popen(
        [sys.executable, "manage.py", "prolific", SLUG, "--pay-bonuses"], cwd=REPO, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert hold.reached.wait(120)
    finally:
        os.kill(paying.pid, signal.SIGKILL)
        paying.wait(timeout=30)
        prolific.release(hold)
    press(author, "Pay the ledger")
    expect(author.locator("#bonus-table")).to_contain_text("Paid")
    assert len(prolific.bonus_setups) == 2 and len(prolific.payments) == 1
    paid_setup = prolific.bonus_setups[prolific.payments[0]]
    assert paid_setup["lines"] == [("PDONE", 50)]

    # Wave 2: the participants with gold accuracy of at least 0.8, as a Prolific participant group.
    author.locator("#group-name").fill("wave two")
    author.locator("#group-minimum").fill("0.8")
    author.locator("#group-minimum").focus()
    with author.expect_navigation():
        author.keyboard.press("Enter")
    expect(author.locator("main")).to_contain_text("holds 1 participant")
    (group,) = prolific.groups.values()
    assert group["name"] == "wave two" and group["members"] == ["PDONE"]
    assert no_sideways_scroll(author), too_wide(author)
    assert TOKEN not in author.content()
    assert all(call.authorization == f"Token {TOKEN}" for call in prolific.calls)
    save_screenshot(author, "prolific-settled-360")

    # The study's dashboard pauses and resumes it: the Prolific study follows.
    author.goto(f"{base}/projects/{SLUG}/")
    press(author, "Pause")
    assert prolific.studies[study_id]["status"] == "PAUSED"
    press(author, "Resume")
    assert prolific.studies[study_id]["status"] == "ACTIVE"
    # Stop asks first: its box is ticked from the keyboard, then Stop.
    author.goto(f"{base}/recruitment/projects/{SLUG}/prolific/")
    author.locator("#stop-form input[name=confirm]").focus()
    author.keyboard.press("Space")
    press(author, "Stop")
    expect(author.locator("#link-state")).to_have_text("Stopped")
    assert prolific.studies[study_id]["status"] == "COMPLETED"
