"""The dataset a study publishes, in the browser: a 3-way study whose labels are mapped on import, gold rows
refused where they repeat a data item, four workers by keyboard (one blocked with their answers left out, one
item tied 1-1-1, one tie adjudicated), every fitting export and the bundle downloaded, each file validated
with validate_dataset, and the flags, ties and provenance read back from the files. Then the qualification
builder at 360 px by keyboard."""

import json
import zipfile
from pathlib import PurePath

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import create_study, manage, no_sideways_scroll, save_screenshot, tab_to_link, too_wide
from tests.browser.test_journeys import answer_page, submit_by_keyboard

pytestmark = pytest.mark.browser
SLUG = "journey-dataset"
ROWS = [  # id, premise, hypothesis, label as the file writes it (U-SNLI's numbers)
    ("tied", "A man rides a brown horse along a beach.", "A person is outside.", "2"),
    ("adjudicated", "Two girls share an umbrella at a bus stop.", "The girls are sisters.", "1"),
    ("clear", "A chef tastes soup from a large pot.", "Someone is cooking.", "2"),
    ("silent", "A boy kicks a ball against a wall.", "The boy is asleep.", "0"),
]
# Per worker, the key pressed on each item in page order (tied, adjudicated, clear).
KEYS = {"worker1": ["e", "n", "e"], "worker2": ["n", "e", "e"], "worker3": ["c", "c", "c"]}
EXCLUDED = "journey-excluded"
FORMATS = ("chaosnli", "snli", "jsonl", "csv", "annotations", "varierr", "livenli", "taxonomy")


def validated(demo_server, path, fmt) -> dict:
    report = json.loads(
        manage(demo_server, ["validate_dataset", str(path), "--format", fmt, "--json"])[0].splitlines()[-1]
    )
    assert report["valid"], report
    return report


