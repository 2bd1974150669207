"""Issue 54, items 1-3: the task type's built-in worker guidance as a study setting (shown to the author, fixed
where the protocol fixes it, recorded in the instrument, what workers read), each worker page's progress, and
the import purposes a task type takes."""

import io
import json
import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.models import Assignment
from annotation.services import instrument
from annotation.services.assignments import claim_page, submit_page
from annotation.services.progress import worker_progress
from annotation.services.projects import update_project
from annotation.services.study_settings import settings_schema, task_guidance
from annotation.tasktypes import TASK_TYPES, get_task_type, register, unregister
from annotation.tasktypes.atom_validity import CRITERIA
from annotation.tasktypes.nli_label import NLILabel
from common.schema import SettingError
from dataset_io.services.importers import import_stream

pytestmark = pytest.mark.django_db

ATOM_ROWS = [
    {
        "id": "p1",
        "premise": "A man plays a guitar on a stage.",
        "hypothesis": "A musician performs for a crowd.",
        "atom": "A musician performs.",
    }
]


def client_for(user):
    client = Client()
    client.force_login(user)
    return client


def jsonl(rows):
    return io.StringIO("".join(json.dumps(row) + "\n" for row in rows))


def nli_rows(count, prefix="P"):
    return [{"id": f"{prefix}{i}", "premise": f"{prefix} premise {i}", "hypothesis": f"H {i}"} for i in range(count)]


# ---------------------------------------------------------------------------------------------- 1. guidance


def test_every_core_task_type_declares_its_guidance_and_whether_the_author_may_adjust_it():
    fixed = {"atom_validity", "unli_slider", "hypothesis_writing"}
    for name in ("atom_validity", "defeasible_atom", "unli_slider", "nli_label", "hypothesis_writing"):
        setting = settings_schema(get_task_type(name)).get("guidance")
        assert setting.default == get_task_type(name).guidance and setting.default.strip()
        assert setting.worker_visible and setting.fixed == (name in fixed), name
    atom = settings_schema(get_task_type("atom_validity")).get("guidance").default
    assert all(criterion in atom for criterion in CRITERIA)  # the paper's three checks, from one constant


def test_a_fixed_guidance_is_refused_in_every_entry_point_and_never_stored(make_project, author):
    project = make_project("atom_validity", status="draft")
    assert "guidance" not in project.options  # read from the task type, never a copy that could go stale
    with pytest.raises(SettingError) as refused:
        update_project(project, guidance="Valid if the premise entails it.")
    assert "guidance" in refused.value.errors and "fixed" in refused.value.errors["guidance"]
    api = client_for(author)
    answer = api.patch(
        f"/api/projects/{project.slug}/",
        {"options": {"guidance": "Valid if the premise entails it."}},
        content_type="application/json",
    )
    # Refused naming the setting (400 or 409: whether the request schema states the one value is the API's).
    assert answer.status_code in (400, 409) and answer.json()["field"] == "guidance"
    with pytest.raises(Exception, match="guidance"):
        call_command(
            "create_project", "atoms-cli", "--task-type", "atom_validity", "--owner", author.username,
            "--guidance", "Valid if the premise entails it.", stdout=io.StringIO(),
        )  # fmt: skip
    assert task_guidance(project) == get_task_type("atom_validity").guidance


def test_an_adjustable_guidance_is_the_authors_and_workers_read_it(make_project, import_rows, worker):
    project = make_project("nli_label", items_per_page=1)
    import_rows(project, nli_rows(2))
    assert task_guidance(project) == get_task_type("nli_label").guidance  # stored as the default at creation
    update_project(project, guidance="Pick **entailment** only when the premise *guarantees* it.")
    page = client_for(worker).get(f"/work/{project.slug}/").content.decode()
    guidance = page.split('id="task-guidance">')[1].split("</div>")[0]
    assert "<strong>entailment</strong>" in guidance and "guarantees" in guidance
    assert "For two-hypothesis items" not in page  # the built-in text is replaced, not added to
    update_project(project, guidance="")  # left empty: the task type's own again
    assert task_guidance(project) == get_task_type("nli_label").guidance


def test_a_draft_switched_to_another_task_type_gets_that_types_guidance(make_project):
    project = make_project("nli_label", status="draft")
    update_project(project, guidance="Pick entailment only when the premise guarantees it.")
    update_project(project, task_type="defeasible_atom")
    assert task_guidance(project) == get_task_type("defeasible_atom").guidance
    update_project(project, task_type="nli_label", guidance="My own words.")  # given with the switch: kept
    assert task_guidance(project) == "My own words."


