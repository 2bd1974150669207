"""Two waves of a paid Prolific study, on the real demo server and the Prolific stand-in run as a server
(tests/recruitment/standin.py on the port the server's PROLIFIC_API_URL names).

Wave 1: the author chooses country and language filters on the Prolific page (a name off the list is refused
and nothing saved), sees the cost before creating and before publishing, and creates and publishes the study.
Participants arrive: two complete, one fails the qualification (screen-out code, screened out), one gives
back (returned code, returned on Prolific), one completes and is rejected (its answers no longer kept). The
settle table shows each code given (the screen-out and returned ones too) and fits a 1280 px window. A bonus
per page is planned (none for the rejected one), shows in the cost, and the ledger is paid once; the cost
then shows what was paid next to the ceiling. Wave 2 is cloned (new codes): its Prolific page comes with wave
1 in the previous-studies blocklist, its author keeps wave 1's rejected participants out, and wave 1's
rejected participant, opening wave 2's entry link, is turned away before any qualification test while a new
participant gets in. It is given more places while it runs, and paused and closed from the study's
dashboard, the stand-in's study following each step (Close pauses it).

The demo server runs on SQLite, where SELECT ... FOR UPDATE does nothing, so the eight pay requests at once
are a PostgreSQL-marked test: test_a_waves_settled_participants_are_paid_once_by_eight_requests_at_once in
tests/recruitment/test_bonuses_postgres.py (the same wave's participants, in process): each bonus is paid by
one pay call. Here the ledger is paid from the page once."""

from decimal import Decimal

import pytest
from django.conf import settings
from playwright.sync_api import expect

from recruitment.services.costs import preview
from tests.browser.conftest import PROLIFIC_TOKEN
from tests.browser.test_crowd_platforms import answer_by_keyboard
from tests.browser.test_prolific_journey import make_study, participant, press

pytestmark = pytest.mark.browser

WAVE_ONE, WAVE_TWO = "prolific-waves-one", "prolific-waves-two"
REJECTION = "Your answers to the sentence pairs did not follow the instructions given on the first page " * 2
COLUMNS = ["choose", "participant", "prolific", "arrived", "qualified", "pages", "code", "kept", "gold", "speeder"]


@pytest.fixture(scope="module")
def wave_one(demo_server, tmp_path_factory):
    return make_study(demo_server, tmp_path_factory.mktemp("waves"), WAVE_ONE, "Prolific waves, one")


def cost_shown(
    page, reward_cents: int, places: int, bonuses: Decimal, screen_outs: int = 2, column: str = "cost"
) -> None:
    """The cost preview shows what costs.preview gives at the server's rates (the same settings as here): the
    ceiling ("cost", with the 20p screen-out places) or what was paid ("paid")."""
    cost = preview(reward_cents, places, bonuses, settings.PROLIFIC_SERVICE_FEE_RATE, settings.PROLIFIC_VAT_RATE,
                   screen_out_cents=20, screen_outs=screen_outs)  # fmt: skip
    for cell, amount in (("rewards", cost.rewards), ("screen-outs", cost.screen_out_payments),
                         ("bonuses", cost.bonuses), ("fee", cost.fee), ("vat", cost.vat),
                         ("total", cost.total)):  # fmt: skip
        expect(page.locator(f"#{column}-{cell}")).to_have_text(f"GBP {amount:.2f}")


def save_by_keyboard(page, fields: dict) -> None:
    """Fill the link form's fields and submit it with Enter from the last one."""
    for field, value in fields.items():
        page.locator(field).fill(value)
    page.locator(field).focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")


def settle_cell(page, participant_id: str, column: str) -> str:
    row = page.locator("#settle-table tbody tr", has_text=participant_id)
    return row.locator("td").nth(COLUMNS.index(column)).inner_text().strip()


def link_study(page, base: str, slug: str, fields: dict) -> None:
    page.goto(f"{base}/projects/{slug}/")
    with page.expect_navigation():
        page.get_by_role("link", name="Prolific", exact=True).press("Enter")
    page.locator("#token").focus()
    page.keyboard.type(PROLIFIC_TOKEN)
    save_by_keyboard(page, fields)


