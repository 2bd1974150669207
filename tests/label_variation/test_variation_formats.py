"""The three public formats of label variation studies (VariErr, LiveNLI, the TACL 2022 taxonomy): each real
file is imported and exported again with the same records (fields, label lists, judgments, offsets, tags),
its ChaosNLI counts become the item's imported distribution, `validate_dataset` accepts the real files and the
exports, and a malformed row is refused with its line and field, storing nothing."""

import ast
import csv
import io
import json
from collections import Counter

import pytest
from django.core.management import call_command

from annotation.models import Annotation
from annotation.services.assignments import claim_page, submit_page
from annotation.services.linking import send_to_validation
from annotation.services.projects import update_project
from annotation.tasktypes import TASK_TYPES
from dataset_io.formats import FORMATS, ExportOptions
from dataset_io.formats.base import STUDIO_KEY
from dataset_io.services import exporters
from dataset_io.services.importers import ImportFileError, import_file, import_stream
from dataset_io.services.provenance import annotator_id
from dataset_io.services.validation import validate, validate_file

pytestmark = pytest.mark.django_db
EVERYTHING = ExportOptions(include_gold=True, include_unanswered=True)
VARIERR = "varierr/varierr.json"
LIVENLI = "livenli/livenli.csv"
TAXONOMY = (
    "nli-disagreement-taxonomy/taxonomy_round1_release.jsonl",
    "nli-disagreement-taxonomy/taxonomy_round2_release.jsonl",
)


def importing(fmt: str) -> list[str]:
    """The task types whose studies import `fmt` (label studies, and studies of labels with explanations)."""
    return [name for name, task in TASK_TYPES.items() if FORMATS[fmt].importable(task, task.default_options())]


def exported(project, fmt: str) -> str:
    text = "".join(exporters.export(project, fmt, EVERYTHING))
    report = validate(lambda: io.BytesIO(text.encode()), fmt)
    assert report.valid, report.as_dict(limit=5)
    assert report.records == project.items.count()
    return text


def json_records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def imported_votes(project) -> dict[str, Counter]:
    votes: dict[str, Counter] = {}
    for key, value, count in Annotation.objects.filter(item__project=project, imported=True).values_list(
        "item__example__key", "value", "count"
    ):
        votes.setdefault(key, Counter())[value] += count
    return votes


def test_the_formats_fit_label_studies_and_only_nli_ones():
    assert "nli_label" in importing("varierr") and "nli_label" in importing("livenli")
    assert importing("taxonomy") == ["nli_label"]
    for name in ("unli_slider", "atom_validity", "defeasible_atom", "hypothesis_writing"):
        assert name not in importing("varierr") + importing("livenli")
    alpha = TASK_TYPES["nli_label"]
    assert not FORMATS["varierr"].importable(alpha, {**alpha.default_options(), "labels": ["1", "2"]})


@pytest.mark.parametrize("task_type", importing("varierr"))
def test_varierr_round_trips_every_record(shared_data, make_project, task_type):
    original = json_records((shared_data / VARIERR).read_text(encoding="utf-8"))
    project = make_project(task_type, slug="varierr")
    report = import_file(project, shared_data / VARIERR, "varierr")
    assert report.created == project.items.count() == 500
    if project.task.label_distributions and not project.task.explains_labels:
        votes = imported_votes(project)  # the ChaosNLI counts, as the chaosnli format keeps them
        assert all(votes[f"id:{record['id']}"] == Counter(record["chaosnli_labels"]) for record in original)
    text = exported(project, "varierr")
    records = json_records(text)
    studio = [record.pop(STUDIO_KEY) for record in records]
    assert records == original  # every field, label list, explanation and judgment
    assert sum(len(r[label]) for r in records for label in ("entailment", "neutral", "contradiction")) == 1933
    # VariErr's rule over the imported judgments reproduces the file's error labels.
    names = {"e": "entailment", "n": "neutral", "c": "contradiction"}
    for record, extra in zip(original, studio):
        errors = {names[label] for label, verdict in extra["label_verdicts"].items() if verdict == "error"}
        assert errors == set(record["error_labels"]), record["id"]
    again = make_project(task_type, slug="varierr-again")
    import_stream(again, io.StringIO(text), "varierr")
    assert list(again.examples.order_by("position").values_list("source_data", flat=True)) == original


