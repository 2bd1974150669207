"""Whole journeys on the real demo server: crowd workers arriving from Prolific or MTurk who qualify and
work by keyboard alone, an author running a project from creation to export, an admin managing users."""

import csv
import json
import re
import sqlite3
from dataclasses import dataclass

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import (
    create_study,
    focused_item,
    import_through_preview,
    manage,
    next_item,
    save_screenshot,
    tab_to_item,
    tab_to_link,
)

pytestmark = pytest.mark.browser


@dataclass
class WorkerJourney:
    task_type: str
    platform: str  # "prolific" or "mturk": which kind of entry link the worker follows
    qualification: list[dict]  # reference items of the project's qualification test
    qualification_keys: list[str]  # the right key for each reference item
    work_keys: list[str]  # keys cycled through on the work pages
    values: dict  # what each key stores

    def entry_path(self, slug: str) -> str:
        if self.platform == "prolific":
            return f"/enter/{slug}/?PROLIFIC_PID=P-{slug}&STUDY_ID=STUDY-journeys&SESSION_ID=S-{slug}"
        return f"/enter/{slug}/?workerId=W-{slug}&assignmentId=A-{slug}&hitId=HIT-journeys"

    def participant(self, slug: str) -> str:
        return f"P-{slug}" if self.platform == "prolific" else f"W-{slug}"


PARK = ("A girl sits on a bench in a park.", "A child is reading a novel outdoors.")
KITCHEN = ("A man is slicing onions in a busy kitchen.", "A cook is preparing dinner for guests.")
JOURNEYS = {
    "demo-atoms": WorkerJourney(
        "atom_validity",
        "prolific",
        [
            {"premise": PARK[0], "hypothesis": PARK[1], "atom": "A child is reading.", "reference": "valid"},
            {"premise": PARK[0], "hypothesis": PARK[1], "atom": "The novel is very long.", "reference": "invalid"},
            {"premise": PARK[0], "hypothesis": PARK[1], "atom": "The reading happens outdoors.", "reference": "valid"},
        ],
        ["v", "i", "v"],
        ["v", "i"],
        {"v": "valid", "i": "invalid"},
    ),
    "demo-defeasible": WorkerJourney(
        "defeasible_atom",
        "mturk",
        [
            {
                "premise": KITCHEN[0],
                "hypothesis": KITCHEN[1],
                "update": "The kitchen closed a week ago.",
                "atom": "Someone is preparing dinner.",
                "reference": -2,
            },
            {
                "premise": KITCHEN[0],
                "hypothesis": KITCHEN[1],
                "update": "The man wears a blue apron.",
                "atom": "Someone is a cook.",
                "reference": 0,
            },
            {
                "premise": KITCHEN[0],
                "hypothesis": KITCHEN[1],
                "update": "Plates are waiting at the pass for the diners.",
                "atom": "The dinner is for guests.",
                "reference": 2,
            },
        ],
        ["1", "3", "5"],
        ["2", "4", "3"],
        {"1": -2, "2": -1, "3": 0, "4": 1, "5": 2},
    ),
    "demo-nli": WorkerJourney(
        "nli_label",
        "mturk",
        [
            {"premise": "A dog runs across a beach.", "hypothesis": "An animal is outside.", "reference": "e"},
            {"premise": "A dog runs across a beach.", "hypothesis": "The dog is chasing a ball.", "reference": "n"},
            {
                "premise": "A dog runs across a beach.",
                "hypothesis": "The dog is asleep in its basket.",
                "reference": "c",
            },
        ],
        ["e", "n", "c"],
        ["c", "e", "n"],
        {"e": "e", "n": "n", "c": "c"},
    ),
    "demo-slider": WorkerJourney(
        "unli_slider",
        "prolific",
        [
            {
                "premise": "A boy holds a kite string on a windy hill.",
                "hypothesis": "The boy is underwater.",
                "reference": 0.0,
            },
            {
                "premise": "A boy holds a kite string on a windy hill.",
                "hypothesis": "Someone is outdoors.",
                "reference": 1.0,
            },
            {
                "premise": "A boy holds a kite string on a windy hill.",
                "hypothesis": "The kite is red.",
                "reference": 0.5,
            },
        ],
        # Home / End move the slider to its ends; Enter confirms the untouched middle.
        ["Home", "End", "Enter"],
        ["End", "Enter", "Home"],
        {"Home": 0.0, "End": 1.0, "Enter": 0.5},
    ),
}
TIE_PROJECT = "journey-tie"


def query(database, sql: str, *params) -> list[tuple]:
    with sqlite3.connect(database, timeout=30) as db:
        return db.execute(sql, params).fetchall()


