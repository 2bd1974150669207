"""Running a study from the browser: lifecycle, members, clone, qualification, import with preview, exports
that fit the task type (and never hang), large imports and exports as jobs, and the dashboard's tools."""

import io
import json
import os
import signal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Annotation, Example, Item, Project
from annotation.services import projects, qualification, quality
from annotation.services.assignments import claim_page, submit_page
from annotation.tasktypes import TASK_TYPES
from common.schema import SettingError
from dataset_io.demo import load_demo
from dataset_io.formats import exportable
from dataset_io.services import background
from dataset_io.services.exporters import FORMATS as EXPORT_FORMATS
from dataset_io.services.importers import ImportFileError, import_file, import_stream
from dataset_io.services.validation import validate_file
from jobs.models import Job
from tests.conftest import IMMEDIATE_TASKS

pytestmark = pytest.mark.django_db


@pytest.fixture
def inline_jobs(settings, tmp_path):
    settings.TASKS = IMMEDIATE_TASKS
    settings.MEDIA_ROOT = tmp_path / "media"


def logged_in(user, api=False):
    client = APIClient() if api else Client()
    client.force_login(user)
    return client


def answer_all(project, worker, value):
    page = claim_page(project, worker)
    submit_page(page.pk, worker, {str(c.item_id): {"value": value, "seconds": 1.0} for c in page.claims.all()})
    return page


# Lifecycle ---------------------------------------------------------------------------------------------


def test_new_studies_are_drafts_on_the_web_and_api_and_published_from_the_command_line(author):
    web = logged_in(author).post("/projects/new/", {"slug": "web-study", "task_type": "nli_label"})
    assert web.status_code == 302 and Project.objects.get(slug="web-study").status == "draft"
    api = logged_in(author, api=True).post(
        "/api/projects/", {"slug": "api-study", "task_type": "nli_label"}, format="json"
    )
    assert api.status_code == 201 and api.json()["status"] == "draft"
    call_command(
        "create_project", "cli-study", "--task-type", "nli_label", "--owner", author.username, stdout=io.StringIO()
    )
    assert Project.objects.get(slug="cli-study").status == "published"
    call_command(
        "create_project",
        "cli-draft",
        "--task-type",
        "nli_label",
        "--owner",
        author.username,
        "--status",
        "draft",
        stdout=io.StringIO(),
    )
    assert Project.objects.get(slug="cli-draft").status == "draft"


def test_the_lifecycle_moves_only_along_its_transitions(make_project, import_rows, worker, author):
    project = make_project("nli_label", status="draft")
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    api = logged_in(author, api=True)
    for status in ("published", "paused", "published", "closed", "published"):
        response = api.patch(f"/api/projects/{project.slug}/", {"status": status}, format="json")
        assert response.status_code == 200 and response.json()["status"] == status
    project.refresh_from_db()
    answer_all(project, worker, "e")
    refused = api.patch(f"/api/projects/{project.slug}/", {"status": "draft"}, format="json")
    assert refused.status_code == 409 and refused.json()["field"] == "status"  # the lifecycle: a conflict
    assert logged_in(author).post(f"/projects/{project.slug}/status/", {"status": "bogus"}).status_code == 302
    assert Project.objects.get(pk=project.pk).status == "published"


def test_a_study_with_no_items_cannot_be_published(make_project, import_rows, author):
    """Page and API alike: refused with the reason; gold checks are no data to work on."""
    project = make_project("nli_label", status="draft")
    gold = [{"id": "g", "premise": "A dog runs.", "hypothesis": "An animal moves.", "label": "entailment"}]
    import_stream(project, io.StringIO(json.dumps(gold[0]) + "\n"), "jsonl", purpose="gold")
    reason = "a study with no items cannot be published: import its data first"
    page = logged_in(author).post(f"/projects/{project.slug}/status/", {"status": "published"}, follow=True)
    assert reason in [str(message) for message in page.context["messages"]]
    api = logged_in(author, api=True)
    refused = api.patch(f"/api/projects/{project.slug}/", {"status": "published"}, format="json")
    assert refused.status_code == 409 and (refused.json()["field"], refused.json()["detail"]) == (
        "status",
        f"status: {reason}",
    )
    assert Project.objects.get(pk=project.pk).status == "draft"
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    published = api.patch(f"/api/projects/{project.slug}/", {"status": "published"}, format="json")
    assert published.status_code == 200 and published.json()["status"] == "published"
    # A writing study's validation study gets its items as pairs are written: it may go out empty.
    validation = make_project("nli_label", slug="validates", status="draft")
    make_project("hypothesis_writing", slug="writes", validation_project=validation.slug)
    assert projects.set_status(validation, "published").status == "published"


