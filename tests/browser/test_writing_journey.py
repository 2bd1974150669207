"""Hypothesis writing on the real demo server: an author sets up a writing project linked to a validation
project, a worker writes three hypotheses on a phone-sized screen by keyboard, the author sends them to
validation, two workers validate (the writer is kept out) and the SNLI export gives gold by the 3-of-5 rule."""

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import (
    create_study,
    focused_item,
    import_through_preview,
    next_item,
    no_sideways_scroll,
    save_screenshot,
    too_wide,
)

pytestmark = pytest.mark.browser

WRITING, VALIDATION = "journey-writing", "journey-validation"
PREMISE = "A woman in a green apron sells flowers from a cart on a busy corner."
WRITTEN = {
    "e": "Someone is selling flowers outside.",
    "n": "The woman owns the flower cart.",
    "c": "The woman is swimming in a lake.",
}
# Each validator's label for the sentence written for each target. With the writer's label first and a
# redundancy of 3: e gets e,e,e and n gets n,n,n (gold: 3 agree); c gets c,c,n (no label has 3: "-").
VALIDATORS = {"worker2": {"e": "e", "n": "n", "c": "c"}, "worker3": {"e": "e", "n": "n", "c": "n"}}
EXPECTED = {
    "e": (["entailment"] * 3, "entailment"),
    "n": (["neutral"] * 3, "neutral"),
    "c": (["contradiction", "contradiction", "neutral"], "-"),
}


def write_by_keyboard(page):
    """Type the three sentences, moving with Tab; returns the written item's id."""
    item = focused_item(page)
    assert item and page.evaluate("() => document.activeElement.name") == f"value_{item}.e"
    for number, target in enumerate("enc"):
        if number:
            page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.name") == f"value_{item}.{target}"
        page.keyboard.type(WRITTEN[target] if target != "c" else PREMISE)  # the last one copies the premise
    return item


def test_written_hypotheses_are_validated_and_exported_with_snli_gold(sign_in, demo_server, tmp_path):
    base = demo_server["url"]
    premises = tmp_path / "premises.jsonl"
    premises.write_text(json.dumps({"id": "flowers", "premise": PREMISE}) + "\n")
    author = sign_in("author")
    # The validation project: 3-way labels, the writer's vote and two validators'.
    create_study(
        author,
        base,
        "nli_label",
        {
            "slug": VALIDATION,
            "title": "Journey: validate",
            "items_per_page": "3",
            "redundancy": "3",
            "max_annotations": "3",
        },
        {"status": "published"},
    )
    # The writing project, linked to it.
    create_study(
        author,
        base,
        "hypothesis_writing",
        {"slug": WRITING, "title": "Journey: write", "items_per_page": "1", "validation_project": VALIDATION},
        {"status": "published"},
    )
    import_through_preview(author, "jsonl", premises)
    expect(author.locator(".message.success")).to_contain_text("Imported 1 example (1 new item)")
    expect(author.locator("#validation-state")).to_contain_text("0 written pairs sent so far")

    # The writer, on a phone-sized screen, by keyboard alone.
    writer = sign_in("worker1", 360, 740)
    writer.goto(f"{base}/work/{WRITING}/")
    expect(writer.locator("dl.pair")).to_contain_text(PREMISE)
    item = write_by_keyboard(writer)
    box = writer.locator(f"textarea[name='value_{item}.c']")
    writer.keyboard.press("Enter")  # one sentence per box: no line break, no submit (on to the send button)
    expect(box).to_have_value(PREMISE)
    assert writer.viewport_size["width"] == 360 and no_sideways_scroll(writer), too_wide(writer)
    save_screenshot(writer, "journey-writing-phone")
    with writer.expect_navigation():
        writer.keyboard.press("Control+Enter")
    # Refused: the error names the box, focus is back in it, and what was typed is still there.
    expect(writer.locator("#form-error")).to_contain_text(f"answers[{item}].value.c")
    expect(writer.locator("#form-error")).to_contain_text("Contradicted: this repeats the premise")
    assert writer.evaluate("() => document.activeElement.name") == f"value_{item}.c"
    expect(writer.locator(f"textarea[name='value_{item}.e']")).to_have_value(WRITTEN["e"])
    writer.keyboard.press("Control+A")
    writer.keyboard.type(WRITTEN["c"])
    with writer.expect_navigation():
        writer.keyboard.press("Control+Enter")
    expect(writer.locator(".message.success")).to_contain_text("Saved 1 answer")

    # One click sends the three pairs; a second click sends nothing new.
    author.reload()
    author.get_by_role("button", name="Send to validation").click()
    expect(author.locator(".message.success")).to_contain_text(f"Sent 3 new pairs to {VALIDATION} (0 sent before)")
    author.get_by_role("button", name="Send to validation").click()
    expect(author.locator(".message.success")).to_contain_text(f"Sent 0 new pairs to {VALIDATION} (3 sent before)")
    expect(author.locator("#validation-state")).to_contain_text("3 written pairs sent so far")

    # The writer is never given their own sentences to validate.
    writer.goto(f"{base}/work/{VALIDATION}/")
    expect(writer.locator(".empty")).to_contain_text("There is no work for you in this project")

    by_sentence = {sentence: target for target, sentence in WRITTEN.items()}
    for validator, labels in VALIDATORS.items():
        page = sign_in(validator)
        page.goto(f"{base}/work/{VALIDATION}/")
        expect(page.locator("fieldset.item")).to_have_count(3)
        current = focused_item(page)
        for index in range(3):
            if index:
                current = next_item(page, current)
            hypothesis = page.locator(f"#item-{current} dl.pair dd").nth(1).inner_text()
            page.keyboard.press(labels[by_sentence[hypothesis]])
        expect(page.locator("#unanswered")).to_contain_text("All answered")
        with page.expect_navigation():
            page.keyboard.press("Control+Enter")
        expect(page.locator(".message.success")).to_contain_text("Saved 3 answers")

    # The validation project's SNLI export: the writer's label first, gold by 3 of 5.
    author.goto(f"{base}/projects/{VALIDATION}/")
    with author.expect_download() as download:
        author.get_by_role("button", name="snli", exact=True).click()
    with open(download.value.path()) as handle:
        records = {record["sentence2"]: record for record in map(json.loads, handle)}
    assert set(records) == set(WRITTEN.values())
    for target, (labels, gold) in EXPECTED.items():
        record = records[WRITTEN[target]]
        assert (record["annotator_labels"], record["gold_label"]) == (labels, gold), target
        assert record["sentence1"] == PREMISE
        assert record["pairID"].startswith(f"{WRITING}#{item}r") and record["pairID"].endswith(target)
        assert record["captionID"] == f"{WRITING}#{item}"

    # The writing project's report: the writer's validation rate per target.
    author.goto(f"{base}/projects/{WRITING}/report/")
    rows = author.locator("section.card table.report-table tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("Entailed")
    expect(rows.nth(0)).to_contain_text("100%")
    expect(rows.nth(2)).to_contain_text("Contradicted")
    expect(rows.nth(2)).to_contain_text("0%")
    expect(author.locator("main")).to_contain_text("no common answer to agree on")
    save_screenshot(author, "journey-writing-report")