@pytest.fixture(scope="module")
def prepared(demo_server, tmp_path_factory):
    """Qualification tests on the four demo projects and the author's tie project, made by the commands an
    operator would run against the server's database. The tests are detached again afterwards, so the other
    browser tests find the demo projects open whatever the order."""
    folder = tmp_path_factory.mktemp("journeys")
    commands = []
    for slug, journey in JOURNEYS.items():
        items = folder / f"{slug}.jsonl"
        items.write_text("".join(json.dumps(row) + "\n" for row in journey.qualification))
        commands.append(
            [
                "create_qualification",
                f"qual-{slug}",
                "--task-type",
                journey.task_type,
                "--items",
                str(items),
                "--project",
                slug,
                "--min-accuracy",
                "1",
                "--json",
            ]
        )
    commands.append(
        [
            "create_project",
            TIE_PROJECT,
            "--task-type",
            "atom_validity",
            "--owner",
            "author",
            "--title",
            "Journey: a tie",
            "--redundancy",
            "2",
            "--max-annotations",
            "2",
            "--items-per-page",
            "2",
            "--json",
        ]
    )
    outputs = manage(demo_server, *commands)
    for slug, output in zip(JOURNEYS, outputs):
        assert json.loads(output.strip().splitlines()[-1])["projects"] == [slug]
    yield
    query(
        demo_server["database"],
        f"UPDATE annotation_project SET qualification_id = NULL WHERE slug IN ({','.join('?' * len(JOURNEYS))})",
        *JOURNEYS,
    )


def answer_page(page, keys: list[str]) -> dict[str, str]:
    """Answer every item of the page by keyboard, cycling through `keys`; returns {item id: key}."""
    count = page.locator("fieldset.item").count()
    assert count >= 1
    current = focused_item(page)
    assert current, "focus should start on the first item's answer"
    pressed = {}
    for index in range(count):
        if index:
            current = next_item(page, current)
        key = keys[index % len(keys)]
        page.keyboard.press(key)
        pressed[current] = key
    expect(page.locator("#unanswered")).to_contain_text("All answered")
    return pressed


def submit_by_keyboard(page) -> None:
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")


def stored_answers(database, username: str, slug: str) -> dict[str, tuple]:
    rows = query(
        database,
        "SELECT a.item_id, a.value, a.reason FROM annotation_annotation a JOIN auth_user u ON a.worker_id = u.id "
        "JOIN annotation_item i ON a.item_id = i.id JOIN annotation_project p ON i.project_id = p.id "
        "WHERE u.username = ? AND p.slug = ?",
        username,
        slug,
    )
    return {str(item): (json.loads(value), reason) for item, value, reason in rows}


@pytest.mark.parametrize("slug", sorted(JOURNEYS))
def test_crowd_worker_qualifies_and_works_by_keyboard_alone(page, demo_server, prepared, slug):
    journey = JOURNEYS[slug]
    base = demo_server["url"]
    page.goto(base + journey.entry_path(slug))
    page.wait_for_url(f"{base}/qualify/{slug}/**")  # an MTurk arrival's pages carry its frame token
    expect(page.locator("fieldset.item")).to_have_count(len(journey.qualification))
    answer_page(page, journey.qualification_keys)
    submit_by_keyboard(page)
    assert page.url.split("?")[0] == f"{base}/work/{slug}/"
    expect(page.locator(".message.success")).to_contain_text("You passed the qualification test")

    expected = {}
    for number in range(2):
        pressed = answer_page(page, journey.work_keys)
        if number == 0 and len(pressed) > 1:
            # Second thoughts: Shift+Tab back from the send button to the last item and change its answer.
            last = focused_item(page)
            previous = tab_to_item(page, last, backwards=True)
            # (Enter on a slider confirms where it stands, so it cannot change an answer.)
            changed = next(
                key
                for key in journey.work_keys
                if key != "Enter" and journey.values[key] != journey.values[pressed[previous]]
            )
            page.keyboard.press(changed)
            pressed[previous] = changed
        if number == 1 and page.locator("input[name^=reason_]").count():
            # The first item's optional reason: Shift+Tab back to its answer, R opens the text field
            # (Tab passes it by, so answer keys never land in it), Escape leaves it.
            first = next(iter(pressed))
            for _ in range(30):
                if focused_item(page) == first:
                    break
                page.keyboard.press("Shift+Tab")
            page.keyboard.press("r")
            assert page.evaluate("() => document.activeElement.name") == f"reason_{first}"
            page.keyboard.type("Says more than the hypothesis.")
            page.keyboard.press("Escape")
            assert page.evaluate("() => document.activeElement.name") == f"value_{first}"
        expected.update(pressed)
        submit_by_keyboard(page)
        expect(page.locator(".message.success")).to_contain_text(f"Saved {len(pressed)} answers")

    tab_to_link(page, "Finish and get my completion code")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    code = page.locator("#completion-code").inner_text()
    assert re.fullmatch(r"[0-9A-F]{10}", code)

    database = demo_server["database"]
    # The crowd account made for this participant of this study (found through its session, as the server does).
    [(username,)] = query(
        database,
        "SELECT u.username FROM auth_user u JOIN annotation_crowdsession s ON s.worker_id = u.id "
        "JOIN annotation_project p ON s.project_id = p.id WHERE p.slug = ? AND s.participant_id = ?",
        slug,
        journey.participant(slug),
    )
    stored = stored_answers(database, username, slug)
    assert {item: value for item, (value, _) in stored.items()} == pytest.approx(
        {item: journey.values[key] for item, key in expected.items()}
    )
    if journey.task_type == "atom_validity":
        assert sorted(reason for _, reason in stored.values() if reason) == ["Says more than the hypothesis."]
    sessions = query(
        database,
        "SELECT s.platform, s.study_id, s.completion_code FROM annotation_crowdsession s "
        "JOIN auth_user u ON s.worker_id = u.id WHERE u.username = ?",
        username,
    )
    study = "STUDY-journeys" if journey.platform == "prolific" else "HIT-journeys"
    assert sessions == [(journey.platform, study, code)]
    passed = query(
        database,
        "SELECT q.passed FROM annotation_qualificationattempt q JOIN auth_user u ON q.worker_id = u.id WHERE u.username = ?",
        username,
    )
    assert passed == [(1,)]


