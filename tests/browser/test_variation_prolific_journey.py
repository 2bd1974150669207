"""Labels with explanations on Prolific (VariErr's two rounds, issue 53 item 4), on the real demo server: two
Prolific writers explain a pair in round 1, whose pairs go to the validation study as they are submitted.
Round 1's end page shows the code earned and links the self-check instead of sending the writer back to
Prolific; one writer then validates the other's pair from the validation study's Prolific link and, from that
study's end page, judges their own explanation by keyboard at 360 px and goes back to Prolific with the
validation study's code; the other comes back to round 1 from a new Prolific session and is let through to
their self-check, with no new round-1 page."""

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import assert_fits_and_is_accessible, manage, save_screenshot, tab_to_link

pytestmark = pytest.mark.browser

STUDY, ROUND_TWO, CODE = "prolific-varierr", "prolific-varierr-validation", "VARIERR-R1"
PREMISE = "A man in a grey suit reads a newspaper on a crowded morning train."
HYPOTHESIS = "A man is going to work."
WHY = {
    "PVA": "A suit and a crowded morning train mean he is commuting to his job.",
    "PVB": "He could be travelling to a meeting or to visit a friend in a suit.",
}
PROLIFIC = "https://app.prolific.com/"


def participant(open_window, base: str, slug: str, pid: str, session: str, width: int = 360):
    """A participant Prolific sends to a study's entry link (Prolific itself answered by a stub page)."""
    page = open_window(width, 740)
    page.route(f"{PROLIFIC}**", lambda route: route.fulfill(status=200, body="<h1>Prolific</h1>"))
    page.goto(f"{base}/enter/{slug}/?PROLIFIC_PID={pid}&STUDY_ID=VX-{slug}&SESSION_ID={session}")
    return page


def write(page, pid: str) -> None:
    """Round 1's one page: tick a label, explain it, mark a word, submit."""
    item = page.locator("fieldset.item").get_attribute("data-item")
    label = "e" if pid == "PVA" else "n"
    page.locator(f"#item-{item} input[name=pick_{item}][value={label}]").check()
    box = page.locator(f"#item-{item} .explained[data-label={label}]")
    box.locator("textarea").fill(WHY[pid])
    box.locator(".words[data-for=premise]").get_by_role("button", name="train.", exact=True).click()
    expect(page.locator("#unanswered")).to_contain_text("All answered")
    with page.expect_navigation():
        page.get_by_role("button", name="Submit page").click()


def holds_on_the_end_page(page, base: str, slug: str) -> None:
    """The end page stays: no automatic trip to Prolific while a self-check is due."""
    page.wait_for_timeout(4000)  # the end page's redirect, when it has one, leaves after 3 s
    assert page.url == f"{base}/done/{slug}/"


