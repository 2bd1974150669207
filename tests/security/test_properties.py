"""Property-based tests: hostile files for every importer and hostile answers for every task type.

The contract under test: an import either returns a report or raises ImportFileError whose errors name a
line of the input and a field, and then the database is exactly as before; a submit either succeeds or is
refused with a SubmissionError (an API 4xx with "field" and "detail") and stores nothing. Whatever is
stored must also be storable on PostgreSQL: strings within their column's max_length, no NUL character,
JSON without NaN or Infinity.
"""

import csv
import io
import json

import pytest
from django.db import models
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Annotation, Assignment, Atom, Example, Item, Project
from annotation.services.answers import SubmissionError, parse_answers
from annotation.services.assignments import claim_page
from annotation.tasktypes import TASK_TYPES as REGISTERED_TASK_TYPES
from dataset_io.services.importers import ImportFileError, import_stream
from tests.security.db import rolled_back

pytestmark = pytest.mark.django_db

FAST = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


# ---------------------------------------------------------------- hostile values

LONG_TEXT = st.text(min_size=195, max_size=260)
NUMBERS = st.one_of(
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e308, -0.0, 5e-324]),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    NUMBERS,
    st.text(max_size=30),
    LONG_TEXT,
    st.sampled_from(
        [
            "",
            " ",
            "\x00",
            "e",
            "n",
            "c",
            "entailment",
            "-",
            "valid",
            "invalid",
            "weakener",
            "0",
            "1",
            "2",
            "0.5",
            "1e999",
        ]
    ),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
# Literals json.dumps never writes but a file may hold.
RAW_LINES = st.sampled_from(
    [
        "{",
        "}",
        "[]",
        "null",
        "NaN",
        "-Infinity",
        '{"premise": 1e999}',
        "\ufeff{}",
        '"text"',
        '{"premise": ' + "9" * 5000 + "}",
        "[" * 5000 + "]" * 5000,
        '{"a": ' * 3000 + "1" + "}" * 3000,
    ]
)


STORABLE = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")


def text_sentence():
    """Any text a dataset may carry: every character but surrogates and NUL (which PostgreSQL cannot store)."""
    return st.text(alphabet=STORABLE, min_size=1, max_size=40).filter(str.strip)


# Per format: a plausible value for every field the reader looks at. Each generated record draws every
# field from its plausible value or from a hostile one, or leaves it out.
PLAUSIBLE = {
    "jsonl": {
        "id": st.text(max_size=12),
        "premise": text_sentence(),
        "hypothesis": text_sentence(),
        "update": text_sentence(),
        "label": st.sampled_from(["e", "n", "c", "valid", "2"]),
        "group": st.text(max_size=8),
    },
    "snli": {
        "sentence1": text_sentence(),
        "sentence2": text_sentence(),
        "pairID": st.text(max_size=12),
        "gold_label": st.sampled_from(["entailment", "neutral", "contradiction", "-"]),
        "annotator_labels": st.lists(st.sampled_from(["entailment", "neutral"]), max_size=5),
        "premise": text_sentence(),
        "hypothesis": text_sentence(),
        "label": st.sampled_from(["neutral", "contradiction"]),
        "id": st.integers(0, 100),
    },
    "dnli": {
        "Premise": text_sentence(),
        "Hypothesis": text_sentence(),
        "Update": text_sentence(),
        "UpdateType": st.sampled_from(["strengthener", "weakener", "Weakener"]),
        "UpdateTypeImpossible": st.booleans(),
        "SNLIPairId": st.text(max_size=12),
        "AtomicEventRelationId": st.integers(),
    },
    "chaosnli": {
        "uid": st.text(min_size=1, max_size=12),
        "example": st.one_of(
            st.fixed_dictionaries({"premise": text_sentence(), "hypothesis": text_sentence()}),
            st.fixed_dictionaries(
                {"obs1": text_sentence(), "obs2": text_sentence(), "hyp1": text_sentence(), "hyp2": text_sentence()}
            ),
        ),
        "label_counter": st.dictionaries(
            st.sampled_from(["e", "n", "c", "1", "2", "entailment"]), st.integers(0, 100), max_size=3
        ),
        "old_label": st.sampled_from(["e", "n", "c", "1"]),
        "majority_label": st.sampled_from(["e", "n"]),
        "old_labels": st.lists(st.sampled_from(["e", "n"]), max_size=5),
    },
    "atoms": {
        "example_id": st.sampled_from(["ex1", "ex2", "missing"]),
        "hypothesis": st.sampled_from(["Two dogs run.", "nobody"]),
        "atoms": st.lists(
            st.one_of(
                text_sentence(),
                st.fixed_dictionaries(
                    {"text": text_sentence()},
                    optional={
                        "validity": st.sampled_from(["valid", "invalid", "unknown", True]),
                        "effect": st.integers(-2, 2),
                        "label": st.integers(-3, 3),
                    },
                ),
            ),
            min_size=1,
            max_size=4,
        ),
    },
}
PLAUSIBLE["usnli"] = {
    "id": st.text(min_size=1, max_size=12),
    "pre": text_sentence(),
    "hyp": text_sentence(),
    "nli": st.sampled_from(["0", "1", "2"]),
    "unli": st.floats(0, 1).map(str),
}
PLAUSIBLE["csv"] = PLAUSIBLE["jsonl"]