USNLI_ROWS = [
    ["jr-1", "A man plays a guitar on a small stage.", "A man is performing music.", "0", "0.93"],
    ["jr-2", "A man plays a guitar on a small stage.", "The audience is mostly students.", "1", "0.4"],
    ["jr-3", "A man plays a guitar on a small stage.", "The man is asleep at home.", "2", "0.02"],
]
TIE_ATOMS = ["The hikers reach a summit.", "The hikers are tired."]


def test_author_runs_a_project_from_creation_to_export(sign_in, demo_server, prepared, tmp_path):
    base = demo_server["url"]
    usnli = tmp_path / "journey.usnli.csv"
    with open(usnli, "w", newline="") as handle:
        csv.writer(handle).writerows([["id", "pre", "hyp", "nli", "unli"], *USNLI_ROWS])
    examples = tmp_path / "tie.jsonl"
    examples.write_text(
        json.dumps(
            {
                "id": "tie-1",
                "premise": "Three hikers stand on a rocky peak at dawn.",
                "hypothesis": "The tired hikers reach a summit.",
            }
        )
        + "\n"
    )
    atoms = tmp_path / "tie.atoms.jsonl"
    atoms.write_text(json.dumps({"example_id": "tie-1", "atoms": TIE_ATOMS}) + "\n")

    page = sign_in("author")

    # A new project through the form, then a U-SNLI file through the upload form and its preview.
    page.get_by_role("link", name="New project").click()
    create_study(
        page,
        base,
        "unli_slider",
        {"slug": "journey-usnli", "title": "Journey: U-SNLI", "items_per_page": "2", "redundancy": "1"},
    )
    expect(page.locator(".message.success")).to_contain_text("Study journey-usnli created")
    import_through_preview(page, "usnli", usnli)
    expect(page.locator(".message.success")).to_contain_text("Imported 3 examples (3 new items")
    item_table = page.locator("section[aria-labelledby=items-h] tbody tr")
    expect(item_table).to_have_count(3)
    for row in USNLI_ROWS:
        expect(page.locator("section[aria-labelledby=items-h]")).to_contain_text(row[2])
    with page.expect_download() as download:
        page.get_by_role("button", name="usnli", exact=True).click()
    with open(download.value.path(), newline="") as handle:
        assert [row[:5] for row in list(csv.reader(handle))[1:]] == USNLI_ROWS

    # The tie project (made by create_project: the form has no max-annotations field) gets its
    # examples and atoms through the upload form too.
    page.goto(f"{base}/projects/{TIE_PROJECT}/")
    for fmt, path, message in (
        ("jsonl", examples, "Imported 1 example (0 new items)"),
        ("atoms", atoms, "Imported 2 atoms (2 new items)"),
    ):
        import_through_preview(page, fmt, path)
        expect(page.locator(".message.success")).to_contain_text(message)
    expect(page.locator("#live-state")).to_have_text("(live)")

    def stat(key):
        return page.locator(f'#progress [data-key="{key}"]')

    expect(stat("annotations")).to_have_text("0")

    # Two workers in their own windows: they agree on the first atom and split on the second.
    for worker, keys, annotations in (("worker1", ["v", "v"], "2"), ("worker2", ["v", "i"], "4")):
        worker_page = sign_in(worker)
        worker_page.goto(f"{base}/work/{TIE_PROJECT}/")
        answer_page(worker_page, keys)
        submit_by_keyboard(worker_page)
        expect(stat("annotations")).to_have_text(annotations)
    expect(stat("done")).to_have_text("1")
    expect(stat("adjudication")).to_have_text("1")
    expect(page.locator("#worker-figures")).to_contain_text("worker2")
    save_screenshot(page, "journey-author-live-dashboard")

    # The queue holds the tied atom only; the author settles it with a note.
    page.reload()
    page.get_by_role("link", name="Adjudication (1)").click()
    rows = page.locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text(TIE_ATOMS[1])
    expect(rows).to_contain_text("unresolved tie")
    rows.locator("a").click()
    item_url = page.url
    expect(page.locator("tbody tr")).to_have_count(2)
    page.select_option("select[name=value]", "invalid")
    page.fill("textarea[name=note]", "Tiredness is not in the premise; the second reading holds.")
    page.get_by_role("button", name="Save final label").click()
    page.wait_for_url(f"{base}/projects/{TIE_PROJECT}/adjudication/")
    expect(page.locator(".message.success")).to_contain_text("settled")
    expect(page.locator(".empty")).to_contain_text("Nothing waits for adjudication")
    page.goto(item_url)
    expect(page.locator("#final-value")).to_have_text("Invalid")
    history = page.locator("h2:has-text('History') + .scroll tbody tr")
    expect(history).to_have_count(1)
    expect(history).to_contain_text("author")
    expect(history).to_contain_text("Tiredness is not in the premise")
    save_screenshot(page, "journey-author-adjudication")

    # The export carries both annotations and the settled label.
    page.goto(f"{base}/projects/{TIE_PROJECT}/")
    with page.expect_download() as download:
        page.get_by_role("button", name="jsonl", exact=True).click()
    assert download.value.suggested_filename.startswith(TIE_PROJECT)
    with open(download.value.path()) as handle:
        records = {record["nli_studio"]["atom"]["text"]: record["nli_studio"] for record in map(json.loads, handle)}
    assert set(records) == set(TIE_ATOMS)
    agreed, tied = records[TIE_ATOMS[0]], records[TIE_ATOMS[1]]
    assert (agreed["status"], agreed["aggregate"]["value"], agreed["aggregate"]["adjudicated"]) == (
        "done",
        "valid",
        False,
    )
    assert (tied["status"], tied["aggregate"]["value"], tied["aggregate"]["adjudicated"]) == ("done", "invalid", True)
    assert sorted(a["value"] for a in tied["annotations"]) == ["invalid", "valid"]
    assert len({a["annotator"] for a in tied["annotations"]}) == 2


