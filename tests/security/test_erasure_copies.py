"""Erasure reaches every copy (issue 53, item 2): an e-mail address and a phone number planted in every free-text
field a participant can fill and in their platform IDs are found nowhere after `forget_participant`: not in a
dump of the database, not in any fresh export or bundle, not in a kept file (the var folder, or the bucket), and
the stored exports and bundles made before are removed and named. Other people's work stays."""

import io
import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client, override_settings

from annotation.models import Annotation, AuditEntry, CrowdSession, Example, Project
from annotation.services import drafts
from annotation.services.assignments import claim_page, submit_page
from annotation.services.crowd import crowd
from annotation.services.crowd.erased_copies import ERASED_TEXT
from annotation.services.linking import send_to_validation
from annotation.services.projects import clone_project, update_project
from dataset_io.formats import exportable
from dataset_io.formats.base import ExportOptions
from dataset_io.services import background, exporters
from dataset_io.services.bundle import write_bundle
from jobs.models import Job
from tests.conftest import IMMEDIATE_TASKS, on_postgres
from tests.faults.conftest import s3, s3_server  # noqa: F401  the S3 stand-in (moto's server)
from tests.faults.test_storage import bucket_settings

pytestmark = [pytest.mark.django_db, pytest.mark.label_variation]  # explanations and reason notes: the app's

EMAIL, PHONE = "jane.doe@example.org", "+44 7700 900461"
PHONE_IN_IDS = "447700900461"  # a platform ID takes letters, digits, - and _ only
PID = f"PID{PHONE_IN_IDS}"
TRACES = (EMAIL, PHONE, PHONE_IN_IDS)
PLANTED = f"write to {EMAIL} or call {PHONE}"
OTHER_WRITER = "The suit and the crowded train suggest a morning commute."
VALIDATOR_REASON = "it follows from the commute"
PREMISE = "A man in a grey suit is reading a newspaper on a crowded train."
ALL_ROWS = ExportOptions(include_unanswered=True, include_gold=True)


def explained(text: str) -> dict:
    return {"explanation": text, "premise_spans": [[2, 5]], "hypothesis_spans": []}


def submit(project, worker, value, reason: str = "") -> Annotation:
    page = claim_page(project, worker)
    (claim,) = page.claims.all()
    submit_page(page.pk, worker, {str(claim.item_id): {"value": value, "reason": reason}})
    return Annotation.objects.get(assignment=page)


@pytest.fixture
def planted(make_project, import_rows, make_user):
    """A Prolific participant who typed the e-mail and the phone number everywhere they could: explanations
    (sent to the linked validation study), reasons, a reason note, a written hypothesis (sent to its own
    validation study), a draft, their account's name and e-mail, their
    platform IDs. Another writer and a validator work beside them. Returns the four studies and the people."""
    from label_variation.services import reasons

    explain = make_project(
        "label_explanation", slug="explain", items_per_page=1, redundancy=2, max_annotations=2, reason_taggers="workers"
    )
    import_rows(
        explain, [{"id": str(i), "premise": PREMISE, "hypothesis": f"A man is going to work {i}."} for i in (1, 2)]
    )
    person = crowd.enter(explain, {"PROLIFIC_PID": PID, "STUDY_ID": "STUDY", "SESSION_ID": f"S{PHONE_IN_IDS}"}).worker
    person.email, person.first_name, person.last_name = EMAIL, "Jane", PHONE
    person.save()
    other, validator = make_user("other-writer"), make_user("validator")
    theirs = submit(explain, person, {"labels": {"e": explained(f"Commuters read, {PLANTED}.")}, "idk": False}, PLANTED)
    tag = reasons.TACL_2022_TAXONOMY[0]["tag"]
    reasons.tag_item(theirs.item, person, [tag], note=PLANTED)
    submit(explain, other, {"labels": {"e": explained(OTHER_WRITER)}, "idk": False})
    send_to_validation(explain)
    explain.refresh_from_db()
    validation = update_project(explain.validation_project, items_per_page=1)
    open_page = claim_page(explain, person)  # the second pair, left open with a draft
    typing = json.dumps({"labels": {"n": explained(PLANTED)}})
    drafts.save_draft(
        open_page.pk, person, {str(c.item_id): {"value": typing, "reason": PLANTED} for c in open_page.claims.all()}
    )
    judged = submit(validation, validator, {"makes_sense": True}, VALIDATOR_REASON)
    assert judged.item.example.origin == theirs  # the validator judged the participant's explanation

    write = make_project("hypothesis_writing", slug="write", items_per_page=1)
    import_rows(write, [{"id": "kite", "premise": "A boy flies a red kite on a windy beach."}])
    writer = crowd.enter(write, {"PROLIFIC_PID": PID, "STUDY_ID": "STUDY2", "SESSION_ID": f"T{PHONE_IN_IDS}"}).worker
    sentences = {
        "e": f"A boy can be reached at {EMAIL}.",
        "n": f"The boy's phone is {PHONE}.",
        "c": "Nobody is outside.",
    }
    submit(write, writer, sentences, PLANTED)  # an account of theirs in each study
    send_to_validation(write)
    write.refresh_from_db()
    return [explain, validation, write, write.validation_project], person, other, validator


