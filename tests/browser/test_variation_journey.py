"""Labels with explanations, then their validation (VariErr's two rounds), on the real demo server and by
keyboard alone: a worker on a phone-sized screen picks two labels, explains each and highlights words of
the premise and the hypothesis; the author sends the explanations to validation; the writer is never given
their own; a second worker at desktop size judges them; the writer judges their own apart (the self-check,
on the phone); the author reads the report and exports. Then a whole VariErr study with three writers (one by
keyboard at 360 px): round 2 created by the author and settled by the writers, labels pending until the
self-checks, two rounds of reasons, and every export validated and read back."""

import ast
import csv
import json
import zipfile

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import (
    assert_fits_and_is_accessible,
    create_study,
    focused_item,
    import_through_preview,
    next_item,
    save_screenshot,
    tab_to_link,
)
from tests.browser.test_dataset_journey import validated

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


# The acceptance journey of issue 39: three writers, round 2 created by the author, every pair settling.
STUDY, ROUND_TWO = "journey-varierr", "journey-varierr-validation"
PARK_PREMISE = "A woman walks a dog through the snowy park."
PARK_HYPOTHESIS = "The woman is outside in winter."
PAIRS = {"sandcastle": (PREMISE, HYPOTHESIS), "park": (PARK_PREMISE, PARK_HYPOTHESIS)}
# What each desktop writer writes per item: {label: (explanation, premise words, hypothesis words)}.
# worker1 writes by keyboard at 360 px: sandcastle as explain_by_keyboard does, park below.
PARK_BY_KEYBOARD = "Snow in a park means it is cold outside, so winter."
WRITTEN = {
    "worker2": {
        "sandcastle": {"e": ("Sandcastles are built on the sand of a beach.", ["sandcastle"], ["beach."])},
        "park": {"e": ("A snowy park is outdoors and snow falls in winter.", ["snowy"], ["winter."])},
    },
    "worker3": {
        "sandcastle": {"n": ("A lake has sand and a shore where children can play.", ["tide"], ["beach."])},
        "park": {"n": ("The snow could be left over from a cold early spring.", ["park."], ["winter."])},
    },
}
WITHDRAWN = WRITTEN["worker3"]["park"]["n"][0]  # the one explanation its own writer judges as not making sense


def write_by_mouse(page, writer: str) -> None:
    """One page of one item: tick each label, type its explanation, click the words it rests on, submit."""
    item = page.locator("fieldset.item").get_attribute("data-item")
    premise = page.locator("dl.pair dd").first.inner_text()
    key = next(name for name, (text, _) in PAIRS.items() if text == premise)
    for label, (why, premise_words, hypothesis_words) in WRITTEN[writer][key].items():
        page.locator(f"#item-{item} input[name=pick_{item}][value={label}]").check()
        box = page.locator(f"#item-{item} .explained[data-label={label}]")
        box.locator("textarea").fill(why)
        for side, words in (("premise", premise_words), ("hypothesis", hypothesis_words)):
            for word in words:
                box.locator(f".words[data-for={side}]").get_by_role("button", name=word, exact=True).click()
    expect(page.locator("#unanswered")).to_contain_text("All answered")
    with page.expect_navigation():
        page.get_by_role("button", name="Submit page").click()
    expect(page.locator(".message.success")).to_contain_text("Saved 1 answer")


def write_by_keyboard(page) -> None:
    """One page of one item, by keyboard alone at 360 px, submitted with Ctrl+Enter."""
    item = focused_item(page)
    assert item
    if page.locator("dl.pair dd").first.inner_text() == PREMISE:
        explain_by_keyboard(page, item)
    else:
        press(page, "e")
        page.keyboard.type(PARK_BY_KEYBOARD)
        press(page, "Enter", "End")  # the premise's last word
        assert focused(page) == "park."
        press(page, "Space", "Tab", "End")
        assert focused(page) == "winter."
        press(page, "Space", "Enter")
        expect(page.locator(f"#item-{item} button.word[aria-pressed=true]")).to_have_count(2)
    expect(page.locator("#unanswered")).to_contain_text("All answered")
    assert_fits_and_is_accessible(page, 360)
    with page.expect_navigation():
        press(page, "Control+Enter")
    expect(page.locator(".message.success")).to_contain_text("Saved 1 answer")