def test_settings_that_would_change_collected_answers_are_refused_once_answered(make_project, import_rows, worker):
    project = make_project("nli_label")
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    projects.update_project(project, labels=["1", "2"])  # nothing collected yet: allowed
    projects.update_project(project, labels=["e", "n", "c"], title="Renamed")
    answer_all(project, worker, "e")
    for change in ({"labels": ["1", "2"]}, {"task_type": "unli_slider"}):
        with pytest.raises(SettingError) as error:
            projects.update_project(project, **change)
        assert "answers" in str(error.value)
    projects.update_project(project, title="Still fine", items_per_page=3)
    assert Project.objects.get(pk=project.pk).title == "Still fine"


def test_the_settings_page_saves_through_the_schema(make_project, author):
    project = make_project("unli_slider")
    page = logged_in(author).post(
        f"/projects/{project.slug}/settings/",
        {
            "task_type": "unli_slider",
            "title": "Calibrated",
            "instructions": "**Read** each pair.",
            "items_per_page": "4",
            "redundancy": "2",
            "max_annotations": "3",
            "claim_timeout_minutes": "45",
            "gold_rate": "0.2",
            "gold_min_checks": "3",
            "speeder_seconds": "1.5",
            "suspend_below": "0",
            "status": "published",
            "audience": "members",
            "worked_examples": "[]",
            "completion_code": "CODE-42",
            "disagreement_positions": "1500",
        },
    )
    assert page.status_code == 302, page.content.decode()[:500]
    project.refresh_from_db()
    assert (project.title, project.items_per_page, project.claim_timeout_minutes, project.audience) == (
        "Calibrated",
        4,
        45,
        "members",
    )
    assert project.options["completion_code"] == "CODE-42" and project.options["disagreement_positions"] == 1500
    bad = logged_in(author).post(f"/projects/{project.slug}/settings/", {"task_type": "unli_slider", "gold_rate": "2"})
    assert bad.status_code == 400 and "must be at most 1" in bad.content.decode()


def test_instructions_are_markdown_without_scripts(make_project, import_rows, worker):
    project = make_project("nli_label", instructions="**Careful** <script>alert(1)</script> [x](javascript:alert(1))")
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    html = logged_in(worker).get(f"/work/{project.slug}/").content.decode()
    assert "<strong>Careful</strong>" in html and "<script>alert(1)" not in html and "javascript:" not in html


# Members and clones -------------------------------------------------------------------------------------


def test_members_are_admitted_by_name_or_email_and_unknown_names_admit_nobody(make_project, make_user, author):
    project = make_project("nli_label", audience="members")
    alice = make_user("alice", "worker")
    alice.email = "alice@lab.example"
    alice.save()
    bob = make_user("bob", "worker")
    with pytest.raises(SettingError, match="nobody-here"):
        projects.add_members(project, "alice@lab.example, nobody-here")
    assert not project.members.exists()
    logged_in(author).post(f"/projects/{project.slug}/members/", {"names": "alice@lab.example\nbob", "add": "1"})
    assert set(project.members.values_list("username", flat=True)) == {"alice", "bob"}
    assert logged_in(bob, api=True).get(f"/api/projects/{project.slug}/").status_code == 200


def test_a_clone_copies_settings_and_optionally_fresh_items(make_project, import_rows, worker, author):
    project = make_project("nli_label", items_per_page=3, completion_code="ABC")
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": "H"} for i in range(4)])
    answer_all(project, worker, "e")
    bare = projects.clone_project(project, "copy-bare", author)
    full = projects.clone_project(project, "copy-full", author, with_items=True)
    assert (bare.status, bare.items_per_page) == ("draft", 3)
    assert bare.options["completion_code"] == ""  # a new wave's participants must not know its code already
    assert not bare.items.exists()
    assert full.items.count() == 4 and not Annotation.objects.filter(item__project=full).exists()
    assert set(full.items.values_list("status", flat=True)) == {"open"}
    with pytest.raises(SettingError):
        projects.clone_project(project, "not a slug!", author)


# Qualification ------------------------------------------------------------------------------------------


