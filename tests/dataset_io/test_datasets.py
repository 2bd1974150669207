"""The dataset a study publishes: separate pools, labels read through the vocabulary, lossless exports,
declared aggregation, provenance, instrument versions, the format validator and the bundle."""

import csv
import io
import json
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.db.models import F
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Example, InstrumentVersion, Item, QualificationItem
from annotation.services import items, projects, qualification, quality
from annotation.services.analysis.adjudication import adjudicate
from annotation.services.analysis.agreement import project_agreement
from annotation.services.answers import SubmissionError
from annotation.services.assignments import claim_page, submit_page
from dataset_io.formats import FORMATS, ExportOptions, exportable
from dataset_io.services import exporters
from dataset_io.services.importers import ImportFileError, import_file, import_stream
from dataset_io.services.provenance import annotator_id
from dataset_io.services.validation import validate_file
from jobs.models import Job
from tests.conftest import IMMEDIATE_TASKS

pytestmark = pytest.mark.django_db


def jsonl(rows) -> io.StringIO:
    return io.StringIO("".join(json.dumps(row) + "\n" for row in rows))


def export_records(project, fmt, **options):
    text = "".join(exporters.export(project, fmt, ExportOptions(**options)))
    if fmt in ("usnli", "csv"):
        return list(csv.DictReader(io.StringIO(text)))
    return [json.loads(line) for line in text.splitlines()]


def answer_page(project, worker, answer, seconds=2.0):
    """Claim a page and answer each item with answer(item) (None: leave the page open)."""
    page = claim_page(project, worker)
    if page is None:
        return None
    claims = list(page.claims.select_related("item__example"))
    submit_page(page.pk, worker, {str(c.item_id): {"value": answer(c.item), "seconds": seconds} for c in claims})
    return page


# ---------------------------------------------------------------- pools


def test_a_row_whose_text_is_in_another_pool_is_refused_naming_the_item(make_project):
    project = make_project("nli_label")
    import_stream(
        project,
        jsonl([{"id": "d1", "premise": "P1", "hypothesis": "H1"}, {"id": "d2", "premise": "P2", "hypothesis": "H2"}]),
        "jsonl",
    )
    data_item = project.items.get(example__source_id="d1")
    with pytest.raises(ImportFileError) as refused:
        import_stream(
            project,
            jsonl(
                [
                    {"id": "g0", "premise": "P0", "hypothesis": "H0", "label": "e"},
                    {"id": "g1", "premise": "P1", "hypothesis": "H1", "label": "e"},
                ]
            ),
            "jsonl",
            purpose="gold",
        )
    ((line, field, message),) = refused.value.errors
    assert (line, field) == (2, "premise") and f"item {data_item.pk}, a data item" in message
    assert "cannot also be a gold check" in message
    assert not project.items.filter(is_gold=True).exists()

    import_stream(
        project, jsonl([{"id": "g0", "premise": "P0", "hypothesis": "H0", "label": "e"}]), "jsonl", purpose="gold"
    )
    gold = project.items.get(is_gold=True)
    with pytest.raises(ImportFileError, match=f"item {gold.pk}, a gold check"):
        import_stream(project, jsonl([{"id": "x", "premise": "P0", "hypothesis": "H0"}]), "jsonl")
    with pytest.raises(
        ImportFileError, match=f"item {gold.pk}, a gold check; an item cannot also be an item of the qualification"
    ):
        import_stream(
            project, jsonl([{"premise": "P0", "hypothesis": "H0", "label": "c"}]), "jsonl", purpose="qualification"
        )
    import_stream(
        project, jsonl([{"premise": "Q", "hypothesis": "QH", "label": "c"}]), "jsonl", purpose="qualification"
    )
    with pytest.raises(ImportFileError, match="item 1 of the qualification test"):
        import_stream(project, jsonl([{"id": "q", "premise": "Q", "hypothesis": "QH"}]), "jsonl")
    assert project.items.count() == 3 and project.qualification.items.count() == 1


