"""One rule, one place: the checks that keep each rule in the module that owns it, and regression tests for
the defects that copies of a rule caused."""

import csv
import io
import json
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Item, Project
from annotation.services.analysis.adjudication import adjudicate
from annotation.services.assignments import claim_page, submit_page
from annotation.tasktypes import TASK_TYPES
from dataset_io.formats import exportable, importable
from dataset_io.services.importers import ImportFileError, import_file, import_stream

REPO = Path(__file__).resolve().parents[2]
SOURCE_FOLDERS = ("annotation", "evaluation", "models_backend", "common", "jobs", "config", "templates", "static")
TASK_TYPE_PACKAGE = REPO / "annotation" / "tasktypes"


def test_no_task_type_is_named_outside_the_task_type_package():
    """Views, services, API, commands and templates ask the task type; they never compare its name."""
    names = re.compile(r"\b(" + "|".join(map(re.escape, TASK_TYPES)) + r")\b")
    found = []
    for folder in SOURCE_FOLDERS:
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix not in (".py", ".html", ".js") or "migrations" in path.parts:
                continue
            if TASK_TYPE_PACKAGE in path.parents:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if names.search(line):
                    found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []


def task_setting_owners() -> dict[str, set[Path]]:
    """Each setting a task type keeps in Project.options, and the files that may name it: the task-type
    package and the templates of the task types that declare it."""
    owners: dict[str, set[Path]] = {}
    for task in TASK_TYPES.values():
        for setting in task.settings:
            if not setting.column:  # columns are fields of the Project model, which every app may read
                owners.setdefault(setting.name, set()).add(REPO / "templates" / task.template)
    return owners


def test_no_task_type_setting_is_named_outside_its_task_type():
    """A setting describes its own behaviour (fixed once answered, shown to workers, set by an import);
    callers ask the setting or the task type, never list setting names."""
    found = []
    for name, templates in task_setting_owners().items():
        # Quoted in Python and JavaScript, or as a data- attribute (allow-untouched) where it has two words.
        quoted = re.compile(rf"""["']{name}["']""" + (rf"|\b{name.replace('_', '-')}\b" if "_" in name else ""))
        in_template_tag = re.compile(r"{[{%][^}]*(?<![.\w])" + name + r"\b[^}]*[}%]}")  # a context variable
        for folder in SOURCE_FOLDERS:
            for path in sorted((REPO / folder).rglob("*")):
                if path.suffix not in (".py", ".html", ".js") or "migrations" in path.parts:
                    continue
                if TASK_TYPE_PACKAGE in path.parents or path in templates:
                    continue
                for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                    if quoted.search(line) or (path.suffix == ".html" and in_template_tag.search(line)):
                        found.append(f"{path.relative_to(REPO)}:{number}: {name}: {line.strip()}")
    assert found == []


def test_every_task_type_answers_every_question():
    from django.template.loader import get_template

    for task in TASK_TYPES.values():
        get_template(task.template)
        assert task.agreement_level in ("nominal", "ordinal", "interval") or (
            task.agreement_level is None and task.agreement_unavailable
        )
        options = task.default_options()
        assert importable(task, options) and exportable(task, options)
        assert isinstance(task.widget_context(options), dict)
        demo = task.demo()
        assert demo is None or demo.imports


@pytest.mark.django_db
def test_alpha_nli_items_are_adjudicated_with_the_projects_labels(shared_data, make_project, author):
    """The reference parser used the default e/n/c labels, so a 1/2 project could not be adjudicated."""
    project = make_project("nli_label")
    source = shared_data / "chaosnli" / "chaosNLI_alphanli.jsonl"
    first = source.open(encoding="utf-8").readline()
    import_stream(project, io.StringIO(first), "chaosnli")
    project.refresh_from_db()
    assert project.options["labels"] == ["1", "2"]
    item = project.items.get()
    record = adjudicate(item.id, author, "2", "the second explains both observations")
    assert record.after == "2" and Item.objects.get(pk=item.pk).final_value == "2"
    response = APIClient()
    response.force_login(author)
    answer = response.post(f"/api/projects/{project.slug}/adjudicate/", {"item": item.id, "value": "e"}, format="json")
    assert answer.status_code == 409 and "1, 2" in answer.json()["detail"]