def test_a_qualification_test_is_built_from_the_study_and_fixed_once_taken(make_project, import_rows, worker, author):
    project = make_project("nli_label")
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": "H", "label": "e"} for i in range(3)])
    page = logged_in(author)
    for item in project.items.all():
        assert qualification.suggested_reference(project, item) == "e"
        page.post(f"/projects/{project.slug}/qualification/", {"copy": item.pk, "reference": "entailment"})
    page.post(
        f"/projects/{project.slug}/qualification/",
        {"rules": "1", "max_attempts": "1", "min_accuracy": "1", "show_feedback": "true"},
    )
    project.refresh_from_db()
    test = project.qualification
    assert test.items.count() == 3 and set(test.items.values_list("reference", flat=True)) == {"e"}
    assert set(test.items.values_list("copied_from", flat=True)) == set(project.items.values_list("id", flat=True))
    assert (test.max_attempts, test.min_accuracy, test.options["show_feedback"]) == (1, 1.0, True)
    attempt = qualification.take_test(test, worker, {str(item.pk): {"value": "n"} for item in test.items.all()})
    assert not attempt.passed and attempt.details["score"] == 0.0 and attempt.details["pass_mark"] == 1.0
    with pytest.raises(qualification.QualificationError):
        qualification.remove_item(project, test.items.first().pk)


def test_rows_can_be_imported_as_qualification_items(make_project):
    project = make_project("nli_label")
    rows = "".join(
        json.dumps({"premise": f"P{i}", "hypothesis": "H", "label": "contradiction"}) + "\n" for i in range(2)
    )
    report = import_stream(project, io.StringIO(rows), "jsonl", purpose="qualification")
    assert report.qualification_items == 2 and not project.items.exists()
    assert set(project.qualification.items.values_list("reference", flat=True)) == {"c"}
    with pytest.raises(ImportFileError, match="reference"):
        import_stream(project, io.StringIO('{"premise": "P", "hypothesis": "H"}\n'), "jsonl", purpose="qualification")


# Imports ------------------------------------------------------------------------------------------------


def test_the_preview_shows_the_first_rows_and_maps_columns(make_project, author):
    project = make_project("nli_label")
    client = logged_in(author)
    data = "pair,s1,s2,gold\n" + "".join(f"{i},A dog runs {i}.,An animal moves.,entailment\n" for i in range(30))
    staged = client.post(
        f"/projects/{project.slug}/import/", {"format": "csv", "file": SimpleUploadedFile("d.csv", data.encode())}
    )
    preview = client.get(staged["Location"])
    html = preview.content.decode()
    assert preview.status_code == 200 and "A dog runs 9." in html and "A dog runs 10." not in html
    assert preview.context["preview"]["columns"] == ["pair", "s1", "s2", "gold"]
    done = client.post(
        staged["Location"],
        {
            "format": "csv",
            "purpose": "data",
            "map_id": "pair",
            "map_premise": "s1",
            "map_hypothesis": "s2",
            "map_label": "gold",
            "confirm": "1",
        },
    )
    assert done.status_code == 302 and project.items.count() == 30
    assert Example.objects.get(project=project, source_id="7").premise == "A dog runs 7."
    assert client.get(staged["Location"]).status_code == 302  # the staged file is gone once imported


def test_only_formats_that_fit_are_offered_and_accepted(make_project, author):
    project = make_project("defeasible_atom")
    page = logged_in(author).get(f"/projects/{project.slug}/")
    offered = [value for value, _ in page.context["upload_form"].fields["format"].choices]
    assert offered == ["dnli", "atoms", "jsonl", "csv"]
    api = logged_in(author, api=True).post(
        f"/api/projects/{project.slug}/import/",
        {"format": "usnli", "file": SimpleUploadedFile("x.csv", b"id,pre,hyp,nli,unli\n1,P,H,0,0.5\n")},
        format="multipart",
    )
    assert api.status_code == 409 and "does not fit" in api.json()["detail"]


def test_a_50_mb_binary_file_is_refused_as_not_utf8_by_web_api_and_command_line(make_project, author, tmp_path):
    project = make_project("nli_label")
    junk = b"\x80\x81" + os.urandom(50 * 1024 * 1024)
    path = tmp_path / "junk.jsonl"
    path.write_bytes(junk)
    with pytest.raises(CommandError, match=r"not UTF-8 text \(byte 0\)"):
        call_command("import_items", project.slug, str(path), "--format", "jsonl", stdout=io.StringIO())
    api = logged_in(author, api=True).post(
        f"/api/projects/{project.slug}/import/",
        {"format": "jsonl", "file": SimpleUploadedFile("junk.jsonl", junk)},
        format="multipart",
    )
    assert api.status_code == 409 and "not UTF-8 text (byte 0)" in json.dumps(api.json())
    client = logged_in(author)
    staged = client.post(
        f"/projects/{project.slug}/import/", {"format": "jsonl", "file": SimpleUploadedFile("junk.jsonl", junk)}
    )
    preview = client.get(staged["Location"])
    assert "not UTF-8 text (byte 0)" in preview.content.decode()
    confirmed = client.post(staged["Location"], {"format": "jsonl", "purpose": "data", "confirm": "1"})
    assert confirmed.status_code == 400 and "not UTF-8 text (byte 0)" in confirmed.content.decode()
    assert not Example.objects.exists()


