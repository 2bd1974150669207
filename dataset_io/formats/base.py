"""What every dataset format answers, and the rows its reader gives the importer.

A format is a class: its name, file extension and content type, which task types it fits (asked of the task
type's flags, never of its name), a reader that turns one record of a file into an `ExampleRow` (or an
`AtomRow`, or a `Skipped`), a writer that streams a study as text chunks, a validator that checks any file
against the format's published shape, and the documentation of every field it writes. The registry in
`dataset_io.formats` lists them; importers, exporters, the validator command and docs/formats.md ask it.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, ClassVar

from django.conf import settings

from common.readers import JSON_LINE, RowError, csv_rows, json_lines
from common.vocabulary import NLI, LabelError, to_label

# The key under which JSON Lines exports put what this app adds to a format's own fields, so that a reader
# of the published format finds exactly its fields and a re-import finds ours in one place.
STUDIO_KEY = "nli_studio"
POOLS = ("data", "gold")  # what an export's record may say it is (qualification items are never exported)
# Limits of every import (docs/formats.md); a file breaking one imports nothing, the error naming the line and
# the field. Per field: a text (premise, hypothesis, update, atom, any text a format keeps) of at most
# MAX_TEXT_CHARS characters (below the CSV reader's own 131,072 per field). Per row, as a whole, since a row
# within the per-field limit could still carry any number of extra columns (one item held 50 MB): at most
# MAX_ROW_COLUMNS columns (a JSON record's top-level fields) and MAX_ROW_BYTES bytes of UTF-8 (a CSV record's
# cells; a JSON Lines record's line with its line break, never decoded when over the limit). The row limits are
# the defaults of the settings NLI_MAX_ROW_COLUMNS and NLI_MAX_ROW_BYTES (row_limits).
MAX_TEXT_CHARS = 100_000
MAX_ROW_COLUMNS = 200
MAX_ROW_BYTES = 2**20


@dataclass
class ExampleRow:
    line: int
    key: str
    premise: str
    hypothesis: str
    source_id: str = ""
    update: str = ""
    update_type: str = ""
    source_label: str = ""
    source_probability: str = ""
    source_data: dict = field(default_factory=dict)
    source_format: str = ""  # set by the importer: the format the row was read in
    imported_labels: list[str] = field(default_factory=list)
    label_set: tuple[str, ...] | None = None  # the labels this row's votes use
    # The votes come in an order worth keeping (SNLI's annotator_labels: the writer's label first);
    # unordered votes (ChaosNLI's label_counter) are stored one row per label with its count.
    ordered_votes: bool = False
    group: str = ""  # coherence group: items of one group never share a page or a worker at once
    # The pool the record says it belongs to ("" : the import's purpose decides) and a gold item's reference.
    pool: str = ""
    gold: Any = None
    # Atoms the record carries (the atoms format, or a per-atom study's own JSON Lines export).
    atoms: list[dict] = field(default_factory=list)


@dataclass
class AtomRow:
    line: int
    example_ref: str  # an example id (source id or key) ...
    hypothesis: str  # ... or a hypothesis text shared by examples
    atoms: list[dict]
    # The example itself, where the record carries its texts: made when the study does not have it yet.
    example: ExampleRow | None = None


@dataclass
class Skipped:
    line: int
    reason: str


@dataclass
class ReadContext:
    """What a reader needs of the study and of the import beyond the file.

    labels: the labels a row's label may be (TaskType.example_labels); None where the study keeps no labels.
    label_map: the import's label mapping, {value as the file writes it: label}, applied before anything else.
    mapping: generic formats only, {field: column}.
    """

    labels: tuple[str, ...] | None = None
    label_map: dict[str, str] = field(default_factory=dict)
    mapping: dict[str, str] = field(default_factory=dict)
    hypothesis_required: bool = True

    def label(self, value, field_name: str, labels=None, numbering: dict | None = None) -> str:
        """The canonical label `value` spells, through the import's mapping, then the format's own numbering
        (U-SNLI's 0/1/2), then the vocabulary; RowError naming `field_name` otherwise."""
        allowed = labels if labels is not None else self.labels
        if allowed is None:
            return str(value).strip()
        try:
            return to_label(value, allowed, numbering={**(numbering or {}), **self.label_map})
        except LabelError as error:
            hint = "" if self.label_map else " (or give the import a label mapping, e.g. 0=contradiction)"
            raise RowError(field_name, f"{error}{hint}") from None


@dataclass(frozen=True)
class ExportOptions:
    """include_unanswered: also write items nobody answered (flagged), which are left out by default.
    include_gold: also write the hidden gold checks (flagged with their pool and reference).
    study_gold: write the study's own final label in the format's label fields (adjudicated, else collected,
    else imported): what a model is evaluated against when a study is its gold; published files keep the
    imported labels there.
    free_text: what becomes of the text workers typed (reasons, explanations, written sentences): "keep" it,
    "omit" it (emptied), or "scrub" it (e-mail addresses and phone numbers replaced; records.scrubbed)."""

    include_unanswered: bool = False
    include_gold: bool = False
    study_gold: bool = False
    free_text: str = "keep"


@dataclass(frozen=True)
class FieldDoc:
    """One field (or column) a format writes: its name, type, meaning, and whether it is this app's addition
    to the published shape."""

    name: str
    type: str
    meaning: str
    added: bool = False


class Format:
    name: ClassVar[str]
    title: ClassVar[str]
    extension: ClassVar[str]  # "csv" or "jsonl"
    summary: ClassVar[str]  # one line: what a record is
    fields: ClassVar[tuple[FieldDoc, ...]] = ()
    # A research file that round-trips: importing its export gives the same examples, items, votes and gold.
    # The spreadsheet CSV is not one (it neutralises formulas).
    round_trips: ClassVar[bool] = True

    @property
    def reads(self) -> bool:
        """Whether files of this format are imported at all (an export-only format has no reader)."""
        return type(self).parse is not Format.parse

    @property
    def content_type(self) -> str:
        return "text/csv" if self.extension == "csv" else "application/x-ndjson"

    def importable(self, task, options: dict) -> bool:
        """Whether a study of this task type and settings can import files of this format."""
        return False

    def exportable(self, task, options: dict) -> bool:
        """Whether a study of this task type and settings exports in this format."""
        return False

    # ------------------------------------------------------------------ reading

    def records(self, stream: IO, required: tuple[str, ...] = ()) -> Iterator[tuple[int, dict | RowError]]:
        """(line, record) for every record of a file of this format: its rows, unless the format reads a
        record from several (LiveNLI)."""
        return self.rows(stream, required)

    def rows(self, stream: IO, required: tuple[str, ...] = ()) -> Iterator[tuple[int, dict | RowError]]:
        """(line, row) for every row of a file of this format as the shared JSONL and CSV readers give it, and
        (line, RowError) for a bad one: a row over the row limits (row_limits) is one."""
        most_columns, most_bytes = row_limits()
        lines = None if self.extension == "csv" else _LineSizes(stream, most_bytes)
        rows = csv_rows(stream, required, may_leave_off=self.may_leave_off) if lines is None else json_lines(lines)
        for line, row in rows:
            error = None
            if lines is not None and lines.last > most_bytes:  # the reader yields a line's record before reading on
                error = RowError(JSON_LINE, _too_large(lines.last, most_bytes))
            elif isinstance(row, dict):
                size = sum(map(_utf8_bytes, row.values())) if lines is None else lines.last
                error = _over_row_limits(row, size, most_columns, most_bytes)
            if error is not None:
                error.line = line
                row = error
            yield line, row

    def may_leave_off(self, column: str) -> bool:
        """CSV formats: whether a row may leave off this header column at its end (read as empty)."""
        return False

    def required_columns(self, context: ReadContext) -> tuple[str, ...]:
        """CSV formats: the header's required columns."""
        return ()

    def parse(self, line: int, record: dict, context: ReadContext):
        """One record as an ExampleRow, AtomRow or Skipped; raises RowError naming the field at fault."""
        raise NotImplementedError(f"{self.name} files are not imported")

    # ------------------------------------------------------------------ writing

    def write(self, project, options: ExportOptions) -> Iterator[str]:
        """The study as text chunks, streamed from the database in batches."""
        raise NotImplementedError(f"{self.name} is not an export format")

    def file_name(self, project) -> str:
        return f"{project.slug}-{self.name}.{self.extension}"

    # ------------------------------------------------------------------ validating

    def validate(self, stream: IO) -> Iterator[RowError]:
        """Every place where a file departs from the format's published shape (field names, types, value
        ranges, label orders, per-row consistency), each a RowError with its line and field."""
        raise NotImplementedError(f"{self.name} files are not validated")

    def count(self, stream: IO) -> int:
        """The records of a file of this format (bad ones included)."""
        return sum(1 for _ in self.records(stream))


# ---------------------------------------------------------------- helpers the formats share


def row_limits() -> tuple[int, int]:
    """The most columns and UTF-8 bytes a row of an imported file may have: the settings NLI_MAX_ROW_COLUMNS and
    NLI_MAX_ROW_BYTES, read when a file is read, else MAX_ROW_COLUMNS and MAX_ROW_BYTES."""
    return (
        getattr(settings, "NLI_MAX_ROW_COLUMNS", MAX_ROW_COLUMNS),
        getattr(settings, "NLI_MAX_ROW_BYTES", MAX_ROW_BYTES),
    )


def _utf8_bytes(value) -> int:
    if isinstance(value, bytes):
        return len(value)
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)
    return len(value) if value.isascii() else len(value.encode())


