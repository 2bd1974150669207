"""Labels with explanations, then their validation (VariErr's two rounds), on the real demo server and by
keyboard alone: a worker on a phone-sized screen picks two labels, explains each and highlights words of
the premise and the hypothesis; the author sends the explanations to validation; the writer is never given
their own; a second worker at desktop size judges them; the writer judges their own apart (the self-check,
on the phone); the author reads the report and exports."""

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import (
    create_study,
    focused_item,
    import_through_preview,
    next_item,
    save_screenshot,
    tab_to_link,
)
from tests.browser.test_annotate_each_task_type import assert_fits_and_is_accessible

pytestmark = pytest.mark.browser

EXPLAIN, VALIDATE = "journey-explain", "journey-explain-check"
PREMISE = "Two children build a sandcastle while the tide comes in."
HYPOTHESIS = "The children are at the beach."
WHY = {
    "e": "A sandcastle and a tide mean they are on a beach.",
    "n": "They could be at a lake shore rather than the sea.",
}


def span(text: str, *words: str) -> list[list[int]]:
    return [[text.index(word), text.index(word) + len(word)] for word in words]


# What the writer highlights with the arrow keys and Space (see explain_by_keyboard).
SPANS = {
    "e": {"premise_spans": span(PREMISE, "sandcastle", "tide"), "hypothesis_spans": span(HYPOTHESIS, "beach.")},
    "n": {"premise_spans": span(PREMISE, "children"), "hypothesis_spans": span(HYPOTHESIS, "children")},
}


def press(page, *keys: str) -> None:
    for key in keys:
        page.keyboard.press(key)


def focused(page) -> str:
    return page.evaluate("() => document.activeElement.textContent.trim() || document.activeElement.tagName")


def explain_by_keyboard(page, item: str) -> None:
    """Pick entailment and neutral by their keys, explain each, highlight words with arrows and Space."""
    press(page, "e")  # picks entailment and opens its box
    assert page.evaluate("() => document.activeElement.matches('textarea')")
    page.keyboard.type(WHY["e"])
    press(page, "Enter")  # on to the premise's words
    assert focused(page) == "Two"
    press(page, *["ArrowRight"] * 4)
    assert focused(page) == "sandcastle"
    press(page, "Space", *["ArrowRight"] * 3)
    assert focused(page) == "tide"
    press(page, "Space", "Tab", "End")  # the hypothesis's words: one Tab away
    assert focused(page) == "beach."
    press(page, "Space")
    press(page, "n")  # from a word: picks neutral and opens its box
    assert page.evaluate("() => document.activeElement.matches('textarea')")
    page.keyboard.type(WHY["n"])
    press(page, "Enter", "ArrowRight", "Space", "Tab", "ArrowRight", "Space")
    assert focused(page) == "children"
    pressed = page.locator(f"#item-{item} button.word[aria-pressed=true]")
    expect(pressed).to_have_count(5)
    press(page, "Enter")  # on a marked word: the page's Enter (on to the review), never an unmark
    expect(pressed).to_have_count(5)
    assert focused(page) != "children"