# Both passes: PostgreSQL refused the item lock that read the item's atom with it (FOR UPDATE on the
# nullable side of an outer join), so no gold check could be made there.
@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_making_a_gold_check_refuses_a_text_of_the_qualification_test(make_project, author, database):
    project = make_project("nli_label")
    import_stream(
        project,
        jsonl([{"id": "d1", "premise": "P1", "hypothesis": "H1"}, {"id": "d2", "premise": "P2", "hypothesis": "H2"}]),
        "jsonl",
    )
    first, second = project.items.order_by("id")
    qualification.copy_item(project, first, "e")
    with pytest.raises(SubmissionError, match="item 1 of the qualification test"):
        items.make_gold(project, first.pk, "e")
    items.make_gold(project, second.pk, "c")
    with pytest.raises(SubmissionError, match="a gold check already"):
        items.make_gold(project, second.pk, "c")
    client = Client()
    client.force_login(author)
    page = client.post(f"/projects/{project.slug}/items/{first.pk}/gold/", {"reference": "e"}, follow=True)
    assert "qualification test" in page.content.decode() and not Item.objects.get(pk=first.pk).is_gold


def test_the_command_line_refuses_a_qualification_row_that_is_a_studys_data(make_project, tmp_path):
    project = make_project("nli_label")
    import_stream(project, jsonl([{"id": "d1", "premise": "P1", "hypothesis": "H1"}]), "jsonl")
    rows = tmp_path / "q.jsonl"
    rows.write_text(json.dumps({"premise": "P1", "hypothesis": "H1", "reference": "e"}) + "\n")
    with pytest.raises(CommandError, match=r"row 1: study nli-label's item .* is a data item"):
        call_command(
            "create_qualification",
            "q",
            "--task-type",
            "nli_label",
            "--items",
            str(rows),
            "--project",
            project.slug,
            stdout=io.StringIO(),
        )
    assert not QualificationItem.objects.exists()


def test_a_copy_into_the_test_is_a_new_item_and_the_data_file_imports_again(make_project):
    project = make_project("nli_label")
    data = [{"id": "d1", "premise": "P1", "hypothesis": "H1", "label": "n"}]
    import_stream(project, jsonl(data), "jsonl")
    item = project.items.get()
    copy = qualification.copy_item(project, item, "neutral", easy=True)
    assert copy.copied_from == item and copy.reference == "n" and not Item.objects.get(pk=item.pk).is_gold
    with pytest.raises(qualification.QualificationError, match="in the test already"):
        qualification.copy_item(project, item, "n")
    assert import_stream(project, jsonl(data), "jsonl").already_present == 1


def test_a_reference_a_worker_was_shown_never_checks_that_worker(make_project, import_rows, make_user):
    shown = {"premise": "A cat sleeps.", "hypothesis": "An animal rests.", "label": "e"}
    worked = {"premise": "A dog barks.", "hypothesis": "A dog is silent.", "answer": "Contradiction", "why": "-"}
    project = make_project(
        "nli_label", gold_rate=1.0, items_per_page=1, redundancy=3, max_annotations=3, worked_examples=[worked]
    )
    import_rows(project, [{"id": f"d{i}", "premise": f"P{i}", "hypothesis": "H"} for i in range(6)])
    import_stream(
        project,
        jsonl(
            [
                {"id": "g-shown", **shown},
                {"id": "g-worked", **worked, "label": "c"},
                {"id": "g-other", "premise": "P9", "hypothesis": "H9", "label": "n"},
            ]
        ),
        "jsonl",
        purpose="gold",
    )
    qualification.copy_item(project, project.items.get(example__source_id="g-shown"), "e")
    test = project.qualification
    qualification.update_rules(project, {"show_feedback": True, "min_accuracy": 0})

    def gold_served(worker):
        served = []
        while (page := answer_page(project, worker, lambda item: "e")) is not None:
            served += [
                claim.item.example.source_id
                for claim in page.claims.select_related("item__example")
                if claim.item.is_gold
            ]
        return served

    saw_feedback, took_nothing = make_user("saw"), make_user("fresh")
    attempt = qualification.take_test(test, saw_feedback, {str(i.pk): {"value": "e"} for i in test.items.all()})
    assert attempt.details["feedback_shown"] is True
    assert qualification.feedback(test, attempt)["items"]  # the reference was shown
    assert sorted(gold_served(saw_feedback)) == ["g-other"]
    test.options = {**test.options, "show_feedback": False}
    test.save()
    qualification.take_test(test, took_nothing, {str(i.pk): {"value": "e"} for i in test.items.all()})
    assert sorted(gold_served(took_nothing)) == ["g-other", "g-shown"]  # never shown its reference