def test_a_prolific_writer_self_checks_from_the_validation_studys_end_page(open_window, sign_in, demo_server, tmp_path):
    base = demo_server["url"]
    rows = tmp_path / "pair.jsonl"
    rows.write_text(json.dumps({"id": "train", "premise": PREMISE, "hypothesis": HYPOTHESIS}) + "\n")
    manage(
        demo_server,
        ["create_project", STUDY, "--task-type", "label_explanation", "--owner", "author", "--audience", "prolific",
         "--title", "Prolific VariErr", "--redundancy", "2", "--max-annotations", "2", "--items-per-page", "1",
         "--completion-pages", "1", "--completion-code", CODE, "--auto-send"],
    )  # fmt: skip
    manage(demo_server, ["import_items", STUDY, str(rows), "--format", "jsonl"])  # after: manage() runs side by side

    # Round 1: both writers explain the pair; each end page shows the code and links the self-check.
    writers = {pid: participant(open_window, base, STUDY, pid, f"SE-{pid}-1") for pid in WHY}
    for pid, page in writers.items():
        page.wait_for_url(f"{base}/work/{STUDY}/")
        write(page, pid)
        page.wait_for_url(f"{base}/done/{STUDY}/")
        expect(page.locator("#completion-code")).to_have_text(CODE)
        expect(page.locator("#self-check")).to_contain_text("1 of your explanations waits for your own judgment")
        expect(page.locator("#follow-up")).to_contain_text("One more step before you go back to Prolific")
    holds_on_the_end_page(writers["PVA"], base, STUDY)
    save_screenshot(writers["PVA"], "journey-prolific-varierr-round-one-end")

    # PVA validates PVB's pair from the validation study's own Prolific link, by keyboard at 360 px.
    judge = participant(open_window, base, ROUND_TWO, "PVA", "SE-PVA-2")
    judge.wait_for_url(f"{base}/work/{ROUND_TWO}/")
    expect(judge.locator("fieldset.item")).to_have_count(1)
    expect(judge.locator(".explanation")).to_have_text(WHY["PVB"])  # the other writer's, never their own
    judge.keyboard.press("y")
    expect(judge.locator("#unanswered")).to_contain_text("All answered")
    with judge.expect_navigation():
        judge.keyboard.press("Control+Enter")
    judge.wait_for_url(f"{base}/done/{ROUND_TWO}/")
    validation_code = judge.locator("#completion-code").inner_text()
    assert validation_code and validation_code != CODE
    expect(judge.locator("#self-check")).to_contain_text("1 of your explanations in Prolific VariErr waits")
    holds_on_the_end_page(judge, base, ROUND_TWO)
    assert_fits_and_is_accessible(judge, 360)
    save_screenshot(judge, "journey-prolific-varierr-validation-end")

    # From that end page to the self-check, by keyboard: their own explanation makes sense to them.
    tab_to_link(judge, "judge your explanations")
    with judge.expect_navigation():
        judge.keyboard.press("Enter")
    assert judge.url == f"{base}/work/{STUDY}/explanations/?from={ROUND_TWO}"
    expect(judge.locator("fieldset.item .explanation")).to_have_text([WHY["PVA"]])
    judge.keyboard.press("y")
    expect(judge.locator("#unanswered")).to_contain_text("All answered")
    assert_fits_and_is_accessible(judge, 360)
    with judge.expect_navigation():
        judge.keyboard.press("Enter")
    expect(judge.locator(".message.success")).to_contain_text("1 judgment of your explanations saved")
    expect(judge.locator("#self-check-done")).to_contain_text("You have judged all your explanations")
    # Back to the validation study's end, which now sends them on to Prolific with its code.
    tab_to_link(judge, "Back to Validation: Prolific VariErr")
    judge.keyboard.press("Enter")
    judge.wait_for_url(lambda url: url == f"{PROLIFIC}submissions/complete?cc={validation_code}", timeout=15000)

    # PVB comes back to round 1 from a new Prolific session: let through to their self-check, no new page.
    again = participant(open_window, base, STUDY, "PVB", "SE-PVB-later", width=1200)
    again.wait_for_url(f"{base}/work/{STUDY}/explanations/")
    expect(again.locator("fieldset.item .explanation")).to_have_text([WHY["PVB"]])
    again.goto(f"{base}/work/{STUDY}/")
    again.wait_for_url(f"{base}/done/{STUDY}/")  # round 1 is over for them: the code they earned, no page
    expect(again.locator("#completion-code")).to_have_text(CODE)
    expect(again.locator("#self-check")).to_be_visible()
    again.goto(f"{base}/work/{STUDY}/explanations/")
    again.locator("fieldset.item input[value=no]").check()
    with again.expect_navigation():
        again.get_by_role("button", name="Save my judgments").click()
    expect(again.locator("#self-check-done")).to_be_visible()
    again.goto(f"{base}/done/{STUDY}/")  # nothing due: on to Prolific with round 1's code
    again.wait_for_url(lambda url: url == f"{PROLIFIC}submissions/complete?cc={CODE}", timeout=15000)

    # The author's study page: both writers have judged their own explanations, none waits.
    author = sign_in("author")
    author.goto(f"{base}/projects/{STUDY}/")
    rows = author.locator("#self-check-table tbody tr")
    expect(rows).to_have_count(2)
    for row in range(2):
        expect(rows.nth(row).locator("td")).to_have_text([rows.nth(row).locator("td").first.inner_text(), "1", "0"])