def test_a_bad_row_near_the_end_of_10000_names_its_line_and_stores_nothing(make_project, tmp_path):
    project = make_project("unli_slider")
    lines = ["id,pre,hyp,nli,unli"] + [f"{i},P {i},H {i},1,0.5" for i in range(10_000)]
    lines[9_000] = "8999,P,H,1,not-a-number"  # the file's line 9,001
    path = tmp_path / "big.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportFileError) as error:
        import_file(project, path, "usnli")
    assert error.value.errors == [(9001, "unli", "must be a number, got 'not-a-number'")]
    assert not Example.objects.exists() and not Item.objects.exists()


def test_delta_nli_rows_into_an_effect_project_say_why_no_item_was_made(shared_data, make_project):
    project = make_project("defeasible_atom")
    report = import_file(project, shared_data / "defeasible-nli" / "defeasible-snli" / "dev.jsonl", "dnli")
    assert report.items == 0 and report.created == 1785
    assert "annotates their atoms" in report.notes[0] and "format atoms" in report.notes[0]


def test_a_large_import_runs_as_a_job_and_a_bad_one_stores_nothing(make_project, author, inline_jobs, monkeypatch):
    monkeypatch.setattr(background, "IMPORT_JOB_LINES", 5)
    project = make_project("nli_label")
    client = logged_in(author)
    rows = "".join(json.dumps({"id": str(i), "premise": f"P{i}", "hypothesis": "H"}) + "\n" for i in range(20))
    staged = client.post(
        f"/projects/{project.slug}/import/", {"format": "jsonl", "file": SimpleUploadedFile("r.jsonl", rows.encode())}
    )
    done = client.post(staged["Location"], {"format": "jsonl", "purpose": "data", "confirm": "1"})
    job = Job.objects.get(kind="import")
    assert done["Location"] == f"/jobs/{job.pk}/" and job.status == "done", job.error
    assert job.result["created"] == 20 and project.items.count() == 20 and (job.done, job.total) == (job.total, 20)
    staged = client.post(
        f"/projects/{project.slug}/import/",
        {
            "format": "jsonl",
            "file": SimpleUploadedFile("b.jsonl", (rows.replace("P1", "Q1") + '{"id": "x"}\n').encode()),
        },
    )
    client.post(staged["Location"], {"format": "jsonl", "purpose": "data", "confirm": "1"})
    failed = Job.objects.filter(kind="import").latest("id")
    assert failed.status == "failed" and "line 21, field 'premise'" in failed.error
    assert project.items.count() == 20


# Exports ------------------------------------------------------------------------------------------------


def _consume(response, seconds=30):
    """The streamed body, read under an alarm: an export must never hang."""

    def hung(signum, frame):
        raise AssertionError("the export did not finish")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        return b"".join(response.streaming_content).decode()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
@pytest.mark.parametrize("task_type", [name for name, task in TASK_TYPES.items() if task.has_demo])
def test_every_export_either_fits_and_validates_or_is_refused(task_type, fmt, django_user_model, tmp_path):
    load_demo()
    project = Project.objects.get(slug=TASK_TYPES[task_type].demo().slug)
    api = logged_in(django_user_model.objects.get(username="author"), api=True)
    response = api.get(f"/api/projects/{project.slug}/export/?as={fmt}&include_unanswered=1&include_gold=1")
    if fmt not in exportable(project.task, project.options):
        assert response.status_code == 404 and "does not fit" in response.json()["detail"]  # no such export
        return
    assert response.status_code == 200
    body = _consume(response)
    path = tmp_path / "export"
    path.write_text(body, encoding="utf-8")
    report = validate_file(path, fmt)
    assert report.valid, report.as_dict(limit=5)
    expected = {"atoms": project.examples.count(), "annotations": 0, "dnli": 0}.get(fmt, project.items.count())
    assert report.records == expected