def test_the_qualification_builder_searches_filters_and_balances(make_project, author):
    project = make_project("unli_slider")
    rows = [
        {"id": str(i), "premise": f"P{i}", "hypothesis": f"cat {i}" if i % 2 else f"dog {i}", "probability": str(p)}
        for i, p in enumerate([0.001, 0.05, 0.3, 0.7, 0.95, 0.999, 0.5, 0.2])
    ]
    import_stream(project, jsonl(rows), "jsonl")
    import_stream(
        project,
        jsonl([{"id": "g", "premise": "PG", "hypothesis": "cat G", "probability": "0.4"}]),
        "jsonl",
        purpose="gold",
    )
    client = Client()
    client.force_login(author)
    url = f"/projects/{project.slug}/qualification/"
    page = client.get(url, {"q": "cat"})
    found = [item.example.source_id for item, _ in page.context["candidates"]]
    assert found == ["1", "3", "5", "7"]  # data items only: the gold check "g" is a pool of its own
    page = client.get(url, {"range": "0.1-0.5"})
    assert [item.example.source_id for item, _ in page.context["candidates"]] == ["2", "7"]
    client.post(
        url, {"copy": project.items.get(example__source_id="2").pk, "reference": "0.3", "query": "range=0.1-0.5"}
    )
    bins = {b["key"]: (b["in_test"], b["candidates"]) for b in client.get(url).context["bins"]}
    assert bins["0.1-0.5"] == (1, 2) and bins["0-0.01"] == (0, 1) and bins["0.99-1"] == (0, 1)
    assert [item.example.source_id for item, _ in client.get(url, {"range": "0.1-0.5"}).context["candidates"]] == ["7"]


# ---------------------------------------------------------------- labels


def test_a_label_outside_the_study_is_refused_unless_the_import_maps_it(make_project, tmp_path, author):
    project = make_project("nli_label")
    rows = jsonl(
        [
            {"id": "1", "premise": "P", "hypothesis": "H", "label": "entailment"},
            {"id": "2", "premise": "P", "hypothesis": "H2", "label": "0"},
        ]
    )
    with pytest.raises(ImportFileError) as refused:
        import_stream(project, rows, "jsonl")
    assert refused.value.errors == [
        (2, "label", "must be one of e, n, c, got '0' (or give the import a label mapping, e.g. 0=contradiction)")
    ]
    with pytest.raises(ImportFileError) as unknown:
        import_stream(project, rows, "jsonl", label_map=["0=maybe"])
    assert (
        unknown.value.errors[0][:2] == (0, "label mapping") and "0=maybe names no label" in unknown.value.errors[0][2]
    )
    assert "line 0" not in str(unknown.value)
    assert not Example.objects.exists()
    import_stream(project, rows, "jsonl", label_map=["0=contradiction"])
    assert list(project.examples.order_by("position").values_list("source_label", flat=True)) == ["e", "c"]

    second = make_project("nli_label", slug="cli")
    path = tmp_path / "rows.csv"
    path.write_text("id,premise,hypothesis,gold\n1,P,H,2\n2,P,H2,0\n")
    call_command(
        "import_items",
        "cli",
        str(path),
        "--format",
        "csv",
        "--map",
        "label=gold",
        "--map-label",
        "0=c",
        "--map-label",
        "2=entailment",
        stdout=io.StringIO(),
    )
    assert list(second.examples.order_by("position").values_list("source_label", flat=True)) == ["e", "c"]

    third = make_project("nli_label", slug="api")
    api = APIClient()
    api.force_login(author)
    body = b"premise,hypothesis,label\nP,H,2\nP,H2,0\n"
    refused = api.post(
        f"/api/projects/{third.slug}/import/", {"format": "csv", "file": io.BytesIO(body)}, format="multipart"
    )
    assert refused.status_code == 409 and refused.json()["errors"][0]["line"] == 2
    done = api.post(
        f"/api/projects/{third.slug}/import/",
        {"format": "csv", "file": io.BytesIO(body), "label_map": "2=entailment, 0=contradiction"},
        format="multipart",
    )
    assert done.status_code == 200 and third.examples.count() == 2