class _LineSizes:
    """A stream's lines for the JSON Lines reader, keeping the size in bytes of the last one read. A line over
    `most` bytes is handed on as an empty record, never decoded: decoding it would spend the memory and time
    the limit bounds."""

    def __init__(self, stream: IO, most: int):
        self.stream, self.most, self.last = stream, most, 0

    def __iter__(self):
        for line in self.stream:
            self.last = _utf8_bytes(line)
            if self.last > self.most:
                line = b"{}\n" if isinstance(line, bytes) else "{}\n"
            yield line


def _too_large(size: int, most: int) -> str:
    return f"the row is {size:,} bytes long, over the limit of {most:,} for a row"


def _over_row_limits(row: dict, size: int, most_columns: int, most_bytes: int) -> RowError | None:
    """The row's error when it has more columns or bytes than the limits, naming the first column past the
    limit, or its largest."""
    if len(row) > most_columns:
        name = list(row)[most_columns]
        message = f"the row has {len(row):,} columns, over the limit of {most_columns:,} for a row"
        return RowError(name or '""', f"{message} (this is column {most_columns + 1:,})")
    if size > most_bytes:
        name = max(row, key=lambda column: _utf8_bytes(row[column]))
        return RowError(name or '""', f"{_too_large(size, most_bytes)} ({_utf8_bytes(row[name]):,} in this field)")
    return None


