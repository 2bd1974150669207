"""Participants' data: forget_participant (command and admin action) erases the platform ID and free text,
keeps the answers under a pseudonym and writes an audit row; the audit log records exports, blocks,
adjudications, settings changes and erasures, and only admins read it."""

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Annotation, AuditEntry, CrowdSession
from annotation.services import projects, quality
from annotation.services.analysis import adjudication
from annotation.services.assignments import claim_page, submit_page
from annotation.services.crowd import crowd
from dataset_io.services import exporters
from dataset_io.services.provenance import annotator_id

pytestmark = pytest.mark.django_db

PID = "5f2b9c0e1a2b3c4d5e6f7a8b"


@pytest.fixture
def study(make_project, import_rows):
    project = make_project("nli_label", items_per_page=2)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(4)])
    return project


@pytest.fixture
def participant(study, make_user):
    """A Prolific participant who entered through the study's link and answered a page with free-text reasons."""
    session = crowd.enter(study, {"PROLIFIC_PID": PID, "STUDY_ID": "STUDY", "SESSION_ID": "S1"})
    session.completion_code = "C0DE"
    session.save(update_fields=["completion_code"])
    worker = session.worker
    worker.email = "someone@example.org"
    worker.save()
    page = claim_page(study, worker)
    answers = {str(claim.item_id): {"value": "e", "reason": "I am Jane Doe from Leeds"} for claim in page.claims.all()}
    submit_page(page.pk, worker, answers)
    return worker


def test_forget_participant_erases_the_id_keeps_the_answers_and_is_logged(study, participant):
    before = list(Annotation.objects.filter(worker=participant).values_list("item_id", "value").order_by("item_id"))
    assert len(before) == 2
    out = io.StringIO()
    call_command("forget_participant", "prolific", PID, stdout=out)
    assert "erased 1 session and 1 account name; 2 answers kept" in out.getvalue()
    assert not CrowdSession.objects.filter(participant_id=PID).exists()
    assert set(CrowdSession.objects.values_list("session_id", "completion_code")) == {("", "")}
    worker = get_user_model().objects.get(pk=participant.pk)
    assert PID not in worker.username and worker.email == "" and not worker.is_active
    assert not worker.has_usable_password()
    after = list(Annotation.objects.filter(worker=participant).values_list("item_id", "value").order_by("item_id"))
    assert after == before  # the answers, under the same pseudonymous worker
    assert set(Annotation.objects.filter(worker=participant).values_list("reason", flat=True)) == {""}
    # Exports still carry the answers under the study's anonymised annotator id, and the ID nowhere.
    exported = "".join(exporters.export(study, "jsonl"))
    assert f'"annotator": "{annotator_id(study, participant.pk)}"' in exported and PID not in exported
    entry = AuditEntry.objects.get(action="erase")
    assert entry.actor_name == "command line" and entry.project_slug == study.slug
    assert entry.details["answers_kept"] == 2 and entry.details["reasons_erased"] == 2
    assert PID not in str(entry.details)
    with pytest.raises(CommandError, match="no prolific participant"):
        call_command("forget_participant", "prolific", PID, stdout=io.StringIO())


def test_the_admin_action_forgets_the_selected_participants(study, participant, make_user):
    admin = make_user("root", "admin")
    client = Client()
    client.force_login(admin)
    selected = CrowdSession.objects.filter(participant_id=PID).values_list("pk", flat=True)
    chosen = {"action": "forget_participants", "_selected_action": [str(pk) for pk in selected]}
    response = client.post("/admin/annotation/crowdsession/", chosen)
    assert response.status_code == 200  # first the list of who will be forgotten, nothing erased yet
    assert f"prolific: {PID}" in response.content.decode() and "cannot be undone" in response.content.decode()
    assert CrowdSession.objects.filter(participant_id=PID).exists()
    response = client.post("/admin/annotation/crowdsession/", {**chosen, "confirmed": "1"})
    assert response.status_code == 302
    assert not CrowdSession.objects.filter(participant_id=PID).exists()
    assert Annotation.objects.filter(worker=participant).count() == 2
    entry = AuditEntry.objects.get(action="erase")
    assert entry.actor_name == "root"