def test_the_import_page_shows_how_each_label_value_reads(make_project, author):
    from django.core.files.uploadedfile import SimpleUploadedFile

    project = make_project("nli_label")
    client = Client()
    client.force_login(author)
    body = b"premise,hypothesis,label\nP,H,entailment\nP,H2,0\nP,H3,1\n"
    staged = client.post(
        f"/projects/{project.slug}/import/", {"format": "csv", "file": SimpleUploadedFile("l.csv", body)}
    )
    preview = client.get(staged["Location"])
    assert preview.context["label_values"] == [("entailment", "Entailment"), ("0", None), ("1", None)]
    refused = client.post(
        staged["Location"],
        {
            "format": "csv",
            "purpose": "data",
            "map_premise": "premise",
            "map_hypothesis": "hypothesis",
            "map_label": "label",
            "confirm": "1",
        },
    )
    assert refused.status_code == 400 and "change the mapping below" in refused.content.decode()
    assert refused.context["label_values"][1] == ("0", None)
    done = client.post(
        staged["Location"],
        {
            "format": "csv",
            "purpose": "data",
            "map_premise": "premise",
            "map_hypothesis": "hypothesis",
            "map_label": "label",
            "label_map": "0=contradiction, 1=neutral",
            "confirm": "1",
        },
    )
    assert done.status_code == 302 and sorted(project.examples.values_list("source_label", flat=True)) == [
        "c",
        "e",
        "n",
    ]


def test_usnli_numbering_is_the_one_built_in_mapping_and_probabilities_go_in_their_field(make_project):
    slider = make_project("unli_slider")
    import_stream(slider, io.StringIO("id,pre,hyp,nli,unli\n1,P,H,2,0.9\n"), "usnli")
    assert slider.examples.values_list("source_label", "source_probability").get() == ("e", "0.9")
    with pytest.raises(ImportFileError) as refused:
        import_stream(slider, jsonl([{"premise": "P", "hypothesis": "H2", "label": "0.93"}]), "jsonl")
    assert refused.value.errors[0][:2] == (1, "label")
    import_stream(
        slider, jsonl([{"premise": "P", "hypothesis": "H2", "unli": "0.93"}]), "jsonl", {"probability": "unli"}
    )
    assert slider.examples.get(hypothesis="H2").source_probability == "0.93"


# ---------------------------------------------------------------- lossless exports


def test_a_slider_study_mapped_from_usnli_exports_the_imported_values(shared_data, make_project):
    project = make_project("unli_slider")
    source = shared_data / "u-snli" / "dev.csv"
    import_file(
        project,
        source,
        "csv",
        {"premise": "pre", "hypothesis": "hyp", "probability": "unli", "label": "nli"},
        label_map=["0=c", "1=n", "2=e"],
    )
    originals = list(csv.DictReader(source.open(encoding="utf-8")))
    exported = export_records(project, "usnli")
    assert len(exported) == len(originals) == 3040
    assert [(row["id"], row["pre"], row["nli"], row["unli"]) for row in exported] == [
        (row["id"], row["pre"], row["nli"], row["unli"]) for row in originals
    ]
    assert {row["unli_source"] for row in exported} == {"imported"}


def test_collected_answers_travel_beside_imported_values_and_never_overwrite_them(make_project, make_user):
    project = make_project("unli_slider", items_per_page=2, redundancy=1, max_annotations=1)
    import_stream(project, io.StringIO("id,pre,hyp,nli,unli,source\n1,P,H,2,0.9,crowd\n2,P,H2,0,0.01,crowd\n"), "usnli")
    answer_page(project, make_user("w"), lambda item: 5000)
    rows = export_records(project, "usnli")
    assert [(r["unli"], r["unli_source"], r["collected_unli"], r["source"]) for r in rows] == [
        ("0.9", "imported", "0.5", "crowd"),
        ("0.01", "imported", "0.5", "crowd"),
    ]
    gold = export_records(project, "usnli", study_gold=True)
    assert [r["unli"] for r in gold] == ["0.5", "0.5"]  # a model is scored against the study's own labels

    chaos = make_project("nli_label", slug="chaos")
    import_stream(
        chaos,
        jsonl(
            [
                {
                    "uid": "u1",
                    "label_counter": {"e": 60, "n": 40},
                    "majority_label": "e",
                    "example": {"premise": "P", "hypothesis": "H"},
                    "old_label": "n",
                    "source": "x",
                }
            ]
        ),
        "chaosnli",
    )
    Item.objects.filter(project=chaos).update(claimable=True, status="open", target=F("annotation_count") + 1)
    answer_page(chaos, make_user("w2"), lambda item: "c")
    (record,) = export_records(chaos, "chaosnli")
    assert record["label_counter"] == {"e": 60, "n": 40} and record["majority_label"] == "e"
    assert record["old_label"] == "n" and record["source"] == "x"
    assert record["nli_studio"]["label_source"] == "imported"
    assert record["nli_studio"]["collected"]["label_counter"] == {"c": 1}