def text(row: dict, column: str, required: bool = True, field_name: str | None = None) -> str:
    """The text in row[column]; errors name `field_name` (default: the column)."""
    value = row.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise RowError(field_name or column, "is missing or empty")
        return ""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise RowError(field_name or column, f"must be text, got {type(value).__name__}")
    value = str(value)
    if len(value) > MAX_TEXT_CHARS:
        raise RowError(field_name or column, too_long(value))
    return value


def too_long(value: str) -> str:
    return f"is {len(value):,} characters long, over the limit of {MAX_TEXT_CHARS:,} for a text"


def oversized_text(row: ExampleRow | AtomRow) -> RowError | None:
    """The first text of a parsed row over MAX_TEXT_CHARS, named by the row's field (the readers that take
    their texts through `text` have already named the file's own column)."""
    texts: list[tuple[str, Any]] = []
    if isinstance(row, ExampleRow):
        texts += [("premise", row.premise), ("hypothesis", row.hypothesis), ("update", row.update)]
    else:
        texts += [("hypothesis", row.hypothesis), ("id", row.example_ref)]
    texts += [(f"atoms[{index}].text", atom.get("text")) for index, atom in enumerate(row.atoms)]
    for name, value in texts:
        if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
            return RowError(name, too_long(value))
    if isinstance(row, AtomRow) and row.example is not None:
        return oversized_text(row.example)
    return None