def test_a_study_publishes_a_dataset_with_flags_ties_and_provenance(sign_in, demo_server, tmp_path):
    base = demo_server["url"]
    manage(demo_server, ["create_user", EXCLUDED, "--role", "worker", "--password", "journey-excluded-pass"])
    author = sign_in("author")
    create_study(
        author,
        base,
        "nli_label",
        {"slug": SLUG, "title": "Journey: a dataset to publish", "items_per_page": "3", "redundancy": "3"},
    )

    # The file numbers its labels: the import page shows how each value reads, refuses it unmapped, takes a mapping.
    data = tmp_path / "pairs.csv"
    data.write_text("id,premise,hypothesis,label\n" + "".join(f'{i},"{p}","{h}",{label}\n' for i, p, h, label in ROWS))
    author.select_option("#id_format", "csv")
    author.set_input_files("#id_file", str(data))
    author.get_by_role("button", name="Upload and preview").click()
    author.wait_for_url("**/import/*/**")
    labels = author.locator("fieldset:has(legend:text('How the labels are read')) tbody tr")
    expect(labels).to_have_count(3)
    expect(labels.first).to_contain_text("not a label of this study")
    author.get_by_role("button", name="Import", exact=True).click()
    expect(author.locator(".error")).to_contain_text("line 2, field label")
    author.fill("#id_label_map", "0=contradiction, 1=neutral, 2=entailment")
    author.get_by_role("button", name="Import", exact=True).click()
    expect(author.locator(".message.success")).to_contain_text("Imported 4 examples (4 new items")

    # A gold file that repeats a data item is refused, naming the item and its pool; a good one is taken.
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "g1", "premise": ROWS[2][1], "hypothesis": ROWS[2][2], "label": "e"}) + "\n")
    author.select_option("#id_format", "jsonl")
    author.set_input_files("#id_file", str(gold))
    author.get_by_role("button", name="Upload and preview").click()
    author.select_option("#id_purpose", "gold")
    author.get_by_role("button", name="Import", exact=True).click()
    expect(author.locator(".error")).to_contain_text("a data item; an item cannot also be a gold check")
    author.get_by_role("button", name="Discard").click()
    gold.write_text(
        json.dumps(
            {"id": "g1", "premise": "A baby sleeps in a crib.", "hypothesis": "A child is asleep.", "label": "e"}
        )
        + "\n"
    )
    author.set_input_files("#id_file", str(gold))
    author.select_option("#id_format", "jsonl")
    author.get_by_role("button", name="Upload and preview").click()
    author.select_option("#id_purpose", "gold")
    author.get_by_role("button", name="Import", exact=True).click()
    expect(author.locator(".message.success")).to_contain_text("Imported 1 example (1 new item")
    author.get_by_role("button", name="Publish").click()
    expect(author.locator("#study-status")).to_have_text("Published")

    # The first worker answers, and is then blocked with their answers left out, with a reason.
    excluded = sign_in(EXCLUDED, password="journey-excluded-pass")
    excluded.goto(f"{base}/work/{SLUG}/")
    answer_page(excluded, ["c"])
    submit_by_keyboard(excluded)
    author.goto(f"{base}/projects/{SLUG}/")
    author.locator("#worker-figures").get_by_role("link", name=EXCLUDED).click()
    author.fill("#block-reason", "answered without reading")
    author.get_by_label("Also leave their answers out").check()
    author.get_by_role("button", name="Block from this study").click()
    expect(author.locator("main")).to_contain_text("Reason: answered without reading")

    # Three workers, each a page by keyboard: the first two items tie 1-1-1, the third is clear.
    for username, keys in KEYS.items():
        worker = sign_in(username)
        worker.goto(f"{base}/work/{SLUG}/")
        assert answer_page(worker, keys)
        submit_by_keyboard(worker)
        expect(worker.locator(".message.success")).to_contain_text("Saved 3 answers")

    # One of the two ties is adjudicated; the other stays a tie.
    author.goto(f"{base}/projects/{SLUG}/adjudication/")
    queue = author.locator("tbody tr")
    expect(queue).to_have_count(2)
    queue.filter(has_text=ROWS[1][1]).locator("a").click()
    author.select_option("select[name=value]", "n")
    author.fill("textarea[name=note]", "Nothing says they are related.")
    author.get_by_role("button", name="Save final label").click()
    expect(author.locator(".message.success")).to_contain_text("settled")

    # Every fitting format, downloaded from the dashboard's buttons, validates.
    author.goto(f"{base}/projects/{SLUG}/")
    files = {}
    for fmt in FORMATS:
        with author.expect_download() as download:
            author.get_by_role("button", name=fmt, exact=True).click()
        files[fmt] = tmp_path / download.value.suggested_filename
        download.value.save_as(files[fmt])
        records = validated(demo_server, files[fmt], fmt)["records"]
        assert records == 0 if fmt == "taxonomy" else records > 0, fmt  # nobody tagged a disagreement reason

    chaos = {row["uid"]: row for row in map(json.loads, files["chaosnli"].open())}
    assert set(chaos) == {"tied", "adjudicated", "clear"}  # the item nobody answered is left out
    assert chaos["tied"]["majority_label"] is None and chaos["tied"]["nli_studio"]["tie"] is True
    assert chaos["tied"]["label_count"] == [1, 1, 1] and chaos["tied"]["nli_studio"]["excluded"] == 1
    assert chaos["adjudicated"]["majority_label"] == "n" and chaos["adjudicated"]["nli_studio"]["adjudicated"] is True
    assert chaos["clear"]["majority_label"] == "e" and chaos["clear"]["label_count"] == [2, 0, 1]
    assert chaos["clear"]["old_label"] == "e"  # the file's "2", read through the mapping

    answers = [json.loads(line) for line in files["annotations"].open()]
    assert len(answers) == 12
    flagged = [a for a in answers if a["excluded"]]
    assert len(flagged) == 3 and {a["worker_status"] for a in flagged} == {"blocked"}
    assert {a["excluded_reason"] for a in flagged} == {
        "the author blocked this worker and left their answers out: answered without reading"
    }
    assert {a["excluded_by"] for a in flagged} == {"author"}
    annotators = {a["annotator"] for a in answers}
    assert len(annotators) == 4 and all(a.startswith("a") and len(a) == 13 for a in annotators)
    assert all(a["seconds_spent"] is not None and a["submitted_at"] and a["page"] for a in answers)
    assert len({a["instrument_version"] for a in answers}) == 1
    in_jsonl = {a["annotator"] for line in files["jsonl"].open() for a in json.loads(line)["nli_studio"]["annotations"]}
    snli = [json.loads(line) for line in files["snli"].open()]
    # The rows' own labels were imported, so SNLI's fields keep them and the answers travel beside them.
    assert {record["nli_studio"]["label_source"] for record in snli} == {"imported"}
    in_snli = {a for record in snli for a in record["nli_studio"].get("collected", {}).get("annotators", [])}
    assert in_jsonl == annotators and in_snli == annotators - {flagged[0]["annotator"]}
    for path in files.values():
        text = path.read_text(encoding="utf-8")
        assert not any(name in text for name in (*KEYS, EXCLUDED)), f"a username in {path.name}"

    # The bundle, prepared in the background, holds every format, the statement and the validation.
    author.goto(f"{base}/projects/{SLUG}/")
    author.select_option("#export-job-format", "bundle")
    author.locator("#export-job").get_by_role("button", name="Prepare").click()
    author.wait_for_url("**/jobs/*/")
    expect(author.locator("#job-state")).to_have_text("Done", timeout=60000)
    with author.expect_download() as download:
        author.get_by_role("link", name="Download the output").click()
    bundle = tmp_path / download.value.suggested_filename
    download.value.save_as(bundle)
    assert bundle.name == f"{SLUG}-dataset.zip"
    with zipfile.ZipFile(bundle) as archive:
        statement = json.loads(archive.read("data_statement.json"))
        assert all(report["valid"] for report in json.loads(archive.read("validation.json")).values())
        for name in archive.namelist():
            if name.startswith("data/") and not name.endswith(".parquet"):  # the text files
                fmt = next((f for f in FORMATS if PurePath(name).stem == f"{SLUG}-{f}"), "csv")  # {SLUG}.csv
                validated(demo_server, archive.extract(name, tmp_path / "bundle"), fmt)
    assert statement["items"]["tied"] == 1 and statement["items"]["adjudicated"] == 1
    assert statement["exclusions"][0]["reason"] == "answered without reading"
    assert statement["annotators"] == {"with_counted_answers": 3, "excluded": 1}
    save_screenshot(author, "journey-dataset-bundle")