@st.composite
def json_record(draw, fmt, hostility):
    """A record whose fields are each plausible, hostile (with odds `hostility`) or absent (1 in 8)."""
    record = {}
    for name, plausible in PLAUSIBLE[fmt].items():
        roll = draw(st.floats(0, 1))
        if roll < hostility:
            record[name] = draw(JSON_VALUES)
        elif roll < 7 / 8:
            record[name] = draw(plausible)
    if hostility:
        record.update(draw(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=2)))
    return record


@st.composite
def jsonl_file(draw, fmt):
    """Mostly records, a few of them hostile; half the files also carry lines that are no record at all."""
    record_line = json_record(fmt, draw(st.sampled_from([0.0, 0.05, 0.2, 0.5]))).map(
        lambda record: json.dumps(record, allow_nan=True)
    )
    other_lines = [
        JSON_VALUES.map(lambda value: json.dumps(value, allow_nan=True)),
        RAW_LINES,
        st.text(max_size=40),
        st.just(""),
    ]
    line = record_line if draw(st.integers(0, 2)) else st.one_of(record_line, record_line, *other_lines)
    lines = draw(st.lists(line, min_size=1, max_size=6))
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines) + draw(st.sampled_from(["", "\n"]))


CSV_CELL = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        ['"', '""', ",", "\n", "\r", "\r\n", "a\rb", "\x00", " ", "0", "1", "2", "0.5", "nan", "inf", "-1"]
    ),
    LONG_TEXT,
)


@st.composite
def csv_file(draw, fmt):
    columns = list(PLAUSIBLE[fmt])
    header = draw(
        st.permutations(columns).flatmap(
            lambda names: st.lists(st.sampled_from([*names, "extra", ""]), min_size=1, max_size=7)
        )
    )
    if draw(st.booleans()):
        header = draw(st.permutations(columns))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n"])))
    writer.writerow(header)
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.booleans()):
            row = [
                draw(PLAUSIBLE[fmt].get(name, CSV_CELL)) if draw(st.booleans()) else draw(CSV_CELL) for name in header
            ]
            row = [str(cell) for cell in row]
        else:
            row = draw(st.lists(CSV_CELL, max_size=8))
        writer.writerow(row)
    text = out.getvalue()
    raw = draw(st.sampled_from(["", '"unclosed,1\n', "a,b\rc\n", "x" * 140_000 + "\n", '"a""b",",",\n', "\x00,\x00\n"]))
    return text + raw if draw(st.booleans()) else raw + text


