"""Length limits on every import format (docs/formats.md): a text over MAX_TEXT_CHARS, or a row with more columns
or bytes than the row limits (MAX_ROW_COLUMNS, MAX_ROW_BYTES, or the settings that replace them), refuses the
file with its line and field, and nothing is imported, through the importer, the API and the command line; the
same for a submitted answer's reason and value."""

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from annotation.services.answers import MAX_ANSWER_CHARS, MAX_REASON_CHARS, SubmissionError, parse_answers
from annotation.tasktypes import get_task_type
from dataset_io.formats import FORMATS, ExportOptions
from dataset_io.formats.base import MAX_ROW_BYTES, MAX_ROW_COLUMNS, MAX_TEXT_CHARS
from dataset_io.services import exporters
from dataset_io.services.importers import ImportFileError, import_stream
from tests.conftest import LABEL_VARIATION, case

pytestmark = pytest.mark.django_db
PREMISE = "Premisezero"
ROWS = [
    {"id": "r0", "premise": PREMISE, "hypothesis": "Hypozero", "update": "Updzero"},
    {"id": "r1", "premise": "Premiseone", "hypothesis": "Hypoone", "update": "Updone"},
]
LABEL = {"nli_label": "e", "unli_slider": "e", "atom_validity": "strengthener", "hypothesis_writing": None}


def jsonl(records) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def study_file(make_project, fmt: str, task_type: str) -> str:
    """A file of `fmt` as this app writes it: the export of a small study of `task_type`."""
    project = make_project(task_type, slug="source")
    rows = [{**row, "label": LABEL[task_type], "probability": "0.5"} for row in ROWS]
    import_stream(project, io.StringIO(jsonl({k: v for k, v in row.items() if v is not None} for row in rows)), "jsonl")
    if project.task.per_atom:
        import_stream(
            project, io.StringIO(jsonl({"example_id": row["id"], "atoms": ["An atom."]} for row in ROWS)), "atoms"
        )
    return "".join(exporters.export(project, fmt, ExportOptions(include_unanswered=True)))


def published_file(shared_data, path: str) -> str:
    """The first two records of a published file (formats whose records this app's export cannot make up:
    ChaosNLI's votes, delta-NLI's rows), its premise made PREMISE."""
    lines = (shared_data / path).read_text(encoding="utf-8").splitlines()[:2]
    first = json.loads(lines[0])
    if "example" in first:
        first["example"]["premise"] = PREMISE
    else:
        first["Premise"] = PREMISE
    return jsonl([first, json.loads(lines[1])])


# (format, task type, the field the error names: the file's own column where the reader takes its texts through
# the shared text check, else the study's field)
CASES = [
    ("usnli", "unli_slider", 2, "pre"),
    ("snli", "nli_label", 1, "sentence1"),
    ("varierr", "nli_label", 1, "premise"),
    ("livenli", "nli_label", 2, "premise"),
    ("taxonomy", "nli_label", 1, "premise"),
    ("jsonl", "nli_label", 1, "premise"),
    ("jsonl", "hypothesis_writing", 1, "premise"),
    ("csv", "nli_label", 2, "premise"),
    ("atoms", "atom_validity", 1, "premise"),
    ("chaosnli", "nli_label", 1, "example.premise"),
    ("dnli", "atom_validity", 1, "Premise"),
]


def test_every_format_that_reads_is_covered():
    absent = LABEL_VARIATION - FORMATS.keys()  # the app's formats, where it is not installed
    assert {fmt for fmt, *_ in CASES} - absent == {name for name, fmt in FORMATS.items() if fmt.reads}


def format_file(make_project, shared_data, fmt: str, task_type: str) -> str:
    if fmt == "chaosnli":
        return published_file(shared_data, "chaosnli/chaosNLI_snli.jsonl")
    if fmt == "dnli":
        return published_file(shared_data, "defeasible-nli/defeasible-snli/dev.jsonl")
    return study_file(make_project, fmt, task_type)


@pytest.mark.parametrize("fmt, task_type, line, field", [case(*values) for values in CASES])
def test_a_text_over_the_limit_refuses_the_file_naming_line_and_field(
    make_project, shared_data, fmt, task_type, line, field
):
    text = format_file(make_project, shared_data, fmt, task_type)
    assert PREMISE in text
    target = make_project(task_type, slug="target")
    import_stream(target, io.StringIO(text.replace(PREMISE, "x" * MAX_TEXT_CHARS)), fmt)  # at the limit: taken
    target.examples.all().delete()
    with pytest.raises(ImportFileError) as refused:
        import_stream(target, io.StringIO(text.replace(PREMISE, "x" * (MAX_TEXT_CHARS + 1))), fmt)
    assert refused.value.errors == [
        (line, field, f"is {MAX_TEXT_CHARS + 1:,} characters long, over the limit of {MAX_TEXT_CHARS:,} for a text")
    ]
    assert target.examples.count() == 0