def validate_every_pair(page, expected: int, own: set[str]) -> None:
    """Round 2 by the answer keys: every pair shown makes sense; none is the validator's own explanation."""
    page.goto(page.url.split("/work/")[0] + f"/work/{ROUND_TWO}/")
    shown = page.locator("fieldset.item")
    expect(shown).to_have_count(expected)
    assert not own & set(shown.locator(".explanation").all_inner_texts())
    current = focused_item(page)
    for index in range(expected):
        if index:
            current = next_item(page, current)
        press(page, "y")
    expect(page.locator("#unanswered")).to_contain_text("All answered")
    with page.expect_navigation():
        press(page, "Control+Enter")
    expect(page.locator(".message.success")).to_contain_text(f"Saved {expected} answers")


def download(page, fmt: str, folder) -> object:
    page.goto(page.url.split("/projects/")[0] + f"/projects/{STUDY}/")
    with page.expect_download() as started:
        page.locator("#export-download").get_by_role("button", name=fmt, exact=True).click()
    path = folder / f"{fmt}-{started.value.suggested_filename}"
    started.value.save_as(path)
    return path


def tag_reasons(page, base: str, round_number: int, keys: str) -> None:
    """From the study page's items table to the sandcastle's page: tick exactly these reasons for a round."""
    page.goto(f"{base}/projects/{STUDY}/")
    page.locator("tr", has_text=PREMISE).get_by_role("link").first.click()
    page.locator("#reasons select[name=round]").select_option(str(round_number))
    for box in page.locator("[data-reason-keys] input[type=checkbox]").all():
        box.set_checked(box.get_attribute("data-key") in keys)
    page.get_by_role("button", name="Save my reasons").click()
    expect(page.locator("#reasons-status")).to_have_text("Reasons saved.")


def item_rows(page, base: str):
    page.goto(f"{base}/projects/{STUDY}/report/")
    return page.locator("table", has_text="Validated (errors removed)").locator("tbody tr")