def hostile_file(fmt):
    generated = csv_file(fmt) if fmt in ("usnli", "csv") else jsonl_file(fmt)
    noise = st.one_of(st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
    return st.one_of(generated, generated, generated, noise)


# ---------------------------------------------------------------- what an import may leave behind


def table_counts(project) -> dict:
    return {
        "examples": Example.objects.count(),
        "items": Item.objects.count(),
        "atoms": Atom.objects.count(),
        "annotations": Annotation.objects.count(),
        "options": Project.objects.get(pk=project.pk).options,
    }


def count_lines(text: str) -> int:
    """Lines as the importers number them: split on newline only."""
    return len(io.StringIO(text).readlines())


def assert_storable_on_postgresql(queryset):
    for row in queryset:
        for field in row._meta.concrete_fields:
            value = getattr(row, field.attname)
            if isinstance(field, (models.CharField, models.TextField)) and isinstance(value, str):
                assert "\x00" not in value, f"{field.name} holds a NUL character"
                if field.max_length and isinstance(field, models.CharField):
                    assert len(value) <= field.max_length, f"{field.name} is longer than {field.max_length}"
            if isinstance(field, models.JSONField) and value is not None:
                text = json.dumps(value, allow_nan=False)  # raises on NaN and Infinity
                assert "\\u0000" not in text, f"{field.name} holds a NUL character"


def check_import(project, text: str, fmt: str):
    """Import `text`: a report and storable rows, or ImportFileError naming lines and fields and no change."""
    before = table_counts(project)
    try:
        report = import_stream(project, io.StringIO(text), fmt)
    except ImportFileError as error:
        assert error.errors
        lines = count_lines(text)
        for line, field, message in error.errors:
            assert isinstance(line, int) and 0 <= line <= max(lines, 1), (line, lines, field, message)
            assert isinstance(field, str) and field, (line, field, message)
            assert isinstance(message, str) and message
        assert table_counts(project) == before
        event(f"refused: {error.errors[0][1][:12]}")
        return None
    event("imported" if report.created else "imported nothing")
    assert_storable_on_postgresql(Example.objects.filter(project=project))
    assert_storable_on_postgresql(Item.objects.filter(project=project))
    assert_storable_on_postgresql(Atom.objects.filter(example__project=project))
    assert_storable_on_postgresql(Annotation.objects.filter(item__project=project))
    return report


# ---------------------------------------------------------------- importers

FORMAT_TASK = {
    "usnli": "unli_slider",
    "chaosnli": "nli_label",
    "dnli": "defeasible_atom",
    "snli": "nli_label",
    "atoms": "atom_validity",
    "jsonl": "nli_label",
    "csv": "unli_slider",
}


@pytest.fixture
def project_for(make_project, import_rows):
    def make(fmt):
        project = make_project(FORMAT_TASK[fmt], slug=f"hostile-{fmt}")
        if fmt == "atoms":  # atoms attach to examples that exist
            import_rows(
                project,
                [
                    {"id": "ex1", "premise": "A park.", "hypothesis": "Two dogs run."},
                    {"id": "ex2", "premise": "A field.", "hypothesis": "Two dogs run."},
                ],
            )
        return project

    return make


def check_each_rolled_back(strategy, check) -> None:
    """Run `check` on FAST's examples of `strategy`, undoing what each wrote so the next starts from the
    same database."""

    @FAST
    @given(strategy)
    def run(example):
        with rolled_back():
            check(example)

    run()


def import_again_adds_nothing(project, text: str, fmt: str):
    """Import a file already imported: no new example, item, atom or annotation; returns the report."""
    again = import_stream(project, io.StringIO(text), fmt)
    assert again.created == again.items == again.atoms == again.annotations == 0
    return again


@pytest.mark.parametrize("fmt", list(FORMAT_TASK))
def test_hostile_files_give_a_report_or_line_numbered_errors(project_for, fmt):
    project = project_for(fmt)

    def check(text):
        if check_import(project, text, fmt) is not None:  # whatever was taken in, taking it in again adds nothing
            import_again_adds_nothing(project, text, fmt)

    check_each_rolled_back(hostile_file(fmt), check)


@st.composite
def valid_rows(draw, fmt):
    """Rows every reader must take, with distinct ids."""
    count = draw(st.integers(1, 5))
    ids = draw(
        st.lists(
            st.text(alphabet="abcdefgh0123456789", min_size=1, max_size=8), min_size=count, max_size=count, unique=True
        )
    )
    sentence = text_sentence()
    rows = []
    for uid in ids:
        if fmt == "usnli":
            rows.append(
                {
                    "id": uid,
                    "pre": draw(sentence),
                    "hyp": draw(sentence),
                    "nli": draw(st.sampled_from("012")),
                    "unli": str(draw(st.floats(0, 1))),
                }
            )
        elif fmt == "csv":
            rows.append(
                {
                    "id": uid,
                    "premise": draw(sentence),
                    "hypothesis": draw(sentence),
                    "label": draw(st.sampled_from(["e", "n", "c", "entailment", " Neutral ", ""])),
                }
            )
        elif fmt == "jsonl":
            rows.append(
                {
                    "id": uid,
                    "premise": draw(sentence),
                    "hypothesis": draw(sentence),
                    "update": draw(st.text(alphabet=STORABLE, max_size=10)),
                    "extra": draw(st.integers()),
                }
            )
        elif fmt == "snli":
            rows.append(
                {
                    "pairID": uid,
                    "sentence1": draw(sentence),
                    "sentence2": draw(sentence),
                    "gold_label": draw(st.sampled_from(["entailment", "neutral", "contradiction", "-"])),
                }
            )
        elif fmt == "dnli":
            rows.append(
                {
                    "Premise": draw(sentence),
                    "Hypothesis": draw(sentence),
                    "Update": draw(sentence) + uid,
                    "UpdateType": draw(st.sampled_from(["strengthener", "weakener"])),
                }
            )
        elif fmt == "chaosnli":
            counts = draw(
                st.dictionaries(st.sampled_from(["e", "n", "c"]), st.integers(0, 100), min_size=1, max_size=3)
            )
            rows.append(
                {
                    "uid": uid,
                    "example": {"premise": draw(sentence), "hypothesis": draw(sentence)},
                    "label_counter": counts,
                }
            )
        elif fmt == "atoms":
            rows.append(
                {
                    "example_id": draw(st.sampled_from(["ex1", "ex2"])),
                    "atoms": draw(st.lists(sentence, min_size=1, max_size=4)),
                }
            )
    return rows


def write_rows(rows, fmt) -> str:
    if fmt in ("usnli", "csv"):
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue()
    return "".join(json.dumps(row) + "\n" for row in rows)


@pytest.mark.parametrize("fmt", list(FORMAT_TASK))
def test_valid_rows_round_trip(project_for, fmt):
    project = project_for(fmt)

    def check(rows):
        text = write_rows(rows, fmt)
        first = import_stream(project, io.StringIO(text), fmt)  # an ImportFileError fails the test
        assert first.created > 0
        check_import(project, text, fmt)
        again = import_again_adds_nothing(project, text, fmt)
        assert again.already_present == first.created + first.already_present

    check_each_rolled_back(valid_rows(fmt), check)


# ---------------------------------------------------------------- answers


def plausible_answer(task_type):
    """The task type's own example answers, some with one value swapped for a hostile scalar (a written
    answer's sentence, say)."""
    from annotation.tasktypes import get_task_type

    task = get_task_type(task_type)
    examples = st.sampled_from(task.example_answers(task.default_options()))
    return examples | examples.flatmap(
        lambda answer: (
            st.fixed_dictionaries({key: st.one_of(st.just(text), SCALARS) for key, text in answer.items()})
            if isinstance(answer, dict)
            else st.just(answer)
        )
    )


TASK_TYPES = list(REGISTERED_TASK_TYPES)


def answer_value(task_type):
    return st.one_of(plausible_answer(task_type), plausible_answer(task_type), JSON_VALUES)


@st.composite
def answers_for(draw, task_type, item_ids):
    """A page of answers: mostly well-keyed, with hostile values, keys, reasons and timings mixed in."""
    if draw(st.integers(0, 9)) == 0:
        return draw(JSON_VALUES)
    answers = {}
    for item_id in item_ids:
        if draw(st.integers(0, 9)) == 0:
            continue
        if draw(st.integers(0, 4)) == 0:
            answers[str(item_id)] = draw(answer_value(task_type))
            continue
        answer = {"value": draw(answer_value(task_type))}
        if draw(st.booleans()):
            answer["reason"] = draw(st.one_of(st.text(max_size=20), JSON_VALUES, st.text(min_size=2001, max_size=2002)))
        if draw(st.booleans()):
            answer["seconds"] = draw(st.one_of(st.floats(0, 600), NUMBERS, st.text(max_size=8), JSON_VALUES))
        answers[
            draw(
                st.sampled_from([str(item_id), f" {item_id}", f"{item_id}.0"])
                if draw(st.integers(0, 9)) == 0
                else st.just(str(item_id))
            )
        ] = answer
    answers.update(draw(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=1)))
    return answers


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_parse_answers_validates_or_names_the_field(task_type):
    from annotation.tasktypes import get_task_type

    task = get_task_type(task_type)
    options = task.default_options()
    item_ids = [11, 12, 13]

    @FAST
    @given(answers=answers_for(task_type, item_ids))
    def run(answers):
        try:
            parsed = parse_answers(task, options, item_ids, answers)
        except SubmissionError as error:
            # A key naming no item of the page conflicts with the page (409); the rest breaks the answer (400).
            names_no_item = error.message in ("is not an item id", "is not an item of this page")
            assert error.field and error.message and error.status == (409 if names_no_item else 400)
            return
        assert sorted(parsed) == item_ids
        for raw, value, reason, seconds in parsed.values():
            json.dumps([raw, value], allow_nan=False)
            assert isinstance(reason, str) and len(reason) <= 2000
            assert seconds is None or 0 <= seconds < 7 * 86400

    run()