def with_extra_columns(text: str, fmt: str, columns: dict[str, str]) -> str:
    """The file with `columns` added to its first record (JSON Lines), or to its header and every row (CSV)."""
    if FORMATS[fmt].extension == "jsonl":
        first, *rest = text.splitlines(keepends=True)
        return jsonl([{**json.loads(first), **columns}]) + "".join(rest)
    header, *rows = csv.reader(io.StringIO(text))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(
        [header + list(columns)] + [row + list(columns.values()) for row in rows]
    )
    return out.getvalue()


@pytest.mark.parametrize("fmt, task_type, line, field", [case(*values) for values in CASES])
def test_a_row_with_too_many_columns_refuses_the_file_naming_line_and_field(
    make_project, shared_data, fmt, task_type, line, field
):
    text = format_file(make_project, shared_data, fmt, task_type)
    rows = [row for _, row in FORMATS[fmt].rows(io.StringIO(text))]
    own = len(rows[0])  # the columns of the format's own first row
    wide = with_extra_columns(text, fmt, {f"extra{n}": "x" for n in range(MAX_ROW_COLUMNS)})
    target = make_project(task_type, slug="target")
    with pytest.raises(ImportFileError) as refused:
        import_stream(target, io.StringIO(wide), fmt)
    assert refused.value.errors[0] == (
        line,
        f"extra{MAX_ROW_COLUMNS - own}",  # the first column past the limit
        f"the row has {own + MAX_ROW_COLUMNS:,} columns, over the limit of {MAX_ROW_COLUMNS:,} for a row "
        f"(this is column {MAX_ROW_COLUMNS + 1:,})",
    )
    # CSV: every row carries the header's columns; JSON Lines: only the first record was widened.
    assert len(refused.value.errors) == (len(rows) if FORMATS[fmt].extension == "csv" else 1)
    assert target.examples.count() == 0


@pytest.mark.parametrize("fmt, task_type, line, field", [case(*values) for values in CASES])
def test_a_row_with_too_many_bytes_refuses_the_file_naming_line_and_field(
    make_project, shared_data, fmt, task_type, line, field
):
    """Eleven extra texts of 100,000 characters: each within the per-field limit, the row over 1 MiB."""
    text = format_file(make_project, shared_data, fmt, task_type)
    big = with_extra_columns(text, fmt, {f"extra{n}": "x" * MAX_TEXT_CHARS for n in range(11)})
    target = make_project(task_type, slug="target")
    with pytest.raises(ImportFileError) as refused:
        import_stream(target, io.StringIO(big), fmt)
    first_line, name, message = refused.value.errors[0]
    if FORMATS[fmt].extension == "csv":  # the row's cells, and its largest field (the first of equals)
        size = sum(len(cell) for cell in list(csv.reader(io.StringIO(big)))[1])
        expected = ("extra0", f"({MAX_TEXT_CHARS:,} in this field)")
    else:  # the record's line, not decoded
        size = len(big.splitlines(keepends=True)[0])
        expected = ("(json)", "")
    assert (first_line, name) == (line, expected[0])
    assert (
        message
        == f"the row is {size:,} bytes long, over the limit of {MAX_ROW_BYTES:,} for a row {expected[1]}".strip()
    )
    assert target.examples.count() == 0


def test_the_row_limits_are_settings_counted_in_bytes(make_project, settings):
    settings.NLI_MAX_ROW_COLUMNS, settings.NLI_MAX_ROW_BYTES = 4, 80
    project = make_project("nli_label")
    four = {"id": "a", "premise": "P", "hypothesis": "H", "note": ""}
    line = json.dumps(four) + "\n"
    at_limit = {**four, "note": "n" * (80 - len(line))}  # 80 bytes with its line break
    assert len(json.dumps(at_limit)) + 1 == 80
    import_stream(project, io.StringIO(jsonl([at_limit])), "jsonl")
    for record, field, message in [
        ({**four, "m": ""}, "m", "the row has 5 columns, over the limit of 4 for a row (this is column 5)"),
        # 80 characters, 81 bytes
        (
            {**at_limit, "note": at_limit["note"][:-1] + "é"},
            "(json)",
            "the row is 81 bytes long, over the limit of 80 for a row",
        ),
    ]:
        record = {**record, "id": "b"}
        with pytest.raises(ImportFileError) as refused:
            import_stream(project, io.StringIO(json.dumps(record, ensure_ascii=False) + "\n"), "jsonl")
        assert refused.value.errors == [(1, field, message)]
    header = "id,premise,hypothesis,note\n"
    import_stream(project, io.StringIO(header + "c,P," + "h" * 78 + ",\n"), "csv")  # its cells: 80 bytes
    with pytest.raises(ImportFileError) as refused:
        import_stream(project, io.StringIO(header + "d,P," + "h" * 77 + ",é\n"), "csv")
    assert refused.value.errors == [
        (2, "hypothesis", "the row is 81 bytes long, over the limit of 80 for a row (77 in this field)")
    ]
    assert sorted(project.examples.values_list("source_id", flat=True)) == ["a", "c"]


