"""Disagreement reasons on the real demo server: an author tags two items with the keyboard alone, one on a
desktop screen and one at 360 px, and reads the counts in the report."""

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import manage, save_screenshot

pytestmark = pytest.mark.browser

SLUG = "journey-reasons"
PAIRS = [
    {"id": "hum", "premise": "It vibrated under his hand.", "hypothesis": "It hummed quietly in his hand."},
    {
        "id": "park",
        "premise": "The park was named after Corbett in 1957.",
        "hypothesis": "The park used to be named after Corbett.",
    },
]


def tab_to(page, selector: str, presses: int = 40) -> None:
    """Press Tab until the focused element matches `selector`."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        if page.evaluate("(selector) => document.activeElement.matches(selector)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def overflowing(page) -> list[str]:
    """The elements reaching past the right edge of the window (empty when the page fits its width)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('body *')]
            .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
            .filter((e) => !e.closest('.scroll'))
            .map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : ''))"""
    )


def tag_by_keyboard(page, base: str, item_id: int, keys: str) -> None:
    page.goto(f"{base}/projects/{SLUG}/adjudication/{item_id}/")
    tab_to(page, "[data-reason-keys] input[type=checkbox]")
    for key in keys:
        page.keyboard.press(key)
    tab_to(page, "button[value=tag]")
    page.keyboard.press("Enter")
    status = page.locator("#reasons-status")
    expect(status).to_have_text("Reasons saved.")
    expect(status).to_be_focused()  # the keyboard user goes on from the result


def test_author_tags_reasons_by_keyboard_and_reads_the_counts(sign_in, demo_server, tmp_path):
    base = demo_server["url"]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(pair) + "\n" for pair in PAIRS))
    manage(demo_server, ["create_project", SLUG, "--task-type", "nli_label", "--owner", "author"])
    manage(demo_server, ["import_items", SLUG, str(pairs), "--format", "jsonl"])
    (ids,) = manage(
        demo_server,
        [
            "shell",
            "-c",
            f"from annotation.models import Item; print(list(Item.objects.filter(project__slug='{SLUG}')"
            ".order_by('id').values_list('id', flat=True)))",
        ],
    )
    first, second = json.loads(ids.strip().splitlines()[-1])

    desktop = sign_in("author")
    tag_by_keyboard(desktop, base, first, "l")  # Lexical
    expect(desktop.locator("#reason-tags")).to_contain_text("Lexical")

    phone = sign_in("author", 360, 740)
    tag_by_keyboard(phone, base, second, "lti")  # Lexical, Temporal reference, Implicature
    checked = phone.locator("[data-reason-keys] input:checked")
    expect(checked).to_have_count(3)
    assert overflowing(phone) == []
    save_screenshot(phone, "reasons-item-360")

    phone.goto(f"{base}/projects/{SLUG}/report/")
    counts = phone.locator("#reason-counts")
    expect(counts.locator("tr", has_text="Lexical").locator("td").first).to_have_text("2")
    expect(counts.locator("tr", has_text="Temporal reference").locator("td").first).to_have_text("1")
    expect(phone.locator("#disagreement-reasons")).to_contain_text("2 items carry reasons")
    assert overflowing(phone) == []
    save_screenshot(phone, "reasons-report-360")


WORKERS_SLUG = "journey-worker-reasons"


def test_a_worker_ticks_reasons_with_the_answers_by_keyboard_at_360px(sign_in, demo_server, tmp_path):
    base = demo_server["url"]
    pairs = tmp_path / "worker-pairs.jsonl"
    pairs.write_text("".join(json.dumps(pair) + "\n" for pair in PAIRS))
    manage(
        demo_server,
        [
            *("create_project", WORKERS_SLUG, "--task-type", "nli_label", "--owner", "author"),
            *("--items-per-page", "2", "--reason-taggers", "workers"),
        ],
    )
    manage(demo_server, ["import_items", WORKERS_SLUG, str(pairs), "--format", "jsonl"])

    phone = sign_in("worker1", 360, 740)
    phone.goto(f"{base}/work/{WORKERS_SLUG}/")
    expect(phone.locator(".work-reasons")).to_have_count(2)
    expect(phone.locator(".work-reasons").first).not_to_have_attribute("open", "")  # collapsed until opened
    second = phone.locator("fieldset.item").evaluate_all("(items) => items.map((f) => f.dataset.item)")[1]
    # Answer both items by their keys: the page then waits on its send button.
    phone.keyboard.press("e")
    phone.keyboard.press("n")
    expect(phone.locator("#submit-page")).to_be_focused()
    # Back to the second item's reasons, open them, tick the first category with Space.
    for _ in range(20):
        phone.keyboard.press("Shift+Tab")
        if phone.evaluate("(id) => document.activeElement.matches(`#item-${id} .work-reasons summary`)", second):
            break
    else:
        raise AssertionError("Shift+Tab never reached the second item's reasons")
    phone.keyboard.press("Enter")
    expect(phone.locator(f"#item-{second} .work-reasons")).to_have_attribute("open", "")
    phone.keyboard.press("Tab")
    phone.keyboard.press("Space")
    ticked = phone.locator(f"#item-{second} .work-reasons input:checked")
    expect(ticked).to_have_count(1)
    expect(ticked).to_have_value("Lexical")
    # A letter inside the list neither ticks a reason nor changes the answer ("c" would pick contradiction).
    phone.keyboard.press("c")
    expect(ticked).to_have_count(1)
    expect(phone.locator(f"#item-{second} input[type=radio]:checked")).to_have_value("n")
    # The page's draft keeps the ticked reason: a reload shows it ticked, its list open.
    expect(phone.locator("#save-state")).to_have_text("Saved")
    phone.reload()
    expect(ticked).to_have_count(1)
    expect(phone.locator(f"#item-{second} .work-reasons")).to_have_attribute("open", "")
    expect(phone.locator(f"#item-{second} input[type=radio]:checked")).to_have_value("n")
    assert overflowing(phone) == []
    save_screenshot(phone, "reasons-work-page-360")
    tab_to(phone, "#submit-page")
    with phone.expect_navigation():
        phone.keyboard.press("Enter")
    expect(phone.locator(".message.success")).to_contain_text("Saved 2 answers")

    # The author's report counts the worker's reason.
    author = sign_in("author")
    author.goto(f"{base}/projects/{WORKERS_SLUG}/report/")
    counts = author.locator("#reason-counts")
    expect(counts.locator("tr", has_text="Lexical").locator("td").first).to_have_text("1")
    expect(author.locator("#disagreement-reasons")).to_contain_text("1 item carries reasons")
