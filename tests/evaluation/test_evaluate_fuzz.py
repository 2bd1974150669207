"""`evaluate` fuzzed over every suite's readers: generated files, good ones bent out of shape field by field
(hostile values, missing fields, short or long CSV rows, junk lines), must give a result or exit 2 with one
line naming the file, line and field; never a traceback."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.django_db
FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", "e", "n", "c", "entailment", "-", "1", "2", "0.5", "NaN", "1e999"]),
    st.lists(st.one_of(st.integers(-1, 5), st.floats(0, 1), st.text(max_size=3)), max_size=4),
    st.dictionaries(st.sampled_from(["e", "n", "c", "x"]), st.one_of(st.floats(0, 1), st.integers(0, 5)), max_size=4),
)

# One good file per suite and role (kinds: jsonl records, a csv table, or one JSON document).
GOOD = {
    "unli": {
        "gold": (
            "csv",
            [
                {"id": str(i), "pre": "P", "hyp": f"H{i}", "nli": "1", "unli": str(p)}
                for i, p in enumerate((0.2, 0.9, 0.05))
            ],
        ),
        "predictions": ("csv", [{"id": str(i), "prediction": str(p)} for i, p in enumerate((0.3, 0.8, 0.1))]),
    },
    "chaos": {
        "human": (
            "jsonl",
            [
                {
                    "uid": u,
                    "label_count": c,
                    "label_dist": [x / 10 for x in c],
                    "entropy": 1.0,
                    "majority_label": "e",
                    "old_label": "n",
                }
                for u, c in (("a", [9, 1, 0]), ("b", [0, 0, 10]), ("c", [2, 5, 3]))
            ],
        ),
        "predictions": ("jsonl", [{"id": u, "probabilities": {"e": 0.6, "n": 0.3, "c": 0.1}} for u in "abc"]),
    },
    "nli-atoms": {
        "input": (
            "jsonl",
            [
                {
                    "id": str(i),
                    "gold_label": "e",
                    "predicted_label": "n",
                    "atoms": [
                        {"entailed_by_hypothesis": True, "predicted_label": "e"},
                        {"entailed_by_hypothesis": False},
                    ],
                }
                for i in range(3)
            ],
        ),
    },
    "defeasible": {
        "input": (
            "jsonl",
            [
                {
                    "id": str(i),
                    "gold_label": "strengthener",
                    "predicted_label": "weakener",
                    "atoms": [
                        {"text": "a cat", "gold": 2, "valid": True, "predicted_label": "strengthener"},
                        {"text": "a dog", "gold": -1, "valid": False},
                    ],
                }
                for i in range(3)
            ],
        ),
    },
    "transitivity": {
        "input": (
            "jsonl",
            [{"id": str(i), "label_p_h": "e", "label_h_m": "c", "label_m_h": "c", "label_p_m": "c"} for i in range(3)],
        ),
    },
    "epistemic": {
        "input": (
            "jsonl",
            [{"id": str(i), "template": "control", "label": "e", "original_label": "e"} for i in range(3)],
        ),
        "predictions": ("jsonl", [{"id": str(i), "label": "n"} for i in range(3)]),
    },
    "alt-test": {
        "annotations": ("jsonl", [{"id": str(i), "annotator": a, "label": "e"} for i in range(3) for a in "xyz"]),
        "predictions": ("jsonl", [{"id": str(i), "probabilities": {"e": 0.5, "n": 0.5}} for i in range(3)]),
    },
}
OPTIONS = {"epistemic": ["--score"], "alt-test": ["--min-items", "2"]}


@st.composite
def bent(draw, suite):
    """The suite's good files with a few records changed: a field replaced by a hostile value or removed, a
    record swapped for junk, a CSV row cut short or made long."""
    files = {}
    for role, (kind, rows) in GOOD[suite].items():
        rows = [dict(row) for row in rows]
        # Files that read but may leave a metric nothing to compute: fewer records (down to one), a field
        # made the same in every record (no variance), a list field emptied.
        rows = rows[: draw(st.integers(1, len(rows)))]
        for field in draw(st.lists(st.sampled_from(sorted(rows[0])), max_size=2, unique=True)):
            for row in rows:
                row[field] = rows[0][field]
        for field in draw(st.lists(st.sampled_from(sorted(rows[0])), max_size=1)):
            if isinstance(rows[0][field], list):
                for row in rows:
                    row[field] = []
        lines = None
        for _ in range(draw(st.integers(0, 3))):
            index = draw(st.integers(0, len(rows) - 1))
            if not rows[index]:
                continue
            field = draw(st.sampled_from(sorted(rows[index])))
            change = draw(st.sampled_from(["value", "drop", "junk"] + (["short", "long"] if kind == "csv" else [])))
            if change == "value":
                rows[index][field] = draw(HOSTILE) if kind == "jsonl" else draw(st.text(max_size=8))
            elif change == "drop" and kind == "jsonl":
                del rows[index][field]
            elif change in ("junk", "short", "long"):
                lines = lines or {}
                lines[index] = change
        files[role] = (kind, rows, lines or {})
    return files


def write(tmp_path, suite, files) -> list[str]:
    arguments = [suite, *OPTIONS.get(suite, [])]
    for role, (kind, rows, bent_lines) in files.items():
        path = tmp_path / f"{role}.{kind}"
        if kind == "csv":
            out = io.StringIO()
            header = list(GOOD[suite][role][1][0])
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(header)
            for index, row in enumerate(rows):
                cells = [str(row.get(name, "")) for name in header]
                change = bent_lines.get(index)
                writer.writerow(
                    cells[:-1]
                    if change == "short"
                    else [*cells, "extra"]
                    if change == "long"
                    else ["{not", "csv"]
                    if change == "junk"
                    else cells
                )
            path.write_text(out.getvalue(), encoding="utf-8")
        else:
            path.write_text(
                "".join(
                    ("{not json" if bent_lines.get(index) == "junk" else json.dumps(row)) + "\n"
                    for index, row in enumerate(rows)
                ),
                encoding="utf-8",
            )
        arguments += [f"--{role}", str(path)]
    return arguments


@pytest.mark.parametrize("suite", sorted(GOOD))
def test_evaluate_gives_a_result_or_a_line_naming_the_place(tmp_path, suite):
    @FUZZ
    @given(bent(suite))
    def run(files):
        arguments = write(tmp_path, suite, files)
        out = io.StringIO()
        try:
            call_command("evaluate", *arguments, "--json", stdout=out)
        except CommandError as error:
            assert error.returncode == 2, error
            message = str(error)
            assert "\n" not in message and any(f"{role}." in message for role in files), message
            assert "line " in message or ":" in message, message
        else:
            json.loads(out.getvalue().strip().splitlines()[-1])

    run()
