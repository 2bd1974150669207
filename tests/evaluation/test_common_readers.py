"""common.readers: the one JSONL and CSV reader, shared by the importers and the evaluation readers."""

import io

import pytest

from common.readers import RowError, csv_rows, json_lines


def read(reader, data, *args):
    return list(reader(io.BytesIO(data) if isinstance(data, bytes) else io.StringIO(data), *args))


def test_row_error_names_file_line_and_field():
    assert str(RowError("a.b", "is bad", file="f.jsonl", line=3)) == "f.jsonl:3 field 'a.b': is bad"
    assert str(RowError(None, "is empty", file="f.jsonl")) == "f.jsonl: is empty"
    assert str(RowError("x", "is bad", line=2)) == "line 2 field 'x': is bad"
    assert str(RowError("unli", "must be a number")) == "field 'unli': must be a number"
    assert isinstance(RowError(None, "x"), ValueError)


def test_json_lines_name_the_place_of_non_finite_numbers_and_nul_characters():
    rows = read(
        json_lines, '{"a": 1}\n\n{"p": {"e": NaN}}\n{"q": [1, -Infinity]}\n{"r": 1e999}\n{"s": ["\\u0000"]}\n[1]\n', "f"
    )
    assert rows[0] == (1, {"a": 1})
    problems = [(line, error.field, error.message) for line, error in rows[1:]]
    assert problems == [
        (3, "(json)", "not valid JSON: 'p.e' is NaN, not a finite number"),
        (4, "(json)", "not valid JSON: 'q[1]' is -Infinity, not a finite number"),
        (5, "(json)", "not valid JSON: 'r' is Infinity, not a finite number"),
        (6, "s[0]", "contains a NUL character"),
        (7, "(json)", "each line must be a JSON object"),
    ]
    assert all(error.file == "f" and error.line == line for line, error in rows[1:])


def test_json_lines_refuse_huge_numbers_and_deep_nesting():
    rows = read(json_lines, '{"a": ' + "9" * 5000 + "}\n" + "[" * 5000 + "]" * 5000 + "\n")
    assert [(line, error.field) for line, error in rows] == [(1, "(json)"), (2, "(json)")]
    assert "4300" in rows[0][1].message and rows[1][1].message == "not valid JSON: nested too deeply"


def test_binary_input_is_utf8_with_the_byte_of_the_first_bad_character_named():
    rows = read(json_lines, b'\xef\xbb\xbf{"a": "\xc3\xa9"}\r\n{"b": 1}\n{"c": "\xe9"}\n{"d": 2}\n', "f.jsonl")
    assert rows[0] == (1, {"a": "é"}) and rows[1] == (2, {"b": 1})
    line, error = rows[2]
    assert len(rows) == 3 and line == 3
    assert str(error) == "f.jsonl:3 field '(file)': is not UTF-8 text (byte 32)"


def test_csv_rows_number_physical_lines_and_refuse_what_pandas_would_take():
    text = 'id,text\n1,"two\nlines"\n2,plain\n3,too,many\n4,"nul\x00"\n5,ok\n'
    rows = read(csv_rows, text, ("id",), "f.csv")
    assert rows[0] == (2, {"id": "1", "text": "two\nlines"})
    assert rows[1] == (4, {"id": "2", "text": "plain"})
    assert [(line, error.field, error.message) for line, error in rows[2:4]] == [
        (5, "(csv)", "row has more fields than the header"),
        (6, "text", "contains a NUL character"),
    ]
    assert rows[4] == (7, {"id": "5", "text": "ok"})
    ((line, error),) = read(csv_rows, "a,b\n1,x\ry\n", ("a",))
    assert line == 2 and error.field == "(csv)" and "new-line character" in error.message
    ((line, error),) = read(csv_rows, "a,b\n1,2\n", ("a", "c"))
    assert (line, error.field, error.message) == (1, "c", "header lacks the column(s) c")
    ((line, error),) = read(csv_rows, "", ("a",))
    assert error.message == "the file is empty; expected the column(s) a"
    rows = read(csv_rows, b"a,b\n1,\xe9\n2,3\n", ("a",), "f.csv")
    assert [str(error) for _, error in rows] == ["f.csv:2 field '(file)': is not UTF-8 text (byte 6)"]


@pytest.mark.django_db
def test_importers_report_non_utf8_files_by_byte(make_project, tmp_path):
    from dataset_io.services.importers import ImportFileError, import_file

    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"premise": "P", "hypothesis": "H"}\n{"premise": "\xff", "hypothesis": "H"}\n')
    with pytest.raises(ImportFileError) as error:
        import_file(make_project("nli_label"), path, "jsonl")
    assert error.value.errors == [(2, "(file)", "is not UTF-8 text (byte 49)")]