def test_the_instrument_records_the_guidance_and_a_change_after_pages_went_out_is_a_new_version(
    make_project, import_rows, worker
):
    atoms = make_project("atom_validity", slug="atoms")
    assert instrument.content(atoms)["settings"]["guidance"] == get_task_type("atom_validity").guidance
    project = make_project("nli_label", items_per_page=1)
    import_rows(project, nli_rows(2))
    first = project.instrument
    claim_page(project, worker)
    update_project(project, guidance="Say what the premise says about the hypothesis.")
    project.refresh_from_db()
    assert project.instrument.number == first.number + 1
    assert project.instrument.content["settings"]["guidance"] == "Say what the premise says about the hypothesis."
    first.refresh_from_db()
    assert first.content["settings"]["guidance"] == get_task_type("nli_label").guidance


def test_the_creation_and_settings_forms_show_the_guidance_beside_the_instructions(make_project, author):
    client = client_for(author)
    new = client.get("/projects/new/?task_type=atom_validity").content.decode()
    fields = re.findall(r'<label for="id_(\w+)"|<p class="label" id="id_(\w+)-label"', new)
    names = [a or b for a, b in fields]
    assert names.index("guidance") == names.index("instructions") + 1  # right under the author's instructions
    shown = new.split('id="id_guidance"')[1].split("</div>")[0]
    assert all(criterion in shown for criterion in CRITERIA)
    assert 'name="guidance"' not in new  # read-only: nothing to send
    created = client.post(
        "/projects/new/",
        {"slug": "atoms-web", "task_type": "atom_validity", "guidance": "Valid if the premise entails it."},
    )
    assert created.status_code == 302  # a sent text is ignored, as for any read-only field
    settings = client.get("/projects/atoms-web/settings/").content.decode()
    assert "Valid if the premise entails it." not in settings and CRITERIA[2] in settings
    nli = make_project("nli_label")
    editable = client.get(f"/projects/{nli.slug}/settings/").content.decode()
    assert re.search(r'<textarea name="guidance"[^>]*>\s*Read the premise', editable)


def test_the_preview_and_the_qualification_page_show_the_guidance(make_project, import_rows, author, worker):
    project = make_project("atom_validity", status="draft")
    import_stream(project, jsonl(ATOM_ROWS), "jsonl")
    preview = client_for(author).get(f"/projects/{project.slug}/preview/").content.decode()
    assert 'id="task-guidance"' in preview and CRITERIA[1] in preview
    nli = make_project("nli_label")
    import_rows(nli, nli_rows(3))
    import_stream(nli, jsonl([{"premise": "Q1", "hypothesis": "QH1", "label": "e"}]), "jsonl", purpose="qualification")
    qualify = client_for(worker).get(f"/qualify/{nli.slug}/").content.decode()
    assert 'id="task-guidance"' in qualify and "For two-hypothesis items" in qualify


@pytest.mark.label_variation
def test_the_label_variation_task_types_give_their_guidance_through_the_setting(make_project, import_rows, worker):
    for name in ("label_explanation", "explanation_validation"):
        setting = settings_schema(get_task_type(name)).get("guidance")
        assert setting.fixed and setting.default == get_task_type(name).guidance
    project = make_project("label_explanation", items_per_page=1)
    import_rows(project, nli_rows(1))
    page = client_for(worker).get(f"/work/{project.slug}/").content.decode()
    instructions = page.split('class="instructions"')[1].split("</details>")[0]
    assert instructions.count("highlight the words of the premise") == 1  # the setting's text, once
    assert "<kbd>Space</kbd>" in instructions  # the Markdown keeps the keys
    # What the study's settings add stays under it.
    assert "words or more" in instructions.split('id="task-guidance"')[1]


def test_a_task_type_without_guidance_has_no_such_setting(make_project):
    class Plain(NLILabel):
        name = "plain_labels"
        label = "Plain labels"
        guidance = ""
        has_demo = False

    register(Plain())
    try:
        assert "guidance" not in settings_schema(TASK_TYPES["plain_labels"])
        project = make_project("plain_labels")
        assert task_guidance(project) == "" and "guidance" not in instrument.content(project)["settings"]
    finally:
        unregister("plain_labels")


# ---------------------------------------------------------------------------------------------- 2. progress


def test_a_crowd_page_says_which_page_of_the_quota_it_is_and_the_answers_so_far(make_project, import_rows):
    project = make_project("nli_label", items_per_page=2, completion_pages=3)
    import_rows(project, nli_rows(10))
    client = Client()
    first = client.get(f"/enter/{project.slug}/?PROLIFIC_PID=p1&STUDY_ID=s1&SESSION_ID=x1", follow=True)
    assert first.context["progress"].text == "Page 1 of 3 · 0 answers so far"
    assert 'id="page-progress">Page 1 of 3' in first.content.decode()
    page = first.context["assignment"]
    answers = {f"value_{claim.item_id}": "e" for claim in page.claims.all()}
    client.post(f"/work/{project.slug}/{page.pk}/submit/", answers)
    second = client.get(f"/work/{project.slug}/")
    assert second.context["progress"].text == "Page 2 of 3 · 2 answers so far"