def readable(name: str, content: bytes) -> str:
    """A kept file as text: a zip's members and a Parquet file's rows read out (compressed, a grep misses them)."""
    if name.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            return "\n".join(readable(member, archive.read(member)) for member in archive.namelist())
    if name.endswith(".parquet"):
        import pyarrow.parquet

        return json.dumps(pyarrow.parquet.read_table(io.BytesIO(content)).to_pylist(), default=str)
    return content.decode("utf-8", "replace")


def database_dump() -> str:
    """Every row of the database as SQL text: SQLite's iterdump(), or pg_dump (it reads committed rows only: the
    PostgreSQL test commits, django_db(transaction=True))."""
    if on_postgres():
        db = connection.settings_dict
        command = ["pg_dump", "--data-only", "-h", db["HOST"] or "127.0.0.1", "-p", str(db["PORT"] or 5432)]
        command += ["-U", db["USER"], db["NAME"]]
        env = {**os.environ, "PGPASSWORD": db["PASSWORD"] or ""}
        return subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout
    connection.ensure_connection()
    return "\n".join(connection.connection.iterdump())


def fresh_exports(studies, folder: Path) -> str:
    """Every format of every study, and a bundle of each, made now."""
    texts = []
    for study in studies:
        study.refresh_from_db()
        texts += ["".join(exporters.export(study, fmt, ALL_ROWS)) for fmt in exportable(study.task, study.options)]
        write_bundle(study, folder / f"{study.slug}.zip", options=ALL_ROWS, parquet=True)
        texts.append(readable("bundle.zip", (folder / f"{study.slug}.zip").read_bytes()))
    return "\n".join(texts)


def kept_files(var: Path) -> str:
    return "\n".join(readable(path.name, path.read_bytes()) for path in sorted(var.rglob("*")) if path.is_file())


def store_exports(studies, author) -> list[Job]:
    """Every format of every study, and a bundle of each, made as stored files to download later."""
    jobs = []
    for study in studies:
        jobs += [background.start_export(study, fmt, author, ALL_ROWS) for fmt in exportable(study.task, study.options)]
        jobs.append(background.start_bundle(study, author, ALL_ROWS, parquet=True))
    for job in jobs:
        job.refresh_from_db()
        assert job.status == "done" and job.output, (job.kind, job.params, job.error)
    return jobs


def erase() -> str:
    out = io.StringIO()
    call_command("forget_participant", "prolific", PID, stdout=out)
    return out.getvalue()


def assert_found_before_and_nowhere_after(texts_before: dict[str, str], texts_after: dict[str, str]) -> None:
    for where, text in texts_before.items():
        for trace in TRACES if where == "database" else (EMAIL, PHONE):  # exports never carry platform IDs
            assert trace in text, (where, trace)  # the check can see it
    for where, text in texts_after.items():
        for trace in TRACES:
            assert trace not in text, (where, trace)


def test_after_erasure_the_traces_are_nowhere_in_the_database_exports_and_kept_files(
    planted, author, settings, tmp_path
):
    if on_postgres():
        pytest.skip("pg_dump reads committed rows only: test_the_postgres_dump_holds_nothing_after_an_erasure")
    studies, *_ = planted
    var = tmp_path / "var"
    settings.TASKS, settings.MEDIA_ROOT, settings.SCRATCH_DIR = IMMEDIATE_TASKS, var / "media", var / "scratch"
    jobs = store_exports(studies, author)
    before = {
        "database": database_dump(),
        "exports": fresh_exports(studies, tmp_path),
        "kept files": kept_files(var),
    }
    said = erase()
    after = {
        "database": database_dump(),
        "exports": fresh_exports(studies, tmp_path),
        "kept files": kept_files(var),
    }
    assert_found_before_and_nowhere_after(before, after)
    # The stored files are removed, and the author is told which: command output, the erasure's record, each job.
    assert f"stored exports and bundles removed (made before the erasure): {len(jobs)}" in said
    for job in jobs:
        job.refresh_from_db()
        assert job.output == "" and "a participant's data was erased" in job.log
        assert f"job {job.pk}: " in said
    recorded = AuditEntry.objects.filter(action="erase").first().details
    assert len(recorded["files_removed"]) == len(jobs) and recorded["copies_marked"] == 4


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_postgres_dump_holds_nothing_after_an_erasure(planted):
    before = database_dump()
    erase()
    assert_found_before_and_nowhere_after({"database": before}, {"database": database_dump()})