def test_the_qualification_builder_by_keyboard_on_a_phone(sign_in, demo_server, tmp_path):
    base = demo_server["url"]
    rows = tmp_path / "builder.jsonl"
    rows.write_text(
        "".join(
            json.dumps(
                {"id": f"b{i}", "premise": f"A kite flies over field {i}.", "hypothesis": hypothesis, "label": label}
            )
            + "\n"
            for i, (hypothesis, label) in enumerate(
                [("Something is in the air.", "e"), ("The kite is red.", "n"), ("Nothing flies.", "c")]
            )
        )
    )
    manage(demo_server, ["create_project", "journey-builder", "--task-type", "nli_label", "--owner", "author"])
    manage(demo_server, ["import_items", "journey-builder", str(rows), "--format", "jsonl"])
    page = sign_in("author", 360, 740)
    page.goto(f"{base}/projects/journey-builder/qualification/")
    for _ in range(60):  # by Tab to the search box
        if page.evaluate("() => document.activeElement.type") == "search":
            break
        page.keyboard.press("Tab")
    expect(page.get_by_role("searchbox", name="Search")).to_be_focused()
    page.keyboard.type("kite")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    candidates = page.locator("section[aria-labelledby=candidates-h] tbody tr")
    expect(candidates).to_have_count(3)
    expect(candidates.first.locator("input[name=reference]")).to_have_value("e")  # the row's own label
    candidates.first.locator("input[name=reference]").focus()
    tab_to_link(page, "Copy into the test", presses=5)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    expect(page.locator(".message.success")).to_contain_text("copied into the test")
    expect(page.locator("section[aria-labelledby=test-items-h] tbody tr")).to_have_count(1)
    balance = page.locator("section[aria-labelledby=balance-h] tbody tr").filter(has_text="Entailment")
    expect(balance.locator("td").nth(1)).to_have_text("1")
    expect(candidates).to_have_count(2)  # what the test holds is no longer offered
    assert no_sideways_scroll(page), f"the qualification page scrolls sideways: {too_wide(page)}"
    save_screenshot(page, "qualification-builder-360")
