"""One reader per file kind (JSON Lines, CSV) and the one error type they report.

Both readers take an open file, binary or text, and yield `(line, record)` for every record and
`(line, RowError)` for every bad one, so that a caller can either collect every error (the importers) or
stop at the first (the evaluation readers). Lines are physical lines, split on "\\n" only (a lone "\\r" is
not a line break), numbered from 1. A binary file is decoded here as UTF-8, a leading byte-order mark
dropped; bytes that are not UTF-8 end the file with an error naming their byte offset.

What the readers refuse, because a database or a metric would take it silently: NaN, Infinity and numbers
too large for a float (JSON), integers of more than 4300 digits, nesting deeper than Python's recursion
limit, NUL characters (PostgreSQL stores none in text or jsonb), CSV fields past the csv module's size
limit, a lone carriage return inside an unquoted CSV field, and CSV rows with more or fewer fields than the
header.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterable, Iterator

BYTE_ORDER_MARK = "\ufeff"


class _NotFinite(Exception):
    """A JSON number that is not a finite float (NaN, Infinity, or a literal too large for a float)."""


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite
    return value


def _not_finite(text: str) -> float:
    raise _NotFinite


# One decoder for every line (json.loads builds a new one per call when given a hook). It stops at a number
# that is not finite; the line is then decoded again with such numbers as floats, so that _json_problem can
# name the path holding them: most lines hold none and need no walk through their record.
_DECODER = json.JSONDecoder(parse_float=_finite_float, parse_constant=_not_finite)
_LENIENT_DECODER = json.JSONDecoder(parse_constant=float)
# Pseudo-fields for problems with a line or a file as a whole rather than with one of its fields.
JSON_LINE, CSV_LINE, FILE = "(json)", "(csv)", "(file)"


class RowError(ValueError):
    """A problem at one place of an input file, rendered as `FILE:LINE field 'FIELD': message`.

    field: a column, a JSON path such as `atoms[1].gold`, or one of the pseudo-fields "(json)", "(csv)",
    "(file)" for a line or file as a whole; file: the name to show (a path or an upload's name); line: the
    1-based physical line. Field first, as `RowError("unli", "must be a number")` reads; file, line and
    field may each be None where they do not apply (an empty file has no line).
    """

    def __init__(self, field: str | None, message: str, file=None, line: int | None = None):
        super().__init__(message)
        self.field, self.message, self.file, self.line = field, message, file, line

    def __str__(self) -> str:
        place = "" if self.file is None else str(self.file)
        if self.line is not None:
            place += f":{self.line}" if place else f"line {self.line}"
        if self.field is not None:
            place += f" field '{self.field}'"
        return f"{place.strip()}: {self.message}" if place else self.message


def _lines(stream: Iterable[str | bytes], file) -> Iterator[tuple[int, str | RowError]]:
    """(line number, text) per line; a line that is not UTF-8 gives (number, RowError) and ends the file."""
    offset = 0
    for number, line in enumerate(stream, start=1):
        if isinstance(line, bytes):
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as error:
                message = f"is not UTF-8 text (byte {offset + error.start})"
                yield number, RowError(FILE, message, file=file, line=number)
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


def json_lines(
    stream: Iterable[str | bytes], file=None, max_line_chars: int | None = None
) -> Iterator[tuple[int, dict | RowError]]:
    """(line, object) for every non-blank line holding a JSON object; (line, RowError) for any other. A line
    longer than `max_line_chars` is refused without being decoded."""
    for number, line in _lines(stream, file):
        if isinstance(line, RowError):
            yield number, line
            return
        if max_line_chars is not None and len(line) > max_line_chars:
            message = f"the record is {len(line):,} characters long, over the limit of {max_line_chars:,} for one line"
            yield number, RowError(JSON_LINE, message, file=file, line=number)
            continue
        if not line.strip():
            continue
        try:
            try:
                record, walk = _DECODER.decode(line), "\\u0000" in line  # the only way JSON writes a NUL
            except _NotFinite:
                record, walk = _LENIENT_DECODER.decode(line), True
        except json.JSONDecodeError as error:
            yield (
                number,
                RowError(JSON_LINE, f"not valid JSON: {error.msg} at column {error.colno}", file=file, line=number),
            )
            continue
        except (ValueError, RecursionError) as error:  # a number of over 4300 digits, deep nesting
            reason = "nested too deeply" if isinstance(error, RecursionError) else str(error).split(";")[0]
            yield number, RowError(JSON_LINE, f"not valid JSON: {reason}", file=file, line=number)
            continue
        if not isinstance(record, dict):
            yield number, RowError(JSON_LINE, "each line must be a JSON object", file=file, line=number)
            continue
        problem = _json_problem(record) if walk else None
        if problem is not None:
            yield number, RowError(problem[0], problem[1], file=file, line=number)
            continue
        yield number, record


def csv_rows(
    stream: Iterable[str | bytes],
    required: Iterable[str] = (),
    file=None,
    may_leave_off: Callable[[str], bool] | None = None,
) -> Iterator[tuple[int | None, dict | RowError]]:
    """(line, {column: text}) for every CSV record, numbered by the physical line it starts on; (line,
    RowError) for a bad one. A header that lacks a `required` column is an error at line 1 and ends the file.
    A row may leave off, at its end, the columns for which `may_leave_off(name)` is true (read as empty):
    LiveNLI's header ends with a stray column that none of its rows fills.
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
        yield 1, RowError(CSV_LINE, f"cannot be read as CSV: {str(error).split(' - ')[0]}", file=file, line=1)
        return
    if decode_error:
        yield decode_error[0].line, decode_error[0]
        return
    missing = [name for name in required if name not in header]
    if missing:
        reason = "the file is empty; expected" if not header else "header lacks"
        yield 1, RowError(missing[0], f"{reason} the column(s) {', '.join(missing)}", file=file, line=1)
        return
    start = 2
    try:
        for record in reader:
            if decode_error:
                break
            left_off = [name for name, value in record.items() if value is None]
            if left_off and may_leave_off and all(may_leave_off(name) for name in left_off):
                record = {**record, **dict.fromkeys(left_off, "")}
            nul = next((name for name, value in record.items() if "\x00" in (name or "") + str(value or "")), None)
            if None in record:
                yield start, RowError(CSV_LINE, "row has more fields than the header", file=file, line=start)
            elif None in record.values():  # the csv module fills the missing fields of a short row with None
                given = sum(value is not None for value in record.values())
                yield (
                    start,
                    RowError(
                        CSV_LINE,
                        f"row has fewer fields than the header ({given} of {len(header)})",
                        file=file,
                        line=start,
                    ),
                )
            elif nul is not None:
                yield (
                    start,
                    RowError(nul.replace("\x00", "\\0") or '""', "contains a NUL character", file=file, line=start),
                )
            else:
                yield start, record
            start = reader.line_num + 1
    except csv.Error as error:
        yield start, RowError(CSV_LINE, f"cannot be read as CSV: {str(error).split(' - ')[0]}", file=file, line=start)
        return
    if decode_error:
        yield decode_error[0].line, decode_error[0]