@pytest.mark.parametrize("task_type", importing("livenli"))
def test_livenli_round_trips_every_row_with_its_text(shared_data, make_project, task_type):
    with open(shared_data / LIVENLI, newline="", encoding="utf-8") as handle:
        header, *original = list(csv.reader(handle))
    project = make_project(task_type, slug="livenli")
    import_file(project, shared_data / LIVENLI, "livenli")
    assert project.items.count() == 122
    rows = [row for data in project.examples.values_list("source_data", flat=True) for row in data["rows"]]
    assert len(rows) == 1405
    assert rows[0]["chaos_dist"] == {"c": 11, "e": 14, "n": 75} and rows[0]["dist"] == [0.5, 0.5, 0.0]
    assert rows[0]["highlight_h"]["entities"][0] == {
        "endIndex": 18,
        "startIndex": 0,
        "text": "Most rock concerts",
        "type": "highlight",
    }
    if project.task.label_distributions and not project.task.explains_labels:
        votes = imported_votes(project)
        assert len(votes) == 50 and votes["id:20274n"] == Counter({"e": 14, "n": 75, "c": 11})
        assert project.examples.get(key="id:20274n").source_label == "n"  # MNLI's majority of its five labels
    text = exported(project, "livenli")
    exported_header, *written = list(csv.reader(io.StringIO(text)))
    assert exported_header[: len(header)] == header  # the stray last column kept
    assert len(written) == len(original) == 1405
    chaos = header.index("chaos_dist")
    for line, (mine, theirs) in enumerate(zip(written, original), start=2):
        # The same text in every cell (the key order of chaos_dist's dict is the database's on PostgreSQL).
        assert mine[: len(theirs)] == [*theirs[:chaos], mine[chaos], *theirs[chaos + 1 :]], line
        assert (ast.literal_eval(mine[chaos]) if mine[chaos] else "") == (
            ast.literal_eval(theirs[chaos]) if theirs[chaos] else ""
        ), line
    again = make_project(task_type, slug="livenli-again")
    import_stream(again, io.StringIO(text), "livenli")
    assert list(again.examples.order_by("position").values_list("source_data", flat=True)) == list(
        project.examples.order_by("position").values_list("source_data", flat=True)
    )


def test_export_dataset_counts_livenli_rows_not_lines(shared_data, make_project, tmp_path):
    """LiveNLI's explanations hold line breaks and doubled quotes inside quoted cells: the command counts the
    rows the file holds, as csv reads them back, not its lines."""
    project = make_project("label_explanation", slug="livenli-count")
    import_file(project, shared_data / LIVENLI, "livenli")
    out, said = tmp_path / "livenli.csv", io.StringIO()
    call_command("export_dataset", project.slug, "--format", "livenli", "--output", str(out), stdout=said)
    text = out.read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))[1:]
    assert len(rows) == 1405 and any("\n" in cell for row in rows for cell in row) and '""' in text
    assert text.count("\n") > 1405 + 1  # what counting lines got wrong
    assert f"wrote 1405 records to {out}" in said.getvalue()


def test_taxonomy_round_trips_both_rounds(shared_data, make_project):
    project = make_project("nli_label", slug="taxonomy")
    original = []
    for path in TAXONOMY:
        import_file(project, shared_data / path, "taxonomy")
        original += json_records((shared_data / path).read_text(encoding="utf-8"))
    assert project.items.count() == 510
    records = json_records(exported(project, "taxonomy"))
    for record in records:
        del record[STUDIO_KEY]
    assert records == original
    tags = Counter(tag for r in records for tag in r["a1"])
    assert (tags["Interrogative."], tags["N/A"]) == (20, 11)  # the release's own strings, kept


@pytest.mark.parametrize(
    "path, fmt", [(VARIERR, "varierr"), (LIVENLI, "livenli"), *((p, "taxonomy") for p in TAXONOMY)]
)
def test_validate_dataset_accepts_the_real_files(shared_data, path, fmt, capsys):
    report = validate_file(shared_data / path, fmt)
    assert report.valid, report.as_dict(limit=5)
    call_command("validate_dataset", str(shared_data / path), "--format", fmt, "--json")
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["valid"] is True


def test_collected_label_answers_are_written_beside_the_records(make_project, import_rows, worker):
    """A label study's own answers on pairs the files did not have: built records that validate."""
    project = make_project("nli_label", slug="collected", redundancy=1)
    import_rows(
        project, [{"id": f"p{n}", "premise": f"A premise {n}.", "hypothesis": "A hypothesis."} for n in range(3)]
    )
    page = claim_page(project, worker)
    submit_page(page.pk, worker, {str(c.item_id): {"value": "n", "seconds": 1.0} for c in page.claims.all()})
    for fmt in ("varierr", "taxonomy"):
        records = json_records(exported(project, fmt))
        assert [r[STUDIO_KEY]["collected"] for r in records] == [{"label_counter": {"n": 1}, "answers": 1}] * 3
    varierr = json_records(exported(project, "varierr"))[0]
    assert (
        varierr["context"] == "A premise 0." and varierr["label_set_round_1"] == [] and varierr["chaosnli_labels"] == {}
    )
    written = list(csv.DictReader(io.StringIO(exported(project, "livenli"))))
    assert [(row["multilabel"], row["row_source"], row["dist"]) for row in written] == [
        ("either", "collected", "[0. 1. 0.]")
    ] * 3


