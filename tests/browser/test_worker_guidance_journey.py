"""Issue 54, items 1-3 in the browser: an author creating an atom-validity study sees the paper's criteria
(read-only) under the Instructions box, and an NLI study's guidance as a text to edit; a crowd worker's pages
say "Page k of N" and the answers so far, at 1280 and at 360 px, worked by keyboard alone; the import page
lists only the purposes the study's task type takes."""

import json

import pytest
from playwright.sync_api import expect

from annotation.tasktypes import get_task_type
from annotation.tasktypes.atom_validity import CRITERIA
from tests.browser.conftest import focused_item, manage, no_sideways_scroll, save_screenshot, too_wide
from tests.browser.test_journeys import answer_page, submit_by_keyboard

pytestmark = pytest.mark.browser
COUNTED = "guidance-counted"
ROWS = [
    {"id": f"g{i}", "premise": "A woman reads a map at a busy station.", "hypothesis": hypothesis}
    for i, hypothesis in enumerate(
        [
            "Someone is at a station.",
            "The woman is lost.",
            "The station is empty.",
            "A person holds a map.",
            "The woman is late for a train.",
            "Nobody is reading.",
            "The station is in a city.",
            "A woman is outdoors at night.",
        ]
    )
]


def test_an_author_sees_the_atom_validity_criteria_at_creation(sign_in, demo_server):
    base = demo_server["url"]
    author = sign_in("author")
    author.goto(f"{base}/projects/new/?task_type=atom_validity")
    guidance = author.locator("#id_guidance")
    expect(guidance).to_be_visible()
    for criterion in CRITERIA:
        expect(guidance).to_contain_text(criterion)
    expect(author.locator("#id_guidance-label")).to_contain_text("set by the task type")
    assert author.locator("[name=guidance]").count() == 0  # read-only: nothing the author could send
    # Right under the author's own Instructions box, where an author writing instructions reads it.
    follows = author.evaluate(
        """() => { const boxes = [...document.querySelectorAll("#settings-form .field")];
        const at = boxes.findIndex(f => f.querySelector("#id_instructions"));
        return !!boxes[at + 1].querySelector("#id_guidance"); }"""
    )
    assert follows, "the guidance should be the field after the Instructions box"
    save_screenshot(author, "guidance-atoms-new")
    # An NLI study's guidance is the author's to adjust: the same place, a text box holding the built-in text.
    with author.expect_navigation():
        author.select_option("#id_task_type", "nli_label")
    expect(author.locator("textarea[name=guidance]")).to_have_value(get_task_type("nli_label").guidance)


@pytest.fixture(scope="module")
def counted_study(demo_server, tmp_path_factory):
    rows = tmp_path_factory.mktemp("guidance") / "rows.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    manage(
        demo_server,
        [
            "create_project",
            COUNTED,
            "--task-type",
            "nli_label",
            "--owner",
            "author",
            "--items-per-page",
            "2",
            "--completion-pages",
            "2",
            "--redundancy",
            "2",
            "--max-annotations",
            "2",
        ],
    )
    manage(demo_server, ["import_items", COUNTED, str(rows), "--format", "jsonl"])
    return COUNTED


@pytest.mark.parametrize("width", [1280, 360])
def test_the_page_counter_by_keyboard(open_window, demo_server, counted_study, width):
    base = demo_server["url"]
    page = open_window(width, 800)
    page.goto(f"{base}/enter/{counted_study}/?PROLIFIC_PID=COUNT{width}&STUDY_ID=ST&SESSION_ID=SE{width}")
    page.wait_for_url(f"{base}/work/{counted_study}/")
    counter = page.locator("#page-progress")
    expect(counter).to_have_text("Page 1 of 2 · 0 answers so far")
    expect(counter).to_be_in_viewport()
    assert no_sideways_scroll(page), f"the page scrolls sideways at {width} px: {too_wide(page)}"
    answer_page(page, ["e", "n"])
    submit_by_keyboard(page)
    expect(counter).to_have_text("Page 2 of 2 · 2 answers so far")
    expect(counter).to_be_in_viewport()
    # A taller bar must not hide the next item: answering the first scrolls the second in below the bar.
    first = focused_item(page)
    page.keyboard.press("e")
    page.wait_for_function(
        "(first) => document.activeElement.closest('fieldset.item')?.dataset.item !== first", arg=first
    )
    page.wait_for_timeout(500)  # the smooth scroll settles
    legend, bar = page.evaluate("""() => [
        document.activeElement.closest('fieldset.item').querySelector('legend').getBoundingClientRect().top,
        document.getElementById('page-status').getBoundingClientRect().bottom]""")
    assert legend >= bar, f"at {width} px the next item's legend ({legend}) is under the bar ({bar})"
    # The counter sits in the sticky bar with the clock: still in sight once the worker has scrolled down.
    page.keyboard.press("End")
    expect(counter).to_be_in_viewport()
    assert no_sideways_scroll(page), f"the page scrolls sideways at {width} px: {too_wide(page)}"
    save_screenshot(page, f"guidance-counter-{width}")


def test_the_import_page_lists_only_valid_purposes(sign_in, demo_server, tmp_path):
    base = demo_server["url"]
    manage(
        demo_server,
        ["create_project", "guidance-atoms", "--task-type", "atom_validity", "--owner", "author", "--status", "draft"],
        ["create_project", "guidance-labels", "--task-type", "nli_label", "--owner", "author", "--status", "draft"],
    )
    rows = tmp_path / "pairs.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in ROWS[:2]))
    author = sign_in("author")
    offered = {}
    for slug in ("guidance-atoms", "guidance-labels"):
        author.goto(f"{base}/projects/{slug}/")
        author.select_option("#id_format", "jsonl")
        author.set_input_files("#id_file", str(rows))
        author.get_by_role("button", name="Upload and preview").click()
        author.wait_for_url("**/import/*/**")
        offered[slug] = author.locator("#id_purpose option").evaluate_all("options => options.map(o => o.value)")
    assert offered == {"guidance-atoms": ["data", "gold"], "guidance-labels": ["data", "gold", "qualification"]}
    save_screenshot(author, "guidance-import-purposes")
    # The qualification page sends an author to the import only where the import can take the items.
    author.goto(f"{base}/projects/guidance-atoms/qualification/")
    expect(author.locator("#test-items-h + p")).not_to_contain_text("import")
    author.goto(f"{base}/projects/guidance-labels/qualification/")
    expect(author.locator("#test-items-h + p")).to_contain_text("import rows as qualification test items")
