"""One reader per file kind (JSON Lines, CSV) and the one error type they report.

Both readers take an open file, binary or text, and yield `(line, record)` for every record and
`(line, RowError)` for every bad one, so that a caller can either collect every error (the importers) or
stop at the first (the evaluation readers). Lines are physical lines, split on "\\n" only (a lone "\\r" is
not a line break), numbered from 1. A binary file is decoded here as UTF-8, a leading byte-order mark
dropped; bytes that are not UTF-8 end the file with an error naming their byte offset.

What the readers refuse, because a database or a metric would take it silently: NaN, Infinity and numbers
too large for a float (JSON), integers of more than 4300 digits, nesting deeper than Python's recursion
limit, NUL characters (PostgreSQL stores none in text or jsonb), CSV fields past the csv module's size
limit, a lone carriage return inside an unquoted CSV field, and CSV rows with more fields than the header.
"""
from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Iterator

BYTE_ORDER_MARK = "\ufeff"
# Pseudo-fields for problems with a line or a file as a whole rather than with one of its fields.
JSON_LINE, CSV_LINE, FILE = "(json)", "(csv)", "(file)"


class RowError(ValueError):
    """A problem at one place of an input file, rendered as `FILE:LINE field 'FIELD': message`.

    file: the name to show (a path or an upload's name); line: 1-based physical line; field: a column, a
    JSON path such as `atoms[1].gold`, or one of the pseudo-fields "(json)", "(csv)", "(file)". Any of the
    three may be None where it does not apply (an empty file has no line).
    """

    def __init__(self, message: str, file=None, line: int | None = None, field: str | None = None):
        super().__init__(message)
        self.message, self.file, self.line, self.field = message, file, line, field

    def __str__(self) -> str:
        place = "" if self.file is None else str(self.file)
        if self.line is not None:
            place += f":{self.line}" if place else f"line {self.line}"
        if self.field is not None:
            place += f" field '{self.field}'"
        return f"{place.strip()}: {self.message}" if place else self.message


def _not_utf8(error: UnicodeDecodeError, offset: int, file, line: int) -> RowError:
    return RowError(f"is not UTF-8 text (byte {offset + error.start})", file, line, FILE)


def decode_utf8(data: bytes, file=None) -> str:
    """`data` as text (a leading byte-order mark dropped), or a RowError naming the first bad byte."""
    try:
        return data.decode("utf-8").removeprefix(BYTE_ORDER_MARK)
    except UnicodeDecodeError as error:
        raise _not_utf8(error, 0, file, data.count(b"\n", 0, error.start) + 1) from None


def _lines(stream: Iterable[str | bytes], file) -> Iterator[tuple[int, str | RowError]]:
    """(line number, text) per line; a line that is not UTF-8 gives (number, RowError) and ends the file."""
    offset = 0
    for number, line in enumerate(stream, start=1):
        if isinstance(line, bytes):
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as error:
                yield number, _not_utf8(error, offset, file, number)
                return
            offset += len(line)
            line = text.removeprefix(BYTE_ORDER_MARK) if number == 1 else text
        yield number, line


def _json_problem(record: dict) -> tuple[str, str] | None:
    """(field, message) for the first NUL character (field: its JSON path) or non-finite number (field
    "(json)": NaN and Infinity are not JSON; the message gives the path) in the record, else None."""
    pending: list[tuple[str, object]] = [("", record)]
    while pending:  # a loop, not recursion: the record may nest as deep as the JSON reader allows
        path, value = pending.pop()
        if isinstance(value, str) and "\x00" in value:
            return path, "contains a NUL character"
        if isinstance(value, float) and not math.isfinite(value):
            return JSON_LINE, f"not valid JSON: '{path}' is {json.dumps(value)}, not a finite number"
        if isinstance(value, dict):
            children = []
            for key, inner in value.items():
                name = key.replace("\x00", "\\0") or '""'
                where = f"{path}.{name}" if path else name
                if "\x00" in key:
                    return where, "contains a NUL character"
                children.append((where, inner))
            pending.extend(reversed(children))  # document order
        elif isinstance(value, list):
            pending.extend(reversed([(f"{path}[{index}]", inner) for index, inner in enumerate(value)]))
    return None


def json_lines(stream: Iterable[str | bytes], file=None) -> Iterator[tuple[int, dict | RowError]]:
    """(line, object) for every non-blank line holding a JSON object; (line, RowError) for any other."""
    for number, line in _lines(stream, file):
        if isinstance(line, RowError):
            yield number, line
            return
        if not line.strip():
            continue
        try:
            # NaN and Infinity parse as floats here so that _json_problem can name the path holding them.
            record = json.loads(line, parse_constant=float)
        except json.JSONDecodeError as error:
            yield number, RowError(f"not valid JSON: {error.msg} at column {error.colno}", file, number, JSON_LINE)
            continue
        except (ValueError, RecursionError) as error:  # a number of over 4300 digits, deep nesting
            reason = "nested too deeply" if isinstance(error, RecursionError) else str(error).split(";")[0]
            yield number, RowError(f"not valid JSON: {reason}", file, number, JSON_LINE)
            continue
        if not isinstance(record, dict):
            yield number, RowError("each line must be a JSON object", file, number, JSON_LINE)
            continue
        problem = _json_problem(record)
        if problem is not None:
            yield number, RowError(problem[1], file, number, problem[0])
            continue
        yield number, record


def csv_rows(
    stream: Iterable[str | bytes], required: Iterable[str] = (), file=None
) -> Iterator[tuple[int, dict | RowError]]:
    """(line, {column: text}) for every CSV record, numbered by the physical line it starts on; (line,
    RowError) for a bad one. A header that lacks a `required` column is an error at line 1 and ends the file.
    """
    # csv.DictReader rather than pandas: it reports the physical line of each record, and it streams.
    decode_error: list[RowError] = []

    def texts():
        for _, line in _lines(stream, file):
            if isinstance(line, RowError):
                decode_error.append(line)
                return
            yield line

    reader = csv.DictReader(texts())
    try:
        header = reader.fieldnames or []
    except csv.Error as error:  # a lone carriage return, a field past the size limit
        yield 1, RowError(f"cannot be read as CSV: {str(error).split(' - ')[0]}", file, 1, CSV_LINE)
        return
    if decode_error:
        yield decode_error[0].line, decode_error[0]
        return
    missing = [name for name in required if name not in header]
    if missing:
        reason = "the file is empty; expected" if not header else "header lacks"
        yield 1, RowError(f"{reason} the column(s) {', '.join(missing)}", file, 1, missing[0])
        return
    start = 2
    try:
        for record in reader:
            if decode_error:
                break
            nul = next((name for name, value in record.items() if "\x00" in (name or "") + str(value or "")), None)
            if None in record:
                yield start, RowError("row has more fields than the header", file, start, CSV_LINE)
            elif nul is not None:
                yield start, RowError("contains a NUL character", file, start, nul.replace("\x00", "\\0") or '""')
            else:
                yield start, record
            start = reader.line_num + 1
    except csv.Error as error:
        yield start, RowError(f"cannot be read as CSV: {str(error).split(' - ')[0]}", file, start, CSV_LINE)
        return
    if decode_error:
        yield decode_error[0].line, decode_error[0]

