"""Per-field length limits on every import format (docs/formats.md): a text over MAX_TEXT_CHARS, or a JSON
Lines record over MAX_RECORD_CHARS, refuses the file with its line and field, and nothing is imported; the same
for a submitted answer's reason and value."""

import io
import json

import pytest

from annotation.services.answers import MAX_ANSWER_CHARS, MAX_REASON_CHARS, SubmissionError, parse_answers
from annotation.tasktypes import get_task_type
from dataset_io.formats import FORMATS, ExportOptions
from dataset_io.formats.base import MAX_RECORD_CHARS, MAX_TEXT_CHARS
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


@pytest.mark.parametrize("fmt, task_type, line, field", [case(*values) for values in CASES])
def test_a_text_over_the_limit_refuses_the_file_naming_line_and_field(
    make_project, shared_data, fmt, task_type, line, field
):
    if fmt == "chaosnli":
        text = published_file(shared_data, "chaosnli/chaosNLI_snli.jsonl")
    elif fmt == "dnli":
        text = published_file(shared_data, "defeasible-nli/defeasible-snli/dev.jsonl")
    else:
        text = study_file(make_project, fmt, task_type)
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
    assert message == f"the record is {length:,} characters long, over the limit of {MAX_RECORD_CHARS:,} for one line"
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