# ---------------------------------------------------------------- declared aggregation


@pytest.fixture
def three_way(make_project, make_user, author):
    """Three items answered by three workers: a 1-1-1 tie, an item then adjudicated, and a clear one; a
    fourth item nobody answered. A fourth worker answered first and was blocked with their answers left out."""
    project = make_project("nli_label", items_per_page=3, redundancy=3, max_annotations=3)
    import_stream(
        project,
        jsonl(
            [
                {"id": name, "premise": f"P {name}", "hypothesis": "H"}
                for name in ("tied", "adjudicated", "clear", "silent")
            ]
        ),
        "jsonl",
    )
    excluded = make_user("zq-worker")
    answer_page(project, excluded, lambda item: "c", seconds=0.5)
    quality.block(project, excluded, author, exclude_answers=True, reason="failed attention checks")
    answers = {"tied": "enc", "adjudicated": "ecc", "clear": "eec"}
    workers = [make_user(f"worker{n}") for n in range(3)]
    for n, worker in enumerate(workers):
        answer_page(project, worker, lambda item, n=n: answers[item.example.source_id][n], seconds=3.0 + n)
    adjudicate(project.items.get(example__source_id="adjudicated").pk, author, "n", "read again")
    return project, [*workers, excluded]


def test_ties_are_null_and_flagged_and_adjudications_declared(three_way):
    project, _workers = three_way
    records = {r["uid"]: r for r in export_records(project, "chaosnli")}
    assert set(records) == {"tied", "adjudicated", "clear"}  # the unanswered item is left out
    tied, adjudicated, clear = records["tied"], records["adjudicated"], records["clear"]
    assert tied["label_counter"] == {"e": 1, "n": 1, "c": 1} and tied["majority_label"] is None
    assert tied["nli_studio"]["tie"] is True and tied["nli_studio"]["excluded"] == 1
    assert adjudicated["majority_label"] == "n" and adjudicated["nli_studio"]["adjudicated"] is True
    assert clear["majority_label"] == "e" and clear["label_count"] == [2, 0, 1]  # the excluded c is not counted
    everything = {r["uid"]: r for r in export_records(project, "chaosnli", include_unanswered=True)}
    assert everything["silent"]["nli_studio"]["unanswered"] is True and everything["silent"]["label_dist"] is None
    rows = {r["id"]: r for r in export_records(project, "csv")}
    assert (rows["tied"]["final"], rows["tied"]["tie"], rows["adjudicated"]["method"]) == ("", "true", "adjudicated")


def test_excluded_answers_are_flagged_with_reason_and_left_out_everywhere(three_way, author):
    project, workers = three_way
    excluded_id = annotator_id(project, workers[3].pk)
    rows = export_records(project, "annotations")
    flagged = [row for row in rows if row["annotator"] == excluded_id]
    assert len(flagged) == 3 and all(row["excluded"] for row in flagged)
    assert {row["excluded_reason"] for row in flagged} == {
        "the author blocked this worker and left their answers out: failed attention checks"
    }
    assert {row["excluded_by"] for row in flagged} == {author.username}
    assert not any(row["excluded"] for row in rows if row["annotator"] != excluded_id)
    for record in export_records(project, "jsonl"):
        aggregate = record["nli_studio"]["aggregate"]
        assert aggregate["excluded"] == 1 and aggregate["answers"] == 3
    assert [len(r["annotator_labels"]) for r in export_records(project, "snli")] == [3, 3, 3]
    assert project_agreement(project, bootstrap=0)["n_annotations"] == 9
    path = io.StringIO("".join(exporters.export(project, "annotations")))
    assert all(json.loads(line)["worker_status"] in ("active", "blocked") for line in path)