# A row without an id is known by a hash of its texts; the importer numbers repeats (sha:...:2).
CONTENT_KEY = re.compile(r"sha:[0-9a-f]{40}")


def content_key(*parts: str) -> str:
    """The key of a row without an id: a hash of its texts (the importer numbers repeats)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:40]
    return f"sha:{digest}"


def probability_text(value, field_name: str) -> str:
    """A probability from 0 to 1, kept as the file wrote it (exports give it back unchanged)."""
    shown = str(value).strip()
    try:
        number = float(shown)
    except (TypeError, ValueError):
        raise RowError(field_name, f"must be a number, got {shown[:20]!r}") from None
    if isinstance(value, bool) or not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise RowError(field_name, f"must be a probability from 0 to 1, got {shown[:20]}")
    return shown


def studio_fields(record: dict) -> dict:
    """This app's own part of a JSON Lines record (its STUDIO_KEY object), checked: {} when absent."""
    extra = record.get(STUDIO_KEY)
    if extra is None:
        return {}
    if not isinstance(extra, dict):
        raise RowError(STUDIO_KEY, "must be an object (this app's fields of an exported record)")
    pool = extra.get("pool", "data")
    if pool not in POOLS:
        raise RowError(f"{STUDIO_KEY}.pool", f"must be one of {', '.join(POOLS)}, got {str(pool)[:20]!r}")
    return extra


def extra_columns(project, reserved: tuple[str, ...], source_format: str) -> list[str]:
    """The columns the study's rows imported in `source_format` carried beyond the format's own (kept in
    source_data), in sorted order: a CSV export needs its header before its first row, so this reads every such
    example's keys once."""
    from annotation.models import Example

    names: set[str] = set()
    examples = Example.objects.filter(project=project, source_format=source_format).exclude(source_data={})
    for data in examples.values_list("source_data", flat=True).iterator(chunk_size=5000):
        names.update(data)
    return sorted(names - set(reserved))


def csv_line(values) -> str:
    buffer = io.StringIO()
    # The csv module quotes only around the line terminator ("\n"): a bare "\r" in a text needs quotes too.
    carriage_return = any(isinstance(value, str) and "\r" in value for value in values)
    csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL if carriage_return else csv.QUOTE_MINIMAL).writerow(
        values
    )
    return buffer.getvalue()


def json_line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def csv_cell(value) -> str:
    """A value as a CSV cell: None empty, booleans true/false, numbers by repr, structures as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def schema_errors(schema: dict, record: dict) -> Iterator[RowError]:
    """Where `record` departs from a JSON Schema: one RowError per problem, its field a JSON path
    (label_dist[2], example.premise); a missing property is named itself."""
    for error in _validator(json.dumps(schema, sort_keys=True)).iter_errors(record):
        path = ""
        for part in error.instance_path:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        if type(error.kind).__name__ == "Required":
            yield RowError(f"{path}.{error.kind.property}" if path else error.kind.property, "is missing")
        else:
            yield RowError(path or "(record)", error.message)


@functools.cache
def _validator(schema_text: str):
    """A schema's validator, built once. jsonschema-rs (Rust): a record in about a microsecond, where the
    pure-Python jsonschema took sixty, which made validating a large study's per-annotation file take longer
    than writing it. Imported here: only validation needs it, and web processes never validate."""
    import jsonschema_rs

    return jsonschema_rs.validator_for(json.loads(schema_text))


def mnli_pairs(task, options: dict) -> bool:
    """A study of premise-hypothesis pairs labelled entailment / neutral / contradiction, one item each (no
    updates, atoms or probabilities): what the MNLI-based variation releases (VariErr, LiveNLI, the TACL 2022
    taxonomy) describe."""
    return (
        not task.per_atom
        and not task.uses_updates
        and not task.probability_answers
        and task.source_fields(options) is None
        and tuple(task.example_labels(options)) == NLI.labels
    )


def checked_records(records, check: Callable[[int, dict], Iterator[RowError]]) -> Iterator[RowError]:
    """Reader errors as they are, then `check(line, record)` for every record that could be read."""
    for line, record in records:
        if isinstance(record, RowError):
            record.line = line
            yield record
            continue
        for error in check(line, record):
            error.line = line
            yield error
