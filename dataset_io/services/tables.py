"""The bundle's data files read back as tables: their rows counted, their columns typed, and a Parquet copy
written with pyarrow batch by batch (memory holds one batch, whatever the file's size).

A column's type comes from the values the file holds, read twice: once to find each column's type, once to
write. A CSV cell is text unless every cell of its column reads back exactly as written as a whole number, a
number or true/false (so "007" or "0.50" stay text: the copy loses nothing). A JSON Lines field takes the type
pyarrow gives its values (whole numbers, numbers, text, true/false); a list or an object, or a field whose
values have no one type (the `any` fields: a label here, an object there), is kept as JSON text, each value as
`json.dumps` writes it.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import IO

import pyarrow as pa
import pyarrow.parquet as pq

# Parquet copies are written by default for a data file above this size: above it a reader that guesses
# types from text, as `datasets` does for CSV and JSON Lines block by block, may guess differently for two
# blocks of one file; Parquet carries one schema.
PARQUET_ABOVE_BYTES = 10 * 2**20
BATCH_ROWS = 10_000
# A batch also ends at this much text: a JSON Lines record of a big study can be long, and as Python objects a
# nested record takes about ten times its text (2 MiB of records: about 25 MB while the batch is converted).
BATCH_BYTES = 2 * 2**20
JSON_TEXT = "json"  # a column kept as JSON text

Opener = Callable[[], AbstractContextManager[IO[bytes]]]


@dataclass
class TableShape:
    """What a file's rows hold: every column (in the order first met) with its Arrow type or JSON_TEXT."""

    rows: int = 0
    columns: dict[str, pa.DataType | str] = field(default_factory=dict)

    def schema(self) -> pa.Schema:
        return pa.schema([(name, pa.string() if kind == JSON_TEXT else kind) for name, kind in self.columns.items()])

    @property
    def json_columns(self) -> list[str]:
        return [name for name, kind in self.columns.items() if kind == JSON_TEXT]


def wants_parquet(asked: bool | None, size: int, mixed: bool) -> bool:
    """Whether a data file gets its Parquet copy: as asked (True, False), else (None) when it is above
    PARQUET_ABOVE_BYTES or when the bundle's files mix CSV and JSON Lines (`datasets` reads all the configs of
    a repository with one builder, so every format is a config only when all of them are Parquet)."""
    return asked if asked is not None else (mixed or size > PARQUET_ABOVE_BYTES)


def _sized_rows(open_stream: Opener, extension: str) -> Iterator[tuple[dict, int]]:
    """Every row of a data file (a CSV row as {column: text}, a JSON Lines record as its object) with the
    characters it took in the file (a CSV row: its cells)."""
    with open_stream() as binary:
        text = io.TextIOWrapper(binary, encoding="utf-8", newline="")
        if extension == "csv":
            for row in csv.DictReader(text, restval=""):
                yield row, sum(len(value) for value in row.values() if value)
        else:
            for line in text:
                if line.strip():
                    yield json.loads(line), len(line)


def batches(open_stream: Opener, extension: str) -> Iterator[list[dict]]:
    batch: list[dict] = []
    size = 0
    for row, characters in _sized_rows(open_stream, extension):
        batch.append(row)
        size += characters
        if len(batch) >= BATCH_ROWS or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def shape(open_stream: Opener, extension: str) -> TableShape:
    """The file's rows and the type of each column (the first of the two reads)."""
    found = TableShape()
    csv_kinds: dict[str, set[str]] = {}
    for batch in batches(open_stream, extension):
        found.rows += len(batch)
        names = list(dict.fromkeys(name for row in batch for name in row))
        for name in names:
            values = [row.get(name) for row in batch]
            if extension == "csv":
                csv_kinds.setdefault(name, {"int", "float", "bool", "empty"}).intersection_update(_cell_kinds(values))
                found.columns.setdefault(name, pa.string())
            else:
                found.columns[name] = _merged(found.columns.get(name), values)
    for name, kind in found.columns.items():
        if kind == pa.null():  # never a value: text, so that every reader has a type for it
            found.columns[name] = pa.string()
    for name, kinds in csv_kinds.items():
        if "empty" not in kinds:  # a column with a value in some cell
            found.columns[name] = next(
                (kind for word, kind in CSV_TYPES if word in kinds),
                pa.string(),
            )
    return found


CSV_TYPES = (("int", pa.int64()), ("float", pa.float64()), ("bool", pa.bool_()))


def _cell_kinds(values) -> set[str]:
    """What every non-empty cell of these reads back as exactly ("empty": there is none)."""
    kinds = {"int", "float", "bool", "empty"}
    for value in values:
        if not value:
            continue
        kinds.discard("empty")
        if "int" in kinds and not _exact(int, value):
            kinds.discard("int")
        if "float" in kinds and not _exact(float, value):
            kinds.discard("float")
        if "bool" in kinds and value not in ("true", "false"):
            kinds.discard("bool")
        if kinds == set():
            break
    return kinds


def _exact(kind, value: str) -> bool:
    try:
        return str(kind(value)) == value
    except ValueError:
        return False


def _merged(known, values) -> pa.DataType | str:
    """A JSON column's type with these values added: pyarrow's type for them, promoted with the type the
    earlier batches gave (a whole number and a number make a number, null takes any type); JSON_TEXT when
    no one type holds them, or when they are lists or objects (a flat table: Croissant's readers and
    spreadsheets take it as it is)."""
    if known == JSON_TEXT:
        return JSON_TEXT
    try:
        kind = pa.array(values).type
        if known is not None:
            kind = (
                pa.unify_schemas([pa.schema([("c", known)]), pa.schema([("c", kind)])], promote_options="permissive")
                .field("c")
                .type
            )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return JSON_TEXT
    return JSON_TEXT if pa.types.is_nested(kind) else kind


def write_parquet(open_stream: Opener, extension: str, sink, found: TableShape | None = None) -> TableShape:
    """The file's Parquet copy written to `sink` (a path or binary file), one row group per batch; returns
    the shape it was written with (found by reading the file first, unless given)."""
    found = found or shape(open_stream, extension)
    schema = found.schema()
    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        for batch in batches(open_stream, extension):
            arrays = [
                pa.array([_value(row.get(name), kind, extension) for row in batch], type=schema.field(name).type)
                for name, kind in found.columns.items()
            ]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
    # pyarrow's allocator keeps freed memory for reuse; give it back, or the steps after the copy (the data
    # statement's agreement) start that much higher.
    pa.default_memory_pool().release_unused()
    return found


def _value(value, kind, extension: str):
    if kind == JSON_TEXT:
        return None if value is None else json.dumps(value, ensure_ascii=False)
    if extension != "csv" or kind == pa.string():
        return value
    if value in ("", None):
        return None
    if kind == pa.bool_():
        return value == "true"
    return int(value) if kind == pa.int64() else float(value)


def count_rows(open_stream: Opener, extension: str) -> int:
    """The file's rows (a CSV row may span lines where a cell holds a line break)."""
    with open_stream() as binary:
        text = io.TextIOWrapper(binary, encoding="utf-8", newline="")
        if extension == "csv":
            return max(sum(1 for _ in csv.reader(text)) - 1, 0)  # less the header
        return sum(1 for line in text if line.strip())