# ---------------------------------------------------------------- provenance and instrument versions


def test_every_answer_carries_its_provenance_with_a_stable_anonymous_id(three_way, make_project, import_rows):
    project, workers = three_way
    first = export_records(project, "annotations")
    again = export_records(project, "jsonl")
    ids = {annotator_id(project, worker.pk) for worker in workers}
    assert {row["annotator"] for row in first} == ids and len(ids) == 4
    assert {a["annotator"] for r in again for a in r["nli_studio"]["annotations"]} == ids
    assert not any(worker.username in json.dumps(first) for worker in workers)
    other = make_project("nli_label", slug="other")
    assert annotator_id(other, workers[0].pk) != annotator_id(project, workers[0].pk)
    row = next(r for r in first if r["annotator"] == annotator_id(project, workers[1].pk))
    assert row["seconds_spent"] == 4.0 and row["worker_status"] == "active" and row["submitted_at"] and row["page"]
    assert row["instrument_version"] == project.instrument.digest[:16]
    assert row["qualification_score"] is None


def test_changing_what_workers_see_after_pages_were_handed_out_makes_a_new_version(
    make_project, make_user, import_rows
):
    project = make_project("nli_label", items_per_page=1, instructions="Version one.")
    first = project.instrument
    projects.update_project(project, instructions="Still version one: nobody worked yet.")
    assert project.instrument == first and InstrumentVersion.objects.count() == 1
    assert first.content["settings"]["instructions"] == "Still version one: nobody worked yet."
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": "H"} for i in range(2)])
    worker = make_user("w")
    answer_page(project, worker, lambda item: "e")
    projects.update_project(project, redundancy=3)  # workers do not see it: the same version
    assert project.instrument == first
    projects.update_project(project, instructions="Version two.")
    second = project.instrument
    assert second.number == 2 and second.digest != first.digest
    answer_page(project, worker, lambda item: "n")
    versions = [row["instrument_version"] for row in export_records(project, "annotations")]
    assert versions == [first.digest[:16], second.digest[:16]]
    client = Client()
    client.force_login(project.owner)
    page = client.get(f"/projects/{project.slug}/settings/").content.decode()
    assert "Version two." in page and "Still version one" in page and second.digest[:16] in page


# ---------------------------------------------------------------- the validator and the bundle


@pytest.mark.parametrize(
    "path, fmt",
    [
        ("chaosnli/chaosNLI_snli.jsonl", "chaosnli"),
        ("chaosnli/chaosNLI_mnli_m.jsonl", "chaosnli"),
        ("chaosnli/chaosNLI_alphanli.jsonl", "chaosnli"),
        ("u-snli/dev.csv", "usnli"),
        ("u-snli/test.csv", "usnli"),
        ("snli/snli_dev_gold_only.jsonl", "snli"),
        ("snli/partial_original_format/snli_1.0_dev.partial.jsonl", "snli"),
        ("snli/partial_original_format/snli_1.0_test.partial.jsonl", "snli"),
        ("defeasible-nli/defeasible-snli/dev.jsonl", "dnli"),
        ("defeasible-nli/defeasible-snli/test.jsonl", "dnli"),
        ("defeasible-nli/defeasible-atomic/dev.jsonl", "dnli"),
        ("defeasible-nli/defeasible-atomic/test.jsonl", "dnli"),
    ],
)
def test_every_real_file_validates_clean(shared_data, path, fmt):
    report = validate_file(shared_data / path, fmt)
    assert report.valid and report.records > 1000, report.as_dict(limit=5)