def test_exports_blocks_adjudications_and_settings_changes_are_logged(study, participant, author, make_user):
    api = APIClient()
    api.force_authenticate(author)
    assert api.get(f"/api/projects/{study.slug}/export/?as=csv").status_code == 200
    client = Client()
    client.force_login(author)
    assert client.get(f"/projects/{study.slug}/export/jsonl/").status_code == 200
    call_command("export_dataset", study.slug, "--format", "jsonl", "--output", "/dev/null", stdout=io.StringIO())
    quality.block(study, participant, author, exclude_answers=True)
    quality.unblock(study, participant, author)
    item = study.items.filter(annotations__worker=participant).first()
    adjudication.adjudicate(item.pk, author, "c", "checked by hand")
    assert api.patch(f"/api/projects/{study.slug}/", {"title": "Renamed"}, format="json").status_code == 200
    projects.set_status(study, "paused", changed_by=author)
    entries = list(AuditEntry.objects.order_by("id").values_list("action", "actor_name", "details"))
    assert [(action, who) for action, who, _ in entries] == [
        ("export", "author1"),
        ("export", "author1"),
        ("export", "command line"),
        ("block", "author1"),
        ("unblock", "author1"),
        ("adjudicate", "author1"),
        ("settings", "author1"),
        ("settings", "author1"),
    ]
    assert [details.get("via") for _, _, details in entries[:3]] == ["api", "web", "command line"]
    assert entries[3][2] == {"worker": f"w{participant.pk}", "exclude_answers": True, "reason": ""}
    assert entries[5][2]["after"] == "c"
    assert list(entries[6][2]["changes"]) == ["title"] and entries[6][2]["changes"]["title"]["after"] == "Renamed"
    assert entries[7][2]["changes"]["status"] == {"before": "published", "after": "paused"}


def test_a_settings_call_that_changes_nothing_writes_nothing(study, author):
    projects.update_project(study, changed_by=author, title=study.title)
    assert not AuditEntry.objects.exists()


def test_only_admins_read_the_audit_log(study, author, make_user):
    exporters.record_export(study, "csv", author, via="api")
    admin = make_user("root", "admin")
    client = Client()
    client.force_login(admin)
    page = client.get("/audit/")
    assert page.status_code == 200 and "author1" in page.content.decode() and study.slug in page.content.decode()
    assert "author1" not in client.get("/audit/?action=erase").content.decode()
    assert client.get("/admin/annotation/auditentry/").status_code == 200
    client.force_login(author)
    assert client.get("/audit/").status_code == 403
    assert client.get("/admin/annotation/auditentry/").status_code == 302  # not staff: to the admin login


# ---------------------------------------------------------------- free text they wrote

TYPED = "Jane Doe of Leeds wrote this"  # in every explanation and reason the participant typed


@pytest.fixture
def explainer(make_project, import_rows):
    """A Prolific participant of a label-explanation study: one page submitted with explanations and reasons
    they typed, a second page open with a draft."""
    from annotation.services import drafts

    study = make_project("label_explanation", slug="explained", items_per_page=2)
    import_rows(study, [{"id": str(i), "premise": f"P{i} words here", "hypothesis": f"H{i} words"} for i in range(4)])
    worker = crowd.enter(study, {"PROLIFIC_PID": PID, "STUDY_ID": "STUDY", "SESSION_ID": "SESSION-XYZ-77"}).worker
    worker.email = "jane@example.org"
    worker.save()
    page = claim_page(study, worker)
    explained = {"labels": {"entailment": {"explanation": f"{TYPED} because it says so"}}, "idk": False}
    submit_page(page.pk, worker, {str(c.item_id): {"value": explained, "reason": TYPED} for c in page.claims.all()})
    open_page = claim_page(study, worker)
    typing = json.dumps({"labels": {"entailment": {"explanation": TYPED}}})  # the page's hidden field, as text
    draft = {str(c.item_id): {"value": typing} for c in open_page.claims.all()}
    drafts.save_draft(open_page.pk, worker, draft)
    return study, worker