def wide_csv(columns: int) -> bytes:
    """A CSV file of one row of `columns` columns."""
    header = ["premise", "hypothesis"] + [f"c{n}" for n in range(3, columns + 1)]
    row = ["P", "H"] + ["x"] * (columns - 2)
    return f"{','.join(header)}\n{','.join(row)}\n".encode()


def test_a_2000_column_row_is_refused_through_the_api_the_command_line_and_the_page(
    make_project, author, tmp_path, web_import
):
    project = make_project("nli_label")
    api = APIClient()
    api.force_login(author)
    answer = api.post(
        f"/api/v1/projects/{project.slug}/import/",
        {"format": "csv", "file": io.BytesIO(wide_csv(2000))},
        format="multipart",
    )
    message = "the row has 2,000 columns, over the limit of 200 for a row (this is column 201)"
    assert answer.status_code == 409
    assert answer.json()["field"] == "c201"
    assert answer.json()["errors"] == [{"line": 2, "field": "c201", "message": message}]
    path = tmp_path / "wide.csv"
    path.write_bytes(wide_csv(2000))
    with pytest.raises(CommandError) as refused:
        call_command("import_items", project.slug, str(path), "--format", "csv", stdout=io.StringIO())
    assert str(refused.value) == f"nothing was imported: line 2, field 'c201': {message}"  # one line
    client = Client()
    client.force_login(author)
    page = web_import(client, project, "csv", SimpleUploadedFile("wide.csv", wide_csv(2000)))
    assert page.status_code == 400 and page.context["errors"] == [(2, "c201", message)]
    assert project.examples.count() == 0


def test_one_bad_row_is_a_one_line_error_and_imports_nothing(make_project, tmp_path):
    project = make_project("nli_label")
    path = tmp_path / "one-long.jsonl"
    good = {"premise": "P", "hypothesis": "H"}
    path.write_text(jsonl([good, {**good, "hypothesis": "H2", **{f"c{n}": n for n in range(MAX_ROW_COLUMNS)}}]))
    with pytest.raises(CommandError) as refused:
        call_command("import_items", project.slug, str(path), "--format", "jsonl", stdout=io.StringIO())
    assert str(refused.value) == (
        f"nothing was imported: line 2, field 'c198': the row has {MAX_ROW_COLUMNS + 2} columns, over the limit "
        f"of {MAX_ROW_COLUMNS} for a row (this is column {MAX_ROW_COLUMNS + 1})"
    )
    assert project.examples.count() == 0


def test_a_60_mb_premise_is_refused_undecoded(make_project, tmp_path):
    project = make_project("nli_label")
    path = tmp_path / "huge.jsonl"
    huge = {"premise": "x" * 60_000_000, "hypothesis": "H"}
    path.write_text(jsonl([huge, {"premise": "P", "hypothesis": "H"}]))
    with pytest.raises(ImportFileError) as refused, open(path, "rb") as stream:
        import_stream(project, stream, "jsonl")
    (line, field, message), *rest = refused.value.errors
    assert (line, field, rest) == (1, "(json)", [])
    length = len(json.dumps(huge)) + 1  # with its line break
    assert message == f"the row is {length:,} bytes long, over the limit of {MAX_ROW_BYTES:,} for a row"
    assert project.examples.count() == 0


def test_an_answers_reason_and_value_have_limits():
    task = get_task_type("nli_label")
    options = task.default_options()
    taken = parse_answers(task, options, [1], {"1": {"value": "e", "reason": "r" * MAX_REASON_CHARS}})
    assert taken[1][2] == "r" * MAX_REASON_CHARS
    with pytest.raises(SubmissionError) as refused:
        parse_answers(task, options, [1], {"1": {"value": "e", "reason": "r" * (MAX_REASON_CHARS + 1)}})
    assert refused.value.field == "answers[1].reason"  # refused, no longer cut short silently

    class Unchecked(type(task)):  # a task type (a plugin, say) that keeps whatever value it is given
        def parse_answer(self, answer, options):
            return answer["value"], answer["value"]

    unchecked = Unchecked()
    assert parse_answers(unchecked, options, [1], {"1": "v" * (MAX_ANSWER_CHARS - 2)})
    with pytest.raises(SubmissionError) as refused:
        parse_answers(unchecked, options, [1], {"1": "v" * MAX_ANSWER_CHARS})
    assert (refused.value.field, refused.value.message) == ("answers[1].value", "is longer than 50,000 characters")