def test_explanations_are_validated_by_others_and_reported(sign_in, demo_server, tmp_path):
    base = demo_server["url"]
    rows = tmp_path / "pairs.jsonl"
    rows.write_text(json.dumps({"id": "sandcastle", "premise": PREMISE, "hypothesis": HYPOTHESIS}) + "\n")
    author = sign_in("author")
    # Switching the new study's task type brings that type's defaults, not the previous type's.
    author.goto(f"{base}/projects/new/?task_type=nli_label")
    author.fill("#id_slug", "switched")
    with author.expect_navigation():
        author.select_option("#id_task_type", "label_explanation")
    expect(author.locator("#id_redundancy")).to_have_value("4")  # VariErr: four annotators an item
    expect(author.locator("#id_slug")).to_have_value("switched")  # what was typed stays
    create_study(
        author,
        base,
        "explanation_validation",
        {"slug": VALIDATE, "title": "Journey: judge explanations", "redundancy": "1", "max_annotations": "1"},
        {"status": "published"},
    )
    create_study(
        author,
        base,
        "label_explanation",
        {
            "slug": EXPLAIN,
            "title": "Journey: explain labels",
            "items_per_page": "1",
            "validation_project": VALIDATE,
            "redundancy": "2",  # two writers per item: each pair gets the other one as its validator
            "max_annotations": "2",
        },
        {"status": "published"},
    )
    import_through_preview(author, "jsonl", rows)
    expect(author.locator(".message.success")).to_contain_text("Imported 1 example (1 new item)")

    # The writer, on a phone-sized screen, by keyboard alone.
    writer = sign_in("worker1", 360, 740)
    writer.goto(f"{base}/work/{EXPLAIN}/")
    expect(writer.locator("dl.pair")).to_contain_text(PREMISE)
    item = focused_item(writer)
    assert item
    explain_by_keyboard(writer, item)
    # The draft is saved as the worker goes: a reload brings back the labels, explanations and highlights.
    expect(writer.locator("#save-state")).to_have_text("Saved")
    writer.reload()
    expect(writer.locator(f"#item-{item} button.word[aria-pressed=true]")).to_have_count(5)
    expect(writer.locator(f"#item-{item} .explained[data-label=n] textarea")).to_have_value(WHY["n"])
    expect(writer.locator(f"#item-{item} .explained[data-label=c]")).to_be_hidden()
    expect(writer.locator("#unanswered")).to_contain_text("All answered")
    assert_fits_and_is_accessible(writer, 360)
    save_screenshot(writer, "journey-explain-phone")
    with writer.expect_navigation():
        press(writer, "Control+Enter")
    expect(writer.locator(".message.success")).to_contain_text("Saved 1 answer")

    author.goto(f"{base}/projects/{EXPLAIN}/")
    expect(author.locator("#validation-needs")).to_contain_text("Round 2 needs at least 2 writers per item")
    expect(author.locator("#validation-needs")).to_contain_text("Each pair gets 1 validator")
    author.get_by_role("button", name="Send to validation").click()
    expect(author.locator(".message.success")).to_contain_text(f"Sent 2 new pairs to {VALIDATE} (0 sent before)")

    # The writer is never given their own explanations to judge.
    writer.goto(f"{base}/work/{VALIDATE}/")
    expect(writer.locator(".empty")).to_contain_text("There is no work for you in this project")

    # Another worker judges both, at desktop size, by keyboard: entailment's makes sense, neutral's does not.
    judge = sign_in("worker2")
    judge.goto(f"{base}/work/{VALIDATE}/")
    expect(judge.locator("fieldset.item")).to_have_count(2)
    current = focused_item(judge)
    for index in range(2):
        if index:
            current = next_item(judge, current)
        shown = judge.locator(f"#item-{current}")
        label = shown.locator(".explained-label").inner_text()
        expect(shown.locator(".explanation")).to_have_text(WHY["e" if label == "Entailment" else "n"])
        marked = ["sandcastle", "tide", "beach."] if label == "Entailment" else ["children", "children"]
        expect(shown.locator("dl.pair mark")).to_have_text(marked)
        press(judge, "y" if label == "Entailment" else "n")
    expect(judge.locator("#unanswered")).to_contain_text("All answered")
    assert_fits_and_is_accessible(judge, 1200)
    save_screenshot(judge, "journey-explain-judge")
    with judge.expect_navigation():
        press(judge, "Control+Enter")
    expect(judge.locator(".message.success")).to_contain_text("Saved 2 answers")

    # Before the writer's self-check nothing is an error: both labels wait for it, and the study page says
    # whose self-check is still to do.
    author.goto(f"{base}/projects/{EXPLAIN}/report/")
    waiting = author.locator("table", has_text="Validated (errors removed)")
    expect(waiting.locator("tbody tr td").last).to_have_text("Entailment, Neutral")
    author.goto(f"{base}/projects/{EXPLAIN}/")
    expect(author.locator("#self-check-table tbody td")).to_have_text(["worker1", "0", "2"])

    # The writer's own self-check (kept apart from the judge's votes), on the phone, by keyboard: from the
    # study's no-work page to their explanations; both make sense to them, neutral's too.
    writer.goto(f"{base}/")
    expect(writer.locator(".self-check-todo")).to_contain_text("2 still to judge")
    writer.goto(f"{base}/work/{EXPLAIN}/")
    expect(writer.locator("#self-check")).to_contain_text("2 of your explanations wait")
    tab_to_link(writer, "judge your explanations")
    with writer.expect_navigation():
        press(writer, "Enter")
    expect(writer.locator("fieldset.item")).to_have_count(2)
    expect(writer.locator("fieldset.item .explanation")).to_have_text([WHY["e"], WHY["n"]])
    expect(writer.locator("fieldset.item").nth(0).locator("dl.pair mark")).to_have_text(
        ["sandcastle", "tide", "beach."]
    )
    press(writer, "y", "y")
    expect(writer.locator("#unanswered")).to_contain_text("All answered")
    assert_fits_and_is_accessible(writer, 360)
    save_screenshot(writer, "journey-explain-self-check")
    with writer.expect_navigation():
        press(writer, "Enter")
    expect(writer.locator(".message.success")).to_contain_text("2 judgments of your explanations saved")
    expect(writer.locator("#self-check-done")).to_contain_text("You have judged all your explanations")

    # The author's report: agreement on the label sets, and the writer's explanations judged per label.
    author.goto(f"{base}/projects/{EXPLAIN}/report/")
    main = author.locator("main")
    expect(main).to_contain_text("Agreement on the label sets")
    expect(main).to_contain_text("MASI")
    writers = author.locator("table", has_text="Validation rate")
    expect(writers.locator("tbody tr")).to_have_count(2)
    expect(writers.locator("tbody tr").nth(0)).to_contain_text("Entailment")
    expect(writers.locator("tbody tr").nth(0)).to_contain_text("100%")
    expect(writers.locator("tbody tr").nth(1)).to_contain_text("Neutral")
    expect(writers.locator("tbody tr").nth(1)).to_contain_text("0%")
    # VariErr's rule follows the writer's own judgments: neutral is supported although the judge said no.
    per_item = author.locator("table", has_text="Validated (errors removed)")
    expect(per_item.locator("tbody tr")).to_contain_text("Entailment, Neutral")
    save_screenshot(author, "journey-explain-report")

    # The export carries the labels, the explanations and the highlighted offsets as typed and pressed.
    author.goto(f"{base}/projects/{EXPLAIN}/")
    with author.expect_download() as download:
        author.get_by_role("button", name="jsonl", exact=True).click()
    with open(download.value.path()) as handle:
        (record,) = map(json.loads, handle)
    (answer,) = record["nli_studio"]["annotations"]
    assert answer["value"] == {
        "labels": {label: {"explanation": WHY[label], **SPANS[label]} for label in ("e", "n")},
        "idk": False,
    }
    assert answer["labels"] == ["e", "n"]
    assert answer["explanation_words"] == {label: len(WHY[label].split()) for label in ("e", "n")}
