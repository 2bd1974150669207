"""Exports that keep everything of a label-explanation study: self_corrected as the VariErr release sets it,
every round of reasons (taxonomy, jsonl, livenli's taxonomy column, the bundle), and LiveNLI rows with one
label's highlights each, read back per label."""

import ast
import csv
import io
import json
import zipfile

import pytest

from annotation.services.assignments import claim_page, submit_page
from annotation.services.linking import send_to_validation
from annotation.services.projects import update_project
from dataset_io.formats import ExportOptions
from dataset_io.formats.base import STUDIO_KEY
from dataset_io.services import exporters
from dataset_io.services.bundle import write_bundle
from dataset_io.services.importers import import_stream
from dataset_io.services.provenance import annotator_id
from dataset_io.services.validation import validate
from label_variation.formats.livenli import COLUMNS
from label_variation.services.reasons import tag_item
from label_variation.services.self_judgments import record_self_judgments
from label_variation.services.variation import explanations
from tests.label_variation.explanations import HYPOTHESIS, PREMISE, explained

pytestmark = pytest.mark.django_db
EVERYTHING = ExportOptions(include_unanswered=True)


def exported(project, fmt: str) -> str:
    text = "".join(exporters.export(project, fmt, EVERYTHING))
    report = validate(lambda: io.BytesIO(text.encode()), fmt)
    assert report.valid, report.as_dict(limit=5)
    return text


@pytest.fixture
def study(make_project, import_rows, make_user, author):
    """One pair: the writer explains e (premise [0, 20)) and n (premise [11, 40), overlapping e's), the other
    writer c; sent to validation; the author tags reasons in rounds 1 and 2."""
    project = make_project("label_explanation", slug="keep-all", redundancy=2, max_annotations=2)
    import_rows(project, [{"id": "train", "premise": PREMISE, "hypothesis": HYPOTHESIS}])
    writer, other = make_user("writer", "worker"), make_user("other", "worker")
    answers = {
        writer: {
            "e": explained("Reading a newspaper on a train is what commuters do.", [(0, 20)]),
            "n": explained("Nothing in the sentence says where the train is going.", [(11, 40)]),
        },
        other: {"c": explained("He could be a tourist on a sightseeing train ride.")},
    }
    for person, labels in answers.items():
        page = claim_page(project, person)
        (claim,) = page.claims.all()
        submit_page(page.pk, person, {str(claim.item_id): {"value": {"labels": labels, "idk": False}}})
    send_to_validation(project)
    project.refresh_from_db()
    item = project.items.get()
    tag_item(item, author, ["Probabilistic", "Lexical"], round_number=1)
    tag_item(item, author, ["Lexical"], round_number=2)
    return project, writer, other


def test_self_corrected_is_true_exactly_where_the_author_did_not_confirm_and_null_while_they_still_can(study):
    project, writer, _ = study
    pairs = {e.origin_target: e.pk for e in project.validation_project.examples.filter(origin__worker=writer)}
    record_self_judgments(project, writer, {pairs["e"]: "yes", pairs["n"]: "no"})
    (record,) = [json.loads(line) for line in exported(project, "varierr").splitlines()]
    corrected = {name: [entry["self_corrected"] for entry in record[name]] for name in ("entailment", "neutral")}
    assert corrected == {"entailment": [False], "neutral": [True]}
    # The other writer has not self-checked c yet and still can: pending, not "corrected".
    assert record[STUDIO_KEY]["pending_labels"] == ["contradiction"]
    assert [entry["self_corrected"] for entry in record["contradiction"]] == [None]

    project = update_project(project, status="closed")  # no self-check any more
    (record,) = [json.loads(line) for line in exported(project, "varierr").splitlines()]
    assert [entry["self_corrected"] for entry in record["contradiction"]] == [True]


def test_every_round_of_reasons_is_in_the_taxonomy_export_of_an_explanation_study(study):
    project, _, _ = study
    (record,) = [json.loads(line) for line in exported(project, "taxonomy").splitlines()]
    assert record["a1"] == ["Lexical"]  # the record's own fields: the latest round
    assert record[STUDIO_KEY]["round"] == 2
    assert record[STUDIO_KEY]["reasons"] == {"1": {"a1": ["Lexical", "Probabilistic"]}, "2": {"a1": ["Lexical"]}}


def test_the_jsonl_export_keeps_every_round(study):
    project, _, _ = study
    (record,) = [json.loads(line) for line in exported(project, "jsonl").splitlines()]
    reasons = record[STUDIO_KEY]["reasons"]
    assert sorted(reasons) == ["1", "2"]
    assert (reasons["1"]["reasons"], reasons["2"]["reasons"]) == (["Lexical", "Probabilistic"], ["Lexical"])


def test_the_bundle_holds_the_taxonomy_file_of_an_explanation_study(study, tmp_path):
    project, _, _ = study
    write_bundle(project, tmp_path / "bundle.zip")
    with zipfile.ZipFile(tmp_path / "bundle.zip") as bundle:
        names = bundle.namelist()
        (taxonomy,) = [name for name in names if name.startswith("data/") and name.endswith("taxonomy.jsonl")]
        record = json.loads(bundle.read(taxonomy).decode().splitlines()[0])
    assert sorted(record[STUDIO_KEY]["reasons"]) == ["1", "2"]


def test_livenli_rows_hold_one_labels_highlights_each_and_read_back_per_label(study, make_project):
    project, writer, _ = study
    text = exported(project, "livenli")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(row["multilabel"], row["worker_id"]) for row in rows] == [
        ("true", annotator_id(project, writer.id)),
        ("either", annotator_id(project, writer.id)),
        ("false", rows[2]["worker_id"]),
    ]
    spans = [
        [(e["startIndex"], e["endIndex"]) for e in ast.literal_eval(row["highlight_p"])["entities"]] for row in rows
    ]
    assert spans == [[(0, 20)], [(11, 40)], []]  # each row its own label's, never merged
    assert {row["taxonomy"] for row in rows} == {"Lexical"}  # the reasons tagged here

    again = make_project("label_explanation", slug="read-back")
    import_stream(again, io.StringIO(text), "livenli")
    read = {e.label: e.premise_spans for e in explanations(again)}
    assert read == {"e": ((0, 20),), "n": ((11, 40),), "c": ()}
    # Written again, the rows are the same record (their own columns; the added ones name the new study's item).
    rewritten = list(csv.DictReader(io.StringIO(exported(again, "livenli"))))
    assert [{name: row[name] for name in COLUMNS} for row in rewritten] == [
        {name: row[name] for name in COLUMNS} for row in rows
    ]