@pytest.fixture
def open_page(make_project, import_rows, worker):
    """A worker's open page in a project of each task type, with the worker's API token."""

    def make(task_type):
        project = make_project(task_type, slug=f"answers-{task_type.replace('_', '-')}", items_per_page=3)
        rows = [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(4)]
        import_rows(project, rows)
        if project.task.per_atom:
            import_rows(project, [{"example_id": str(i), "atoms": [f"atom {i}"]} for i in range(4)], "atoms")
        page = claim_page(project, worker)
        assert page is not None and page.claims.count() == 3
        return page

    return make


def is_strict_json(text: str) -> bool:
    """False when the text needs NaN / Infinity, which DRF's strict parser refuses (a "NaN" inside a
    string is strict JSON)."""

    def refuse(constant):
        raise ValueError(constant)

    try:
        json.loads(text, parse_constant=refuse)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_api_submit_accepts_or_refuses_and_stores_nothing(open_page, worker, task_type):
    page = open_page(task_type)
    item_ids = sorted(page.claims.values_list("item_id", flat=True))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=worker).key}")
    url = f"/api/assignments/{page.pk}/submit/"

    @FAST
    @given(answers=answers_for(task_type, item_ids), wrap=st.booleans())
    def run(answers, wrap):
        body = json.dumps({"answers": answers} if wrap else answers, allow_nan=True)
        strict = is_strict_json(body)
        with rolled_back():
            response = api.post(url, body, content_type="application/json")
            # 400: the body breaks the published schema; 409: it fits it but not the page (docs/api.md).
            assert response.status_code in (200, 400, 409), response.content[:300]
            stored = Annotation.objects.filter(assignment=page).count()
            status = Assignment.objects.get(pk=page.pk).status
            if response.status_code == 200:
                assert response.json()["annotations"] == 3
                assert (stored, status) == (3, "submitted")
            else:
                error = response.json()
                # A body that is not strict JSON never reaches the submit: DRF refuses it as unparseable.
                assert set(error) - {"code"} == ({"field", "detail"} if strict else {"detail"}), error
                assert (stored, status) == (0, "open")

    run()