def test_two_waves_from_filters_and_cost_to_a_closed_second_wave(open_window, sign_in, demo_server, wave_one, prolific):
    base = demo_server["url"]
    author = sign_in("author")
    study = {"#study-name": "Judge sentence pairs", "#places": "3", "#reward": "150", "#minutes": "5",
             "#screen-reward": "20", "#screen-slots": "2"}  # fmt: skip

    # Filters: a country off the list is refused, naming the field, and nothing is saved.
    link_study(author, base, WAVE_ONE, {**study, "#countries": "United Kingdom, Atlantis"})
    expect(author.locator("main")).to_contain_text("countries: 'Atlantis' is not in Prolific's list")
    expect(author.locator("#link-state")).to_have_count(0)  # no link was made
    link_study(
        author, base, WAVE_ONE, {**study, "#countries": "united kingdom, Ireland", "#fluent_languages": "English"}
    )
    expect(author.locator("#countries")).to_have_value("United Kingdom, Ireland")

    # The cost before create and before publish.
    cost_shown(author, 150, 3, Decimal(0))
    press(author, "Create the draft study on Prolific")
    cost_shown(author, 150, 3, Decimal(0))
    press(author, "Publish")
    expect(author.locator("#link-state")).to_have_text("Active")
    (first,) = prolific.studies
    sent = prolific.studies[first]
    assert sent["status"] == "ACTIVE" and sent["total_available_places"] == 3
    assert len(prolific.calls_to("GET", "/api/v1/filters/")) == 1  # Prolific's choice ids, read to create it
    assert {"filter_id": "current-country-of-residence", "selected_values": ["0", "3"]} in sent["filters"]
    assert {"filter_id": "fluent-languages", "selected_values": ["0"]} in sent["filters"]
    codes = {code["code_type"]: code["code"] for code in sent["completion_codes"]}

    # Participants: one fails the qualification, one gives back, three complete.
    failing = participant(open_window, base, "PQFAIL", first, WAVE_ONE)
    answer_by_keyboard(failing, ["c", "c"])
    failing.locator("fieldset.item input[type=radio]").first.focus()
    answer_by_keyboard(failing, ["c", "c"])
    expect(failing.locator("#returned-code")).to_have_text(codes["FIXED_SCREENOUT"])
    leaving = participant(open_window, base, "PRETURN", first, WAVE_ONE)
    answer_by_keyboard(leaving, ["e", "n"])
    leaving.wait_for_url(f"{base}/work/{WAVE_ONE}/")
    press(leaving, "Give this page back and stop")
    expect(leaving.locator("#returned-code")).to_have_text(codes["OTHER"])
    for pid in ("PDONE", "PDTWO", "PREJECT"):
        done = participant(open_window, base, pid, first, WAVE_ONE)
        answer_by_keyboard(done, ["e", "n"])
        done.wait_for_url(f"{base}/work/{WAVE_ONE}/")
        answer_by_keyboard(done, ["e"])
        expect(done.locator("#completion-code")).to_have_text(codes["COMPLETED"])
    submissions = {pid: prolific.add_submission(first, pid, "AWAITING REVIEW", codes["COMPLETED"])
                   for pid in ("PDONE", "PDTWO", "PREJECT")}  # fmt: skip
    submissions["PRETURN"] = prolific.add_submission(first, "PRETURN", "RETURNED")
    submissions["PQFAIL"] = prolific.add_submission(first, "PQFAIL", "ACTIVE")

    # Settle: approve two, screen one out, reject one (its answers are no longer kept).
    press(author, "Read submissions from Prolific")
    expect(author.locator("#settle-table tbody tr")).to_have_count(5)
    kept_before = int(settle_cell(author, "PREJECT", "kept"))
    assert kept_before > 0
    author.get_by_label("choose PDONE").check()
    author.get_by_label("choose PDTWO").check()
    press(author, "Approve the chosen")
    author.get_by_label("choose PQFAIL").check()
    press(author, "Screen out the chosen one")
    author.get_by_label("choose PREJECT").check()
    author.locator("#reject-category").select_option("FAILED_INSTRUCTIONS")
    author.locator("#reject-message").fill(REJECTION)
    press(author, "Reject the chosen one")
    statuses = {pid: prolific.submissions[sub]["status"] for pid, sub in submissions.items()}
    assert statuses == {"PDONE": "APPROVED", "PDTWO": "APPROVED", "PREJECT": "REJECTED", "PRETURN": "RETURNED",
                        "PQFAIL": "SCREENED OUT"}  # fmt: skip
    assert settle_cell(author, "PREJECT", "kept") == "0"
    assert int(settle_cell(author, "PDONE", "kept")) > 0
    # Every code given is shown, and the table fits its box in a 1280 px wide window.
    assert settle_cell(author, "PQFAIL", "code") == f"{codes['FIXED_SCREENOUT']} (screened out)"
    assert settle_cell(author, "PRETURN", "code") == f"{codes['OTHER']} (returned)"
    assert settle_cell(author, "PDONE", "code") == f"{codes['COMPLETED']} (completed)"
    author.set_viewport_size({"width": 1280, "height": 900})
    box = author.locator("#settle-table").evaluate(
        "table => ({box: table.parentElement.clientWidth, scroll: table.parentElement.scrollWidth,"
        " table: table.getBoundingClientRect().width, page: document.documentElement.scrollWidth})"
    )
    assert box["scroll"] <= box["box"] and box["table"] <= box["box"] and box["page"] <= 1280, box

    # Bonuses per page: none for the rejected one; the cost shows them; the ledger is paid once.
    author.locator("#page-amount").fill("0.25")
    author.locator("#page-amount").focus()
    with author.expect_navigation():
        author.keyboard.press("Enter")
    expect(author.locator("#bonus-table tbody tr")).to_have_count(2)
    expect(author.locator("#bonus-table")).not_to_contain_text("PREJECT")
    cost_shown(author, 150, 3, Decimal("0.50"))
    press(author, "Pay the ledger")
    expect(author.locator("#bonus-table")).to_contain_text("Paid")
    # What was paid, next to the ceiling: two rewards, one screen-out payment, the two bonuses.
    cost_shown(author, 150, 2, Decimal("0.50"), screen_outs=1, column="paid")
    cost_shown(author, 150, 3, Decimal("0.50"))
    (paid,) = prolific.payments
    assert sorted(prolific.bonus_setups[paid]["lines"]) == [("PDONE", 25), ("PDTWO", 25)]

    # Wave 2: a clone with the items, created with codes of its own. Its Prolific page comes with wave 1 in
    # the blocklist; its author keeps wave 1's rejected participants out at the entry link too.
    author.goto(f"{base}/projects/{WAVE_ONE}/settings/")
    author.locator("#clone-slug").fill(WAVE_TWO)
    author.get_by_label("Copy the items too").check()
    press(author, "Clone as a new draft")
    author.goto(f"{base}/recruitment/projects/{WAVE_TWO}/prolific/")
    expect(author.locator("#blocked-studies")).to_have_value(f"{first}\n")
    expect(author.locator("#keep-out")).to_have_value("all")
    link_study(author, base, WAVE_TWO, {**study, "#places": "2"})
    author.locator("#keep-out").select_option("rejected")
    save_by_keyboard(author, {"#places": "2"})
    expect(author.locator("#keep-out")).to_have_value("rejected")
    cost_shown(author, 150, 2, Decimal(0))
    press(author, "Create the draft study on Prolific")
    press(author, "Publish")
    (second,) = set(prolific.studies) - {first}
    second_codes = {code["code"] for code in prolific.studies[second]["completion_codes"]}
    assert second_codes.isdisjoint(codes.values()) and len(second_codes) == 3
    assert {"filter_id": "previous_studies_blocklist", "selected_values": [first]} in prolific.studies[second][
        "filters"
    ]

    # Wave 1's rejected participant is turned away at wave 2's entry link, before any qualification test; a
    # newcomer gets in (to the test).
    rejected = open_window(360, 740)
    rejected.goto(f"{base}/enter/{WAVE_TWO}/?PROLIFIC_PID=PREJECT&STUDY_ID={second}&SESSION_ID=SE2-PREJECT")
    expect(rejected.locator("#turnaway")).to_have_attribute("data-reason", "kept-out")
    expect(rejected.locator("#turnaway-explanation")).to_contain_text("had a submission rejected in an earlier wave")
    returned_code = next(c["code"] for c in prolific.studies[second]["completion_codes"] if c["code_type"] == "OTHER")
    expect(rejected.locator("#returned-code")).to_have_text(returned_code)
    participant(open_window, base, "PNEW", second, WAVE_TWO)
    author.goto(f"{base}/recruitment/projects/{WAVE_TWO}/prolific/")
    expect(author.locator("#settle-table")).to_contain_text("PNEW")
    expect(author.locator("#settle-table")).not_to_contain_text("PREJECT")  # no session was made for them

    # More places while it runs: Prolific is told first.
    save_by_keyboard(author, {"#places": "4"})
    expect(author.locator("main")).to_contain_text("Saved and sent to the Prolific study.")
    assert prolific.studies[second]["total_available_places"] == 4
    assert prolific.calls_to("PATCH", rf"/api/v1/studies/{second}/")[-1].body == {"total_available_places": 4}

    # Paused and closed from the dashboard: the stand-in's study follows, paused, not stopped for good (Close
    # pauses; it could be reopened); wave 1's is left as it was.
    author.goto(f"{base}/projects/{WAVE_TWO}/")
    press(author, "Pause")
    assert prolific.studies[second]["status"] == "PAUSED"
    press(author, "Close")
    expect(author.get_by_role("heading", level=1)).to_have_text("Close this study?")
    with author.expect_navigation():
        author.keyboard.press("Enter")  # "Close the study" has the focus
    expect(author.locator("#study-status")).to_have_text("Closed")
    assert prolific.studies[second]["status"] == "PAUSED"
    actions = [call.body["action"] for call in prolific.calls_to("POST", rf"/api/v1/studies/{second}/transition/")]
    assert actions == ["PUBLISH", "PAUSE"]
    assert prolific.studies[first]["status"] == "ACTIVE"
    author.goto(f"{base}/recruitment/projects/{WAVE_TWO}/prolific/")
    expect(author.locator("#link-state")).to_have_text("Paused")