def test_an_export_prepared_as_a_job_is_downloaded_from_its_page(make_project, import_rows, author, inline_jobs):
    project = make_project("nli_label")
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": "H"} for i in range(7)])
    client = logged_in(author)
    started = client.post(f"/projects/{project.slug}/exports/", {"format": "csv", "include_unanswered": "1"})
    job = Job.objects.get(kind="export")
    assert started["Location"] == f"/jobs/{job.pk}/" and job.status == "done" and job.result["records"] == 7
    download = client.get(f"/jobs/{job.pk}/output/")
    assert download["Content-Disposition"].endswith(f'filename="{project.slug}.csv"')
    assert b"".join(download.streaming_content).decode().count("\n") == 8
    refused = client.post(f"/projects/{project.slug}/exports/", {"format": "usnli"})
    assert refused.status_code == 302 and Job.objects.filter(kind="export").count() == 1


# The dashboard ------------------------------------------------------------------------------------------


def test_items_are_searched_filtered_and_sorted(make_project, import_rows, worker, author):
    project = make_project("nli_label", items_per_page=2, redundancy=1)
    import_rows(
        project,
        [
            {"id": str(i), "premise": f"Premise about {word}", "hypothesis": "H"}
            for i, word in enumerate(["cats", "dogs", "cats and dogs", "birds"])
        ],
    )
    answer_all(project, worker, "e")
    client = logged_in(author)

    def shown(**query):
        return [item.example.premise for item in client.get(f"/projects/{project.slug}/items/", query).context["items"]]

    assert shown(q="cats") == ["Premise about cats", "Premise about cats and dogs"]
    assert shown(show="done") == ["Premise about cats", "Premise about dogs"]
    assert shown(show="open", sort="-id") == ["Premise about birds", "Premise about cats and dogs"]
    assert shown(q="nothing like it") == []


def test_a_worker_page_shows_figures_and_blocking_leaves_their_answers_out(
    make_project, import_rows, make_user, author
):
    project = make_project("nli_label", items_per_page=2, redundancy=2, max_annotations=2, speeder_seconds=5)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": "H"} for i in range(2)])
    fast, careful = make_user("fast", "worker"), make_user("careful", "worker")
    answer_all(project, careful, "e")
    answer_all(project, fast, "c")  # 1 second per item: under the study's 5-second threshold
    assert set(project.items.values_list("status", flat=True)) == {"adjudication"}
    figures = {row["worker"]: row for row in quality.worker_figures(project)}
    assert figures["fast"]["speeder"] and figures["careful"]["speeder"]  # both answered in 1 s per item
    client = logged_in(author)
    page = client.get(f"/projects/{project.slug}/workers/{fast.pk}/")
    assert page.status_code == 200 and "speeder" in page.content.decode()
    client.post(f"/projects/{project.slug}/workers/{fast.pk}/", {"action": "block", "exclude_answers": "1"})
    status = quality.WorkerStatus.objects.get(project=project, worker=fast)
    assert status.blocked and status.blocked_by == author and status.exclude_answers
    assert set(project.items.values_list("status", "annotation_count")) == {("open", 1)}  # their votes left out
    assert Annotation.objects.filter(worker=fast, excluded=True).count() == 2  # kept, never deleted
    api = logged_in(fast, api=True)
    assert api.post(f"/api/projects/{project.slug}/claim/").status_code == 403
    client.post(f"/projects/{project.slug}/workers/{fast.pk}/", {"action": "unblock"})
    assert set(project.items.values_list("status", flat=True)) == {"adjudication"}
    assert not Annotation.objects.filter(excluded=True).exists()


def test_an_unanswered_item_becomes_a_gold_check(make_project, import_rows, author, worker):
    project = make_project("nli_label")
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": "H"} for i in range(2)])
    first, second = project.items.order_by("id")
    client = logged_in(author)
    client.post(f"/projects/{project.slug}/items/{first.pk}/gold/", {"reference": "contradiction"})
    first.refresh_from_db()
    assert first.is_gold and first.gold == "c" and not first.claimable
    claim_page(project, worker)
    client.post(f"/projects/{project.slug}/items/{second.pk}/gold/", {"reference": "e"})
    assert not Item.objects.get(pk=second.pk).is_gold  # a worker holds it: refused


def test_the_demo_has_a_paid_study_with_qualification_gold_and_code_and_loads_once():
    load_demo()
    load_demo()
    paid = Project.objects.get(slug="demo-paid")
    assert paid.qualification.items.count() == 3 and paid.items.filter(is_gold=True).count() == 3
    assert paid.options["completion_code"] and paid.gold_rate > 0 and paid.status == "published"
    assert paid.items.filter(is_gold=False).count() == 9