def test_without_a_quota_the_page_counts_on(make_project, import_rows, worker):
    project = make_project("nli_label", items_per_page=2)
    import_rows(project, nli_rows(6))
    for _ in range(2):
        page = claim_page(project, worker)
        submit_page(page.pk, worker, {str(c.item_id): {"value": "n"} for c in page.claims.all()})
    html = client_for(worker).get(f"/work/{project.slug}/").content.decode()
    assert 'id="page-progress">Page 3 · 4 answers so far<' in html


def test_a_workers_progress_is_one_query_however_many_pages_they_and_others_sent(make_project, import_rows, make_user):
    project = make_project("nli_label", items_per_page=1, redundancy=3, max_annotations=3)
    import_rows(project, nli_rows(12))
    workers = [make_user(f"w{number}") for number in range(3)]

    def send(worker, pages):
        for _ in range(pages):
            page = claim_page(project, worker)
            submit_page(page.pk, worker, {str(c.item_id): {"value": "e"} for c in page.claims.all()})

    send(workers[0], 1)
    with CaptureQueriesContext(connection) as few:
        assert worker_progress(project, workers[0], 5).text == "Page 2 of 5 · 1 answer so far"
    send(workers[0], 5)
    send(workers[1], 6)
    send(workers[2], 6)
    with CaptureQueriesContext(connection) as many:
        progress = worker_progress(project, workers[0], 5)
    assert len(few) == len(many) == 1
    # Past the quota (a study that lets a worker go on) the count goes on rather than say "7 of 5".
    assert (progress.page, progress.answers, progress.text) == (7, 6, "Page 7 · 6 answers so far")
    assert Assignment.objects.filter(status="submitted").count() == 18


# ---------------------------------------------------------------------------------------------- 3. purposes


def test_a_per_atom_study_takes_no_qualification_items_from_an_import(make_project):
    assert get_task_type("atom_validity").import_purposes() == ("data", "gold")
    assert get_task_type("nli_label").import_purposes() == ("data", "gold", "qualification")
    project = make_project("atom_validity")
    with pytest.raises(ValueError, match=r"takes no qualification items from an import \(it takes data, gold\)"):
        import_stream(project, jsonl(ATOM_ROWS), "jsonl", purpose="qualification")


def test_the_command_line_refuses_the_purpose_too(make_project, tmp_path):
    project = make_project("atom_validity")
    rows = tmp_path / "atoms.jsonl"
    rows.write_text(jsonl(ATOM_ROWS).getvalue())
    with pytest.raises(Exception, match="takes no qualification items from an import"):
        call_command("import_items", project.slug, str(rows), "--format", "jsonl", "--qualification")
    assert not project.examples.exists()


def _import_page(client, project, rows):
    upload = io.BytesIO("".join(json.dumps(row) + "\n" for row in rows).encode())
    upload.name = "rows.jsonl"
    staged = client.post(f"/projects/{project.slug}/import/", {"format": "jsonl", "file": upload})
    assert staged.status_code == 302, staged.content
    return staged["Location"], client.get(staged["Location"])


def purposes_offered(page) -> list[str]:
    select = page.content.decode().split('name="purpose"')[1].split("</select>")[0]
    return re.findall(r'<option value="(\w+)"', select)


def test_the_import_page_offers_only_the_purposes_of_the_task_type_and_refuses_another(make_project, author):
    client = client_for(author)
    atoms = make_project("atom_validity", slug="atoms")
    location, page = _import_page(client, atoms, ATOM_ROWS)
    assert purposes_offered(page) == ["data", "gold"]
    refused = client.post(location, {"format": "jsonl", "purpose": "qualification", "confirm": "1"})
    assert refused.status_code == 400 and not atoms.items.exists()
    nli = make_project("nli_label")
    assert purposes_offered(_import_page(client, nli, nli_rows(1))[1]) == ["data", "gold", "qualification"]


def test_the_qualification_page_sends_authors_to_the_import_only_where_it_can_take_the_items(make_project, author):
    client = client_for(author)
    atoms = make_project("atom_validity", slug="atoms")
    assert "import rows as qualification" not in client.get(f"/projects/{atoms.slug}/qualification/").content.decode()
    nli = make_project("nli_label")
    assert "import rows as qualification" in client.get(f"/projects/{nli.slug}/qualification/").content.decode()


def test_a_plugin_task_types_purposes_are_read_when_asked(make_project, author):
    class DataOnly(NLILabel):
        name = "data_only"
        label = "Data only"
        has_demo = False

        def import_purposes(self):
            return ("data",)

    register(DataOnly())  # after every module was imported: nothing read the purposes before
    try:
        project = make_project("data_only")
        assert purposes_offered(_import_page(client_for(author), project, nli_rows(1))[1]) == ["data"]
        with pytest.raises(ValueError, match="takes no gold items"):
            import_stream(project, jsonl(nli_rows(1)), "jsonl", purpose="gold")
    finally:
        unregister("data_only")