@pytest.mark.django_db
def test_usnli_rows_imported_as_gold_into_a_3way_project_can_be_matched(shared_data, make_project, worker):
    """normalise_label("2") gave "2", which no e/n/c answer matches: every gold check failed silently."""
    project = make_project("nli_label", gold_rate=1.0)
    lines = (shared_data / "u-snli" / "dev.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    import_stream(project, io.StringIO("".join(lines[:11])), "usnli", purpose="gold")
    import_stream(project, io.StringIO('{"id": "data", "premise": "P", "hypothesis": "H"}\n'), "jsonl")
    gold_items = list(project.items.filter(is_gold=True).select_related("example"))
    by_code = {"0": "c", "1": "n", "2": "e"}
    codes = [row["nli"] for row in csv.DictReader(io.StringIO("".join(lines[:11])))]
    assert [item.gold for item in gold_items] == [by_code[code] for code in codes]
    page = claim_page(project, worker)
    answers = {}
    for claim in page.claims.select_related("item"):
        answers[str(claim.item_id)] = {"value": claim.item.gold if claim.item.is_gold else "n"}
    submit_page(page.pk, worker, answers)
    status = worker.project_statuses.get(project=project)
    assert status.gold_answered == 1 and status.gold_correct == 1


def test_snli_format_round_trips_through_the_commands(shared_data, make_project, tmp_path, db):
    project = make_project("nli_label", slug="snli-dev")
    source = shared_data / "snli" / "partial_original_format" / "snli_1.0_dev.partial.jsonl"
    call_command("import_items", project.slug, str(source), "--format", "snli")
    out = tmp_path / "out.jsonl"
    call_command("export_dataset", project.slug, "--format", "snli", "--output", str(out))
    originals = {row["pairID"]: row for row in map(json.loads, source.open(encoding="utf-8"))}
    exported = {row["pairID"]: row for row in map(json.loads, out.open(encoding="utf-8"))}
    assert exported.keys() == originals.keys()
    for pair_id, row in originals.items():
        assert exported[pair_id]["gold_label"] == row["gold_label"], pair_id
        assert exported[pair_id]["annotator_labels"] == row["annotator_labels"], pair_id
        assert (exported[pair_id]["sentence1"], exported[pair_id]["sentence2"]) == (row["sentence1"], row["sentence2"])


@pytest.mark.django_db
def test_a_bad_setting_gets_the_same_answer_from_form_api_and_command_line(author):
    expected = "must be at most 50"
    client = Client()
    client.force_login(author)
    page = client.post("/projects/new/", {"slug": "s1", "task_type": "nli_label", "items_per_page": "51"})
    assert page.status_code == 400 and expected in page.content.decode()
    api = APIClient()
    api.force_login(author)
    answer = api.post("/api/projects/", {"slug": "s2", "task_type": "nli_label", "items_per_page": 51}, format="json")
    assert (
        answer.status_code == 400 and answer.json()["field"] == "items_per_page" and expected in answer.json()["detail"]
    )
    with pytest.raises(CommandError, match=expected):
        call_command("create_project", "s3", "--task-type", "nli_label", "--owner", "author1", "--items-per-page", "51")
    assert not Project.objects.exists()


@pytest.mark.django_db
def test_only_authors_create_projects_by_any_route(make_user):
    make_user("just-a-worker", "worker")
    with pytest.raises(CommandError, match="only authors"):
        call_command("create_project", "s3", "--task-type", "nli_label", "--owner", "just-a-worker")
    assert not Project.objects.exists()


@pytest.mark.django_db
def test_the_import_size_limit_holds_for_web_api_and_command_line(settings, make_project, author, tmp_path, web_import):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.NLI_MAX_IMPORT_BYTES = 100
    project = make_project("nli_label")
    body = b'{"premise": "P", "hypothesis": "H"}\n' * 10
    client = Client()
    client.force_login(author)
    page = web_import(client, project, "jsonl", SimpleUploadedFile("a.jsonl", body))
    assert "Not imported" in page.content.decode() and "over the import limit" in page.content.decode()
    api = APIClient()
    api.force_login(author)
    answer = api.post(
        f"/api/projects/{project.slug}/import/",
        {"format": "jsonl", "file": SimpleUploadedFile("a.jsonl", body)},
        format="multipart",
    )
    assert answer.status_code == 413 and "over the import limit" in answer.json()["detail"]
    path = tmp_path / "a.jsonl"
    path.write_bytes(body)
    with pytest.raises(CommandError, match="over the import limit"):
        call_command("import_items", project.slug, str(path), "--format", "jsonl")
    with pytest.raises(ImportFileError):
        import_file(project, path, "jsonl")
    assert not project.items.exists()


@pytest.mark.label_variation  # the docs describe every format, the app's among them
def test_the_format_docs_are_current():
    """docs/formats.md's field tables are what the formats declare (manage.py describe_formats writes them)."""
    from dataset_io.formats import fields_markdown

    text = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    block = text.split("<!-- fields: begin -->\n", 1)[1].split("<!-- fields: end -->", 1)[0]
    assert block.strip() == fields_markdown().strip(), "run: python manage.py describe_formats"


def test_a_format_registered_twice_is_refused():
    from dataset_io.formats import FORMATS, register

    with pytest.raises(ValueError, match="registered already"):
        register(FORMATS["usnli"])