def test_three_writers_settle_round_two_and_export_every_round(sign_in, demo_server, tmp_path):
    base = demo_server["url"]
    rows = tmp_path / "pairs.jsonl"
    rows.write_text("".join(json.dumps({"id": k, "premise": p, "hypothesis": h}) + "\n" for k, (p, h) in PAIRS.items()))
    author = sign_in("author")
    create_study(
        author,
        base,
        "label_explanation",
        {"slug": STUDY, "title": "Journey: VariErr", "items_per_page": "1", "redundancy": "3", "max_annotations": "3"},
        {"status": "published"},
    )
    import_through_preview(author, "jsonl", rows)
    expect(author.locator(".message.success")).to_contain_text("Imported 2 examples (2 new items)")
    author.goto(f"{base}/projects/{STUDY}/")
    expect(author.locator("#validation-needs")).to_contain_text("Each pair gets 2 validators")

    # Round 1: worker1 by keyboard on a phone, the two others by mouse at desktop size, every item each.
    phone = sign_in("worker1", 360, 740)
    desks = {name: sign_in(name) for name in WRITTEN}
    for _ in PAIRS:
        phone.goto(f"{base}/work/{STUDY}/")
        write_by_keyboard(phone)
        for name, page in desks.items():
            page.goto(f"{base}/work/{STUDY}/")
            write_by_mouse(page, name)

    # The author creates round 2 from the study page: 7 pairs (worker1 explained two labels of the sandcastle).
    author.goto(f"{base}/projects/{STUDY}/")
    expect(author.locator("#validation-state")).to_contain_text("No validation project yet")
    author.get_by_role("button", name="Send to validation").click()
    expect(author.locator(".message.success")).to_contain_text(f"Sent 7 new pairs to {ROUND_TWO} (0 sent before)")

    # Each writer judges the other writers' pairs only: worker1 the 4 of the others, each other writer 5.
    validate_every_pair(phone, 4, {WHY["e"], WHY["n"], PARK_BY_KEYBOARD})
    for name, page in desks.items():
        validate_every_pair(page, 5, {why for labels in WRITTEN[name].values() for why, _, _ in labels.values()})
    for page in (phone, *desks.values()):
        page.goto(f"{base}/work/{ROUND_TWO}/")
        expect(page.locator(".empty")).to_contain_text("There is no work for you in this project")

    # Every pair settled: the writers' table shows each written pair validated.
    author.goto(f"{base}/projects/{STUDY}/report/")
    writers = author.locator("table", has_text="Validation rate").locator("tbody tr")
    expect(writers).to_have_count(4)  # (writer, label): worker1 e and n, worker2 e, worker3 n
    for row in range(4):
        cells = writers.nth(row).locator("td")
        expect(cells.nth(4)).to_have_text(cells.nth(2).inner_text())  # Validated = Written
        expect(cells.nth(6)).to_have_text("100%")
    # Before the self-checks every label waits (pending), none is an error.
    per_item = author.locator("table", has_text="Validated (errors removed)").locator("tbody tr")
    expect(per_item).to_have_count(2)
    for row in range(2):
        expect(per_item.nth(row).locator("td").nth(5)).to_have_text("—")  # Errors
        expect(per_item.nth(row).locator("td").nth(7)).not_to_have_text("—")  # Pending
    early = [json.loads(line) for line in download(author, "varierr", tmp_path).open()]
    assert all(record["error_labels"] == [] and record["nli_studio"]["pending_labels"] for record in early), early
    expect(author.locator("#self-check-table tbody tr")).to_have_count(3)

    # The self-checks: each writer judges their own explanations; worker3 withdraws the park's neutral.
    phone.goto(f"{base}/work/{STUDY}/")
    tab_to_link(phone, "judge your explanations")
    with phone.expect_navigation():
        press(phone, "Enter")
    expect(phone.locator("fieldset.item")).to_have_count(3)
    press(phone, "y", "y", "y")
    assert_fits_and_is_accessible(phone, 360)
    with phone.expect_navigation():
        press(phone, "Enter")
    expect(phone.locator(".message.success")).to_contain_text("3 judgments of your explanations saved")
    for name, page in desks.items():
        page.goto(f"{base}/work/{STUDY}/")
        with page.expect_navigation():
            page.get_by_role("link", name="judge your explanations").click()
        texts = page.locator("fieldset.item .explanation").all_inner_texts()
        assert sorted(texts) == sorted(why for labels in WRITTEN[name].values() for why, _, _ in labels.values())
        press(page, *["n" if text == WITHDRAWN else "y" for text in texts])
        with page.expect_navigation():
            press(page, "Enter")
        expect(page.locator(".message.success")).to_contain_text("2 judgments of your explanations saved")

    # The verdicts: nothing pending; the park's neutral (its only writer withdrew it) is an error.
    rows_now = item_rows(author, base)
    park, sandcastle = rows_now.filter(has_text="park"), rows_now.filter(has_text="sandcastle")
    for row in (park, sandcastle):
        expect(row.locator("td").nth(7)).to_have_text("—")
    expect(park.locator("td").nth(5)).to_have_text("Neutral")
    expect(park.locator("td").nth(4)).to_have_text("Entailment")
    expect(sandcastle.locator("td").nth(4)).to_have_text("Entailment, Neutral")
    expect(sandcastle.locator("td").nth(5)).to_have_text("—")
    save_screenshot(author, "journey-varierr-report")

    # Reasons for disagreement on the sandcastle in both rounds: the author tags round 1, then round 2 as its
    # first tagger; an admin is round 2's second (the round's result: the reasons both gave).
    tag_reasons(author, base, 1, "l")
    tag_reasons(author, base, 2, "lt")
    tag_reasons(sign_in("admin"), base, 2, "l")

    # The exports: each accepted by validate_dataset.
    files = {fmt: download(author, fmt, tmp_path) for fmt in ("varierr", "livenli", "taxonomy", "jsonl")}
    for fmt, path in files.items():
        validated(demo_server, path, fmt)
    varierr = {record["id"]: record for record in map(json.loads, files["varierr"].open())}
    assert varierr["park"]["error_labels"] == ["neutral"] and varierr["sandcastle"]["error_labels"] == []
    assert not any(record["nli_studio"]["pending_labels"] for record in varierr.values())
    entries = [entry for record in varierr.values() for label in LONG for entry in record[label]]
    assert len(entries) == 7
    for entry in entries:
        # self_corrected exactly where the author's own judgment (first) is not "makes sense".
        assert entry["self_corrected"] == (entry["reason"] == WITHDRAWN), entry
        own = entry["judgments"][0]
        assert own["annotator"] == entry["annotator"] and own["makes_sense"] == (entry["reason"] != WITHDRAWN)
        peers = entry["judgments"][1:]
        assert len(peers) == 2 and entry["annotator"] not in {j["annotator"] for j in peers}, entry

    # Both rounds of reasons, in the taxonomy export and in jsonl; livenli's column has the latest result.
    taxonomy = {record["pairID"]: record for record in map(json.loads, files["taxonomy"].open())}
    assert sorted(taxonomy) == ["sandcastle"]  # the pair tagged, only
    jsonl = {record["id"]: record for record in map(json.loads, files["jsonl"].open())}
    rounds = taxonomy["sandcastle"]["nli_studio"]["reasons"]
    assert sorted(rounds) == ["1", "2"], rounds
    assert rounds["1"]["a1"] == ["Lexical"]
    assert "Lexical" in rounds["2"]["a1"] and len(rounds["2"]["a1"]) == 2 and rounds["2"]["a2"] == ["Lexical"]
    assert rounds["2"]["agg"] == ["Lexical"]
    assert taxonomy["sandcastle"]["a2"] == ["Lexical"]  # the record's own fields: the latest round
    in_jsonl = jsonl["sandcastle"]["nli_studio"]["reasons"]
    assert sorted(in_jsonl) == ["1", "2"]
    for number, fields in rounds.items():  # the same rounds, each with its result beside them
        assert {name: in_jsonl[number][name] for name in fields} == fields
        assert in_jsonl[number]["reasons"] == ["Lexical"]
    assert "reasons" not in jsonl["park"]["nli_studio"]

    # livenli: one row per explanation, each with its own label's highlights.
    with files["livenli"].open(newline="", encoding="utf-8") as handle:
        livenli = list(csv.DictReader(handle))
    assert len(livenli) == 7
    marked = {}
    for row in livenli:
        highlights = [ast.literal_eval(row[column])["entities"] for column in ("highlight_p", "highlight_h")]
        marked[row["explanation"]] = [[entity["text"] for entity in side] for side in highlights]
        assert row["taxonomy"] == ("Lexical" if row["premise"] == PREMISE else ""), row
    assert marked[WHY["e"]] == [["sandcastle", "tide"], ["beach."]]
    assert marked[WHY["n"]] == [["children"], ["children"]]
    assert marked[PARK_BY_KEYBOARD] == [["park."], ["winter."]]
    for labels in WRITTEN.values():
        for by_label in labels.values():
            for why, premise_words, hypothesis_words in by_label.values():
                assert marked[why] == [premise_words, hypothesis_words]

    # The bundle holds them too, each file validated.
    author.goto(f"{base}/projects/{STUDY}/")
    author.select_option("#export-job-format", "bundle")
    author.locator("#export-job").get_by_role("button", name="Prepare").click()
    author.wait_for_url("**/jobs/*/")
    expect(author.locator("#job-state")).to_have_text("Done", timeout=60000)
    with author.expect_download() as started_download:
        author.get_by_role("link", name="Download the output").click()
    bundle = tmp_path / started_download.value.suggested_filename
    started_download.value.save_as(bundle)
    with zipfile.ZipFile(bundle) as archive:
        assert all(report["valid"] for report in json.loads(archive.read("validation.json")).values())
        names = archive.namelist()
    for fmt in ("varierr", "livenli", "taxonomy"):
        assert any(name.startswith(f"data/{STUDY}-{fmt}") for name in names), names

    # Re-importing the varierr and livenli files into new studies gives the same records back.
    for fmt in ("varierr", "livenli"):
        copy = f"journey-reimport-{fmt}"
        create_study(author, base, "label_explanation", {"slug": copy, "title": f"Journey: {fmt} again"})
        import_through_preview(author, fmt, files[fmt])
        expect(author.locator(".message.success")).to_contain_text("Imported")
        author.goto(f"{base}/projects/{copy}/")
        with author.expect_download() as again:
            author.locator("#export-download").get_by_role("button", name=fmt, exact=True).click()
        again_path = tmp_path / f"again-{again.value.suggested_filename}"
        again.value.save_as(again_path)
        assert_same_records(fmt, files[fmt], again_path)


LONG = ("entailment", "neutral", "contradiction")


def assert_same_records(fmt: str, first, second) -> None:
    """The format's own fields of every record are the same (the app's own nli_studio / added columns aside)."""
    if fmt == "varierr":
        read = [{k: v for k, v in json.loads(line).items() if k != "nli_studio"} for line in first.open()]
        again = [{k: v for k, v in json.loads(line).items() if k != "nli_studio"} for line in second.open()]
    else:
        own = ("uid", "premise", "hypothesis", "worker_id", "multilabel", "explanation", "highlight_p", "highlight_h")
        own += ("dist", "agg_dist", "taxonomy")
        with first.open(newline="") as a, second.open(newline="") as b:
            read = sorted(tuple(row.get(c) for c in own) for row in csv.DictReader(a))
            again = sorted(tuple(row.get(c) for c in own) for row in csv.DictReader(b))
    assert read and read == again