# ---------------------------------------------------------------- bad rows


def replaced_line(path, number: int, change) -> str:
    """The real file with its line `number` (1-based) changed."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[number - 1] = change(lines[number - 1])
    return "".join(lines)


def varierr_line(change):
    def edit(line: str) -> str:
        record = json.loads(line)
        change(record)
        return json.dumps(record) + "\n"

    return edit


def without_makes_sense(record):
    del record["entailment"][0]["judgments"][1]["makes_sense"]


def unknown_error_label(record):
    record["error_labels"] = ["entailed"]


def far_highlight(line: str) -> str:
    return line.replace("'endIndex': 108, 'startIndex': 70", "'endIndex': 308, 'startIndex': 70", 1)


BAD_ROWS = [
    (VARIERR, "varierr", 3, lambda line: line[:40] + "\n", "(json)", "not valid JSON"),
    (VARIERR, "varierr", 1, varierr_line(without_makes_sense), "entailment[0].judgments[1].makes_sense", "missing"),
    (VARIERR, "varierr", 2, varierr_line(unknown_error_label), "error_labels[0]", "entailed"),
    (LIVENLI, "livenli", 2, far_highlight, "highlight_p.entities[0]", "outside the premise"),
    (LIVENLI, "livenli", 3, lambda line: line.replace(",either,", ",maybe,", 1), "multilabel", "true, either, false"),
    (LIVENLI, "livenli", 2, lambda line: line.replace("{'c': 11", "{'x': 11", 1), "chaos_dist", "label counts"),
    (
        TAXONOMY[1],
        "taxonomy",
        4,
        lambda line: line.replace('"agg":["Lexical"]', '"agg":["Coreference"]'),
        "agg",
        "a1 and a2",
    ),
]


@pytest.mark.parametrize("path, fmt, number, change, field, message", BAD_ROWS)
def test_a_malformed_row_is_refused_with_its_line_and_field(
    shared_data, make_project, path, fmt, number, change, field, message
):
    project = make_project("nli_label", slug="bad")
    text = replaced_line(shared_data / path, number, change)
    with pytest.raises(ImportFileError) as refused:
        import_stream(project, io.StringIO(text), fmt)
    assert [(line, name) for line, name, _ in refused.value.errors] == [(number, field)]
    assert message in refused.value.errors[0][2]
    assert not project.examples.exists() and not Annotation.objects.filter(item__project=project).exists()
    report = validate(lambda: io.BytesIO(text.encode()), fmt)
    assert [(error.line, error.field) for error in report.errors] == [(number, field)]


def test_a_uid_whose_rows_are_apart_is_refused(shared_data, make_project):
    lines = (shared_data / LIVENLI).read_text(encoding="utf-8").splitlines()
    text = "\n".join([lines[0], lines[1], *lines[-3:], lines[2]])  # a row of the first uid after another uid's
    with pytest.raises(ImportFileError) as refused:
        import_stream(make_project("nli_label", slug="apart"), io.StringIO(text), "livenli")
    assert (6, "uid") in [(line, name) for line, name, _ in refused.value.errors]


# ---------------------------------------------------------------- collected explanations


def explained(text: str, premise=()) -> dict:
    return {"explanation": text, "premise_spans": [list(span) for span in premise], "hypothesis_spans": []}


def answer_page(project, worker, value_of) -> None:
    page = claim_page(project, worker)
    claims = page.claims.select_related("item__example")
    submit_page(page.pk, worker, {str(claim.item_id): {"value": value_of(claim.item)} for claim in claims})


def test_collected_explanations_are_written_with_their_validators_judgments(shared_data, make_project, make_user):
    """Two writers explain labels of two pairs (one imported from varierr.json, one from a plain file); a
    validator judges every explanation: the exports carry the explanations, their spans and judgments, and
    VariErr's rule over the judgments."""
    lines = (shared_data / VARIERR).read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[0])
    study = make_project(
        "label_explanation",
        slug="explain",
        items_per_page=2,
        redundancy=2,
        max_annotations=2,
        verdict_rule="peer_majority",
    )
    import_stream(study, io.StringIO(lines[0]), "varierr")
    plain = {"id": "plain-1", "premise": record["context"], "hypothesis": f"{record['statement']} Really."}
    import_stream(study, io.StringIO(json.dumps(plain) + "\n"), "jsonl")
    first, second, validator = make_user("first"), make_user("second"), make_user("validator")
    because = "the statement only reorders the two clauses of the context"
    drops = "the statement leaves out the rural routes entirely"
    answer_page(study, first, lambda item: {"labels": {"e": explained(because, [(0, 4)]), "c": explained(drops)}})
    answer_page(study, second, lambda item: {"labels": {"n": explained("nobody can tell the real reason here")}})
    send_to_validation(study)
    study.refresh_from_db()
    validation = update_project(study.validation_project, items_per_page=10)
    answer_page(validation, validator, lambda item: {"makes_sense": item.example.origin_target != "c"})

    # While the writers can still self-check, the peers' "no" makes contradiction pending, not an error.
    waiting = {r["id"]: r for r in json_records(exported(study, "varierr"))}["plain-1"]
    assert (waiting["error_labels"], waiting[STUDIO_KEY]["pending_labels"]) == ([], ["contradiction"])
    assert waiting[STUDIO_KEY]["label_verdicts"] == {"e": "supported", "c": "pending", "n": "supported"}
    study = update_project(study, status="closed")  # no self-check any more: the peer majority decides

    records = {r["id"]: r for r in json_records(exported(study, "varierr"))}
    writer, judge = annotator_id(study, first.id), annotator_id(study, validator.id)
    imported, built = records[record["id"]], records["plain-1"]
    assert {k: v for k, v in imported.items() if k != STUDIO_KEY} == record  # the file's record untouched
    collected = imported[STUDIO_KEY]["collected"]
    item_id = imported[STUDIO_KEY]["item"]
    assert collected["entailment"] == [
        {
            "annotator": writer,
            "id": f"{item_id}-entailment-1",
            "judgments": [{"annotator": judge, "makes_sense": True}],  # the validator named, as in the release
            "label_correction": False,
            "reason": because,
            "self_corrected": True,  # as the release sets it: the author gave no judgment of their own
            "premise_spans": [[0, 4]],
            "hypothesis_spans": [],
        }
    ]
    assert [entry["judgments"] for entry in collected["contradiction"]] == [
        [{"annotator": judge, "makes_sense": False}]
    ]
    assert judge not in (writer, None)
    assert collected["neutral"][0]["annotator"] == annotator_id(study, second.id)
    # The pair the file did not have: its own fields hold the collected explanations and VariErr's rule.
    assert (built["context"], built["label_set_round_1"]) == (
        plain["premise"],
        ["entailment", "neutral", "contradiction"],
    )
    assert (built["error_labels"], built["label_set_round_2"], built["has_ambiguity"]) == (
        ["contradiction"],
        ["entailment", "neutral"],
        True,
    )
    assert built["label_count_round_2"] == {"entailment": 1.0, "neutral": 1.0, "contradiction": None}
    assert built[STUDIO_KEY]["label_verdicts"] == {"e": "supported", "c": "error", "n": "supported"}

    written = list(csv.DictReader(io.StringIO(exported(study, "livenli"))))
    # The ChaosNLI counts the VariErr record carries stay the pair's distribution in the LiveNLI rows.
    carried = [ast.literal_eval(row["chaos_dist"]) for row in written if row["uid"] == record["id"]]
    assert carried == [record["chaosnli_labels"]] * 3  # one row per explanation: e and c, then n
    rows = [row for row in written if row["uid"] == "plain-1"]
    # One row per explanation, as the release: each label its own explanation and highlights.
    assert [(row["worker_id"], row["multilabel"], row["row_source"]) for row in rows] == [
        (writer, "true", "collected"),
        (writer, "false", "collected"),
        (annotator_id(study, second.id), "either", "collected"),
    ]
    assert [row["explanation"] for row in rows] == [because, drops, "nobody can tell the real reason here"]
    assert ast.literal_eval(rows[0]["highlight_p"])["entities"] == [
        {"endIndex": 4, "startIndex": 0, "text": record["context"][:4], "type": "highlight"}
    ]
    assert ast.literal_eval(rows[1]["highlight_p"])["entities"] == []  # contradiction's own: none
    assert (rows[0]["dist"], rows[0]["agg_dist"]) == ("[1. 0. 0.]", "[0.33333333 0.33333333 0.33333333]")