def test_after_erasure_no_object_in_the_bucket_holds_the_traces(planted, author, s3, tmp_path):  # noqa: F811
    studies, *_ = planted
    env, client = s3

    def bucket() -> str:
        names = [
            item["Key"] for item in client.list_objects_v2(Bucket=env["AWS_STORAGE_BUCKET_NAME"]).get("Contents", [])
        ]
        return "\n".join(
            readable(name, client.get_object(Bucket=env["AWS_STORAGE_BUCKET_NAME"], Key=name)["Body"].read())
            for name in names
        )

    with override_settings(**bucket_settings(env), SCRATCH_DIR=tmp_path / "scratch"):
        jobs = store_exports(studies, author)
        before = bucket()
        erase()
        after = bucket()
    assert_found_before_and_nowhere_after({"bucket": before}, {"bucket": after})
    assert all(Job.objects.get(pk=job.pk).output == "" for job in jobs)


def test_other_peoples_work_survives_the_erasure(planted):
    (explain, validation, write, write_validation), person, other, validator = planted
    answers_before = Annotation.objects.exclude(worker=person).count()
    clone = clone_project(validation, "explain-validation-copy", validation.owner, with_items=True)
    erase()
    # A study cloned from the validation study with its items: the same rule (the key says where it came from).
    copied = sorted(example.source_data["explanation"] for example in clone.examples.all())
    assert copied == sorted([ERASED_TEXT, OTHER_WRITER])
    # The other writer's explanation, in their answer and in the validation item made from it.
    assert Annotation.objects.exclude(worker=person).count() == answers_before
    kept = Annotation.objects.get(item__project=explain, worker=other).value["labels"]["e"]["explanation"]
    assert kept == OTHER_WRITER
    assert Example.objects.get(project=validation, origin__worker=other).source_data["explanation"] == OTHER_WRITER
    # The participant's validation item stays, with its premise, label, highlights and the validator's answer;
    # only the explanation they wrote is replaced by the marker.
    theirs = Example.objects.get(project=validation, origin__worker=person)
    assert theirs.source_data == {"label": "e", **explained(ERASED_TEXT)}
    assert theirs.premise == PREMISE and theirs.items.get().status == "done"
    judged = Annotation.objects.get(item__example=theirs, worker=validator)
    assert (judged.value, judged.reason) == ({"makes_sense": True}, VALIDATOR_REASON)
    # Written hypotheses: the sentences that held the traces are marked, the third is theirs too (erased).
    written = dict(Example.objects.filter(project=write_validation).values_list("origin_target", "hypothesis"))
    assert written == {"e": ERASED_TEXT, "n": ERASED_TEXT, "c": ERASED_TEXT}
    assert (
        Project.objects.filter(pk__in=[study.pk for study in (explain, validation, write, write_validation)]).count()
        == 4
    )


def test_written_updates_are_marked_and_the_hypothesis_they_update_stays(make_project, import_rows):
    """Updates (delta-NLI) go to a per-atom validation study whose atom is the item's hypothesis: only the update
    the participant wrote is theirs."""
    updates = make_project("hypothesis_writing", slug="updates", targets="strengthener,weakener", items_per_page=1)
    hypothesis = "The man is going to work."
    import_rows(updates, [{"id": "p1", "premise": "A man in a suit waits at a bus stop.", "hypothesis": hypothesis}])
    writer = crowd.enter(updates, {"PROLIFIC_PID": PID, "STUDY_ID": "STUDY", "SESSION_ID": "S1"}).worker
    submit(updates, writer, {"strengthener": f"He says: mail me at {EMAIL}.", "weakener": "It is Sunday morning."})
    send_to_validation(updates)
    validation = Project.objects.get(pk=updates.pk).validation_project
    erase()
    items = validation.items.select_related("example", "atom").order_by("example__update_type")
    assert [(i.example.update_type, i.example.update, i.atom.text) for i in items] == [
        ("strengthener", ERASED_TEXT, hypothesis),
        ("weakener", ERASED_TEXT, hypothesis),
    ]


def test_the_admin_action_names_the_stored_files_it_removed(planted, author, make_user, settings, tmp_path):
    (explain, *_), *_ = planted
    settings.TASKS, settings.MEDIA_ROOT, settings.SCRATCH_DIR = IMMEDIATE_TASKS, tmp_path / "media", tmp_path / "s"
    job = background.start_export(explain, "jsonl", author)
    client = Client()
    client.force_login(make_user("root", "admin"))
    sessions = [str(pk) for pk in CrowdSession.objects.filter(participant_id=PID).values_list("pk", flat=True)]
    chosen = {"action": "forget_participants", "_selected_action": sessions, "confirmed": "1"}
    page = client.post("/admin/annotation/crowdsession/", chosen, follow=True).content.decode()
    assert "Stored exports and bundles removed (made before the erasure): 1" in page
    assert f"job {job.pk}: explain" in page and not (tmp_path / "media" / job.storage_prefix).exists()