def test_admin_adds_a_worker_and_exports_a_project_of_another_author(sign_in, demo_server):
    base = demo_server["url"]
    page = sign_in("admin")

    # A new account through the Django admin, put in the worker group.
    page.get_by_role("link", name="Admin", exact=True).click()
    page.wait_for_url(f"{base}/admin/")
    page.click("a[href='/admin/auth/user/add/']")
    page.fill("#id_username", "journey-newcomer")
    page.fill("#id_password1", "newcomer-pass-2024")
    page.fill("#id_password2", "newcomer-pass-2024")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist")).to_contain_text("was added successfully")
    page.select_option("#id_groups_from", label="worker")
    page.click("#id_groups_add")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    save_screenshot(page, "journey-admin-users")
    groups = query(
        demo_server["database"],
        "SELECT g.name FROM auth_user u JOIN auth_user_groups ug ON ug.user_id = u.id "
        "JOIN auth_group g ON g.id = ug.group_id WHERE u.username = ?",
        "journey-newcomer",
    )
    assert groups == [("worker",)]

    newcomer = sign_in("journey-newcomer", password="newcomer-pass-2024")
    expect(newcomer.get_by_role("heading", name="Annotate")).to_be_visible()
    expect(newcomer.get_by_role("link", name="Start").first).to_be_visible()

    # The admin manages every project, including the author's demo-nli.
    page.goto(f"{base}/")
    page.get_by_role("link", name="Demo: entailment, neutral or contradiction").click()
    page.wait_for_url(f"{base}/projects/demo-nli/")
    expect(page.locator("main")).to_contain_text("owner author")
    page.get_by_label("Also items without a label or answer yet (flagged)").check()  # the demo study has no answers
    with page.expect_download() as download:
        page.get_by_role("button", name="csv", exact=True).click()
    with open(download.value.path(), newline="") as handle:
        exported = list(csv.DictReader(handle))
    stored = query(
        demo_server["database"],
        "SELECT i.id, i.annotation_count FROM annotation_item i JOIN annotation_project p ON i.project_id = p.id "
        "WHERE p.slug = 'demo-nli' ORDER BY i.id",
    )
    assert len(exported) == 30
    assert [(int(row["item"]), int(row["answers"])) for row in exported] == stored