def test_the_validator_names_line_and_field_and_exits_1(shared_data, tmp_path, capsys):
    rows = [json.loads(line) for line in (shared_data / "chaosnli" / "chaosNLI_snli.jsonl").open()][:3]
    rows[0]["entropy"] = 0.5
    rows[1]["label_count"][0] += 1
    rows[2]["label_dist"] = [1.0]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(SystemExit) as exit_code:
        call_command("validate_dataset", str(path), "--format", "chaosnli", "--json")
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert exit_code.value.code == 1 and result["records"] == 3 and not result["valid"]
    assert [(e["line"], e["field"]) for e in result["errors"]] == [
        (1, "entropy"),
        (2, "label_count"),
        (2, "label_dist"),
        (3, "label_dist"),
    ]
    good = tmp_path / "good.csv"
    good.write_text((shared_data / "u-snli" / "dev.csv").read_text())
    call_command("validate_dataset", str(good), "--format", "usnli")
    assert "3040 records, valid (usnli)" in capsys.readouterr().out
    with pytest.raises(CommandError, match="cannot read"):
        call_command("validate_dataset", str(tmp_path / "missing"), "--format", "usnli")


def test_the_bundle_holds_every_format_its_statement_and_instrument_and_validates(three_way, tmp_path, author):
    project, workers = three_way
    out = tmp_path / "bundle.zip"
    stdout = io.StringIO()
    call_command("export_dataset", project.slug, "--bundle", "--output", str(out), "--json", stdout=stdout)
    result = json.loads(stdout.getvalue().strip().splitlines()[-1])
    assert result["valid"] is True
    with zipfile.ZipFile(out) as archive:
        names = set(archive.namelist())
        data = {
            f"data/{project.slug}-{fmt}.{FORMATS[fmt].extension}" if fmt != "csv" else f"data/{project.slug}.csv"
            for fmt in exportable(project.task, project.options)
        }
        parquet = {name.rsplit(".", 1)[0] + ".parquet" for name in data}  # tests/dataset_io/test_dataset_repository.py
        metadata = {
            "README.md",
            "croissant.json",
            "instrument_versions.json",
            "data_statement.json",
            "DATA_STATEMENT.md",
            "validation.json",
        }
        assert data | parquet | metadata == names
        statement = json.loads(archive.read("data_statement.json"))
        markdown = archive.read("DATA_STATEMENT.md").decode()
        versions = json.loads(archive.read("instrument_versions.json"))
        validation = json.loads(archive.read("validation.json"))
    assert all(report["valid"] for report in validation.values())
    assert (
        statement["items"]["data"] == 4 and statement["items"]["tied"] == 1 and statement["items"]["adjudicated"] == 1
    )
    assert statement["answers"] == {"collected": 9, "excluded": 3, "imported_votes": 0, "gold_check_answers": 0}
    assert statement["exclusions"] == [
        {
            "annotator": annotator_id(project, workers[3].pk),
            "answers": 3,
            "reason": "failed attention checks",
            "decided_by": author.username,
            "at": statement["exclusions"][0]["at"],
        }
    ]
    assert statement["time"]["median_seconds_per_item"] == 4.0
    assert statement["agreement"]["level"] == "nominal" and "krippendorff_alpha" in statement["agreement"]
    assert versions[0]["digest"] == project.instrument.digest and "instructions" in versions[0]["content"]["settings"]
    assert "failed attention checks" in markdown and "| `label_counter` |" in markdown
    with pytest.raises(CommandError, match="give --format F or --bundle"):
        call_command("export_dataset", project.slug, "--output", str(out))


def test_the_bundle_is_a_background_job_from_the_page_and_the_api(three_way, author, settings, tmp_path):
    settings.TASKS = IMMEDIATE_TASKS
    settings.MEDIA_ROOT = tmp_path / "media"
    project, _ = three_way
    client = Client()
    client.force_login(author)
    started = client.post(f"/projects/{project.slug}/exports/", {"format": "bundle", "include_gold": "1"})
    job = Job.objects.get(kind="bundle")
    assert started["Location"] == f"/jobs/{job.pk}/" and job.status == "done", job.error
    assert job.result["valid"] is True and (job.done, job.total) == (job.total, job.total) and job.total > 0
    assert job.params["include_gold"] is True
    download = client.get(f"/jobs/{job.pk}/output/")
    assert download["Content-Disposition"].endswith(f'filename="{project.slug}-dataset.zip"')
    page = client.get(f"/jobs/{job.pk}/")
    assert page.status_code == 200
    api = APIClient()
    api.force_login(author)
    answer = api.post(f"/api/projects/{project.slug}/bundle/")
    assert answer.status_code == 202 and Job.objects.get(pk=answer.json()["job"]).status == "done"