def everything_stored_and_exported(study) -> str:
    """A dump of the database, every export of the study and its bundle, as one text."""
    import tempfile
    import zipfile

    from dataset_io.formats import exportable
    from dataset_io.formats.base import ExportOptions
    from dataset_io.services.bundle import write_bundle

    dump = io.StringIO()
    call_command("dumpdata", "--exclude", "models_backend", stdout=dump)  # checkpoints: no participant data
    everything = ExportOptions(include_unanswered=True, include_gold=True)
    exports = ["".join(exporters.export(study, fmt, everything)) for fmt in exportable(study.task, study.options)]
    with tempfile.TemporaryDirectory() as folder:
        write_bundle(study, f"{folder}/bundle.zip")
        with zipfile.ZipFile(f"{folder}/bundle.zip") as bundle:
            files = [bundle.read(name).decode("utf-8", "replace") for name in bundle.namelist()]
    return "\n".join([dump.getvalue(), *exports, *files])


@pytest.mark.label_variation  # a label-explanation study, and the app's reason notes erased
def test_after_erasure_nothing_the_person_typed_or_was_known_by_is_stored_or_exported(explainer):
    study, worker = explainer
    before = everything_stored_and_exported(study)
    for trace in (TYPED, PID, "jane@example.org", "SESSION-XYZ-77"):
        assert trace in before, trace  # the check can see them
    labels_before = list(Annotation.objects.filter(worker=worker).values_list("value__labels", flat=True))
    out = io.StringIO()
    call_command("forget_participant", "prolific", PID, stdout=out)
    assert "the text of 2 answers erased (removed free text), 1 draft deleted" in out.getvalue()
    after = everything_stored_and_exported(study)
    for trace in (TYPED, PID, "jane@example.org", "SESSION-XYZ-77"):
        assert trace not in after, trace
    # What the answers chose stays: the labels (their explanations emptied).
    labels_after = list(Annotation.objects.filter(worker=worker).values_list("value__labels", flat=True))
    assert [list(labels) for labels in labels_after] == [list(labels) for labels in labels_before]
    assert AuditEntry.objects.get(action="erase").details["free_text"] == "removed"


@pytest.mark.label_variation  # a label-explanation study, and the app's reason notes erased
def test_free_text_is_kept_under_the_pseudonym_when_the_consent_says_so(explainer):
    study, worker = explainer
    call_command("forget_participant", "prolific", PID, "--keep-free-text", stdout=io.StringIO())
    kept = Annotation.objects.filter(worker=worker)
    assert {answer.reason for answer in kept} == {TYPED}
    assert all(TYPED in part["explanation"] for answer in kept for part in answer.value["labels"].values())
    assert PID not in everything_stored_and_exported(study)


@pytest.mark.label_variation  # a label-explanation study, and the app's reason notes erased
def test_exports_can_omit_free_text_or_scrub_addresses_and_phone_numbers(explainer, author):
    from dataset_io.formats import exportable
    from dataset_io.formats.base import ExportOptions
    from dataset_io.services.records import scrubbed

    assert scrubbed("write to jane.doe+x@mail.example.org or call +44 (0)20 7946-0958 today, room 12") == (
        "write to [email] or call [phone] today, room 12"
    )
    study, worker = explainer
    Annotation.objects.filter(worker=worker).update(reason="mail jane@example.org, phone 0161 496 0000")
    formats = exportable(study.task, study.options)
    kept, omitted, scrubbed_text = (
        "".join("".join(exporters.export(study, fmt, ExportOptions(free_text=choice))) for fmt in formats)
        for choice in ("keep", "omit", "scrub")
    )
    assert "jane@example.org" in kept and TYPED in kept
    assert "jane@example.org" not in omitted and "0161 496 0000" not in omitted and TYPED not in omitted
    assert "jane@example.org" not in scrubbed_text and "0161 496 0000" not in scrubbed_text
    assert "[email]" in scrubbed_text and "[phone]" in scrubbed_text and TYPED in scrubbed_text  # the rest kept
    api = APIClient()
    api.force_authenticate(author)
    answer = api.get(f"/api/projects/{study.slug}/export/?as=annotations&free_text=scrub")
    assert answer.status_code == 200 and "[email]" in b"".join(answer.streaming_content).decode()
    refused = api.get(f"/api/projects/{study.slug}/export/?as=annotations&free_text=maybe")
    assert refused.status_code == 400 and refused.json()["field"] == "free_text"
