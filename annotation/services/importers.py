"""Dataset importers: read a file into example rows, validate every row, then write all or nothing.

Formats: usnli (CSV id,pre,hyp,nli,unli), chaosnli (JSONL, 100 labels per item), dnli (delta-NLI JSONL),
snli (original SNLI JSONL or premise/hypothesis/label JSONL), atoms (JSONL of atoms for existing
examples), jsonl / csv (any columns, with a mapping onto premise / hypothesis / id / label / update).
"""
from __future__ import annotations

import hashlib
import json
import math
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import IO

import numpy
from django.conf import settings
from django.db import connection, transaction

from annotation.models import Annotation, Atom, Example, Item, Project
from annotation.services.quality import gold_reference
from common.readers import RowError, csv_rows, json_lines
from common.vocabulary import ALPHA_NLI, NLI, NO_GOLD, USNLI_NUMBERING, LabelError, to_label

FORMATS = ("usnli", "chaosnli", "dnli", "snli", "atoms", "jsonl", "csv")
# What imported rows become: data to collect, hidden gold checks, or the project's qualification test.
PURPOSES = ("data", "gold", "qualification")
MAX_ERRORS_REPORTED = 50
PROGRESS_ROWS = 1000  # rows between two progress reports of a long import
GENERIC_FIELDS = ("id", "premise", "hypothesis", "update", "label", "group")
USNLI_COLUMNS = ("id", "pre", "hyp", "nli", "unli")


class ImportFileError(ValueError):
    """The file has bad rows; nothing was imported. `errors` lists (line, field, message)."""

    def __init__(self, errors: list[tuple[int, str, str]]):
        self.errors = errors
        lines = [f"line {line}, field {name!r}: {message}" for line, name, message in errors[:MAX_ERRORS_REPORTED]]
        more = len(errors) - MAX_ERRORS_REPORTED
        if more > 0:
            lines.append(f"... and {more} more")
        super().__init__("nothing was imported:\n" + "\n".join(lines))


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
    source_data: dict = field(default_factory=dict)
    imported_labels: list[str] = field(default_factory=list)
    label_set: tuple[str, ...] | None = None  # the labels this row's votes use
    # The votes come in an order worth keeping (SNLI's annotator_labels: the writer's label first);
    # unordered votes (ChaosNLI's label_counter) are stored one row per label with its count.
    ordered_votes: bool = False
    group: str = ""  # coherence group: items of one group never share a page or a worker at once


@dataclass
class AtomRow:
    line: int
    example_ref: str  # an example id (source id or key) ...
    hypothesis: str  # ... or a hypothesis text shared by examples
    atoms: list[dict]


@dataclass
class Skipped:
    line: int
    reason: str


@dataclass
class ImportReport:
    created: int = 0
    skipped: int = 0
    already_present: int = 0
    unique_hypotheses: int = 0
    items: int = 0
    atoms: int = 0
    annotations: int = 0
    skipped_reasons: dict = field(default_factory=dict)
    qualification_items: int = 0
    # Why a file that was read without errors added nothing (or less than a user would expect).
    notes: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


# ---------------------------------------------------------------- reading


def _text(row: dict, column: str, required: bool = True, field: str | None = None) -> str:
    """The text in row[column]; errors name `field` (default: the column)."""
    value = row.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise RowError(field or column, "is missing or empty")
        return ""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise RowError(field or column, f"must be text, got {type(value).__name__}")
    return str(value)


def _content_key(*parts: str) -> str:
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:40]
    return f"sha:{digest}"


def _usnli_row(line: int, record: dict):
    source_id = _text(record, "id")
    nli = _text(record, "nli").strip()
    try:
        label = to_label(nli, NLI.labels, numbering=USNLI_NUMBERING)
    except LabelError:
        raise RowError("nli", f"must be 0, 1 or 2, got {nli[:20]!r}") from None
    unli = _text(record, "unli").strip()
    try:
        probability = float(unli)
    except ValueError:
        raise RowError("unli", f"must be a number, got {unli[:20]!r}") from None
    if not (0.0 <= probability <= 1.0) or math.isnan(probability):
        raise RowError("unli", f"must be a probability from 0 to 1, got {unli[:20]}")
    return ExampleRow(
        line=line,
        key=f"id:{source_id}",
        source_id=source_id,
        premise=_text(record, "pre"),
        hypothesis=_text(record, "hyp"),
        source_label=label,
        source_data={"nli": nli, "unli": unli},
    )


def _chaosnli_row(line: int, record: dict):
    uid = _text(record, "uid")
    example = record.get("example")
    if not isinstance(example, dict):
        raise RowError("example", "must be an object with the premise and hypothesis")
    counter = record.get("label_counter")
    if not isinstance(counter, dict) or not counter:
        raise RowError("label_counter", "must be a non-empty object of label counts")
    if "obs1" in example:  # alphaNLI: which of two hypotheses explains the observations
        label_set = ALPHA_NLI.labels
        premise = f"{_text(example, 'obs1', field='example.obs1')} … {_text(example, 'obs2', field='example.obs2')}"
        hypothesis = f"1: {_text(example, 'hyp1', field='example.hyp1')} | 2: {_text(example, 'hyp2', field='example.hyp2')}"
    else:
        label_set = NLI.labels
        premise = _text(example, "premise", field="example.premise")
        hypothesis = _text(example, "hypothesis", field="example.hypothesis")
    labels: list[str] = []
    for label, count in counter.items():
        try:
            name = to_label(label, label_set)
        except LabelError as error:
            raise RowError("label_counter", f"unknown label {label!r}: {error}") from None
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise RowError("label_counter", f"count for {label!r} must be a whole number")
        labels.extend([name] * count)
    old_label = record.get("old_label")
    try:
        source_label = "" if old_label is None else to_label(old_label, label_set)
    except LabelError as error:
        raise RowError("old_label", str(error)) from None
    return ExampleRow(
        line=line,
        key=f"id:{uid}",
        source_id=uid,
        premise=premise,
        hypothesis=hypothesis,
        source_label=source_label,
        source_data={
            name: record[name]
            for name in ("example", "old_label", "old_labels", "majority_label")
            if name in record
        },
        imported_labels=labels,
        label_set=label_set,
    )


def _dnli_row(line: int, record: dict):
    impossible = record.get("UpdateTypeImpossible", False)
    if not isinstance(impossible, bool):
        raise RowError("UpdateTypeImpossible", "must be true or false")
    if impossible:
        return Skipped(line, "UpdateTypeImpossible")
    premise = _text(record, "Premise")
    hypothesis = _text(record, "Hypothesis")
    update = _text(record, "Update")
    update_type = _text(record, "UpdateType").strip().lower()
    if update_type not in ("strengthener", "weakener"):
        raise RowError("UpdateType", f"must be strengthener or weakener, got {update_type[:20]!r}")
    return ExampleRow(
        line=line,
        key=_content_key(premise, hypothesis, update, update_type),
        source_id=str(record.get("SNLIPairId") or record.get("AtomicEventRelationId") or ""),
        premise=premise,
        hypothesis=hypothesis,
        update=update,
        update_type=update_type,
        source_label=update_type,
        source_data={k: v for k, v in record.items() if k not in ("Premise", "Hypothesis", "Update")},
    )


def _snli_label(value, field: str) -> str:
    """An SNLI label: e / n / c, or "-" where the annotators reached no majority."""
    text = str(value).strip()
    if text == NO_GOLD:
        return NO_GOLD
    try:
        return to_label(text, NLI.labels)
    except LabelError:
        raise RowError(field, f"must be entailment, neutral, contradiction or -, got {text[:20]!r}") from None


def _snli_row(line: int, record: dict):
    original = "sentence1" in record
    premise = _text(record, "sentence1" if original else "premise")
    hypothesis = _text(record, "sentence2" if original else "hypothesis")
    label_field = "gold_label" if original else "label"
    label = _snli_label(_text(record, label_field), label_field)
    votes = record.get("annotator_labels", [])
    if not isinstance(votes, list):
        raise RowError("annotator_labels", "must be a list of labels")
    votes = [_snli_label(vote, f"annotator_labels[{index}]") for index, vote in enumerate(votes)]
    pair_id = str(record.get("pairID", "") or record.get("id", "") or "")
    extra = {k: record[k] for k in ("annotator_labels", "captionID", "pairID", "gold_label") if k in record}
    return ExampleRow(
        line=line,
        key=f"id:{pair_id}" if pair_id else _content_key(premise, hypothesis),
        source_id=pair_id,
        premise=premise,
        hypothesis=hypothesis,
        source_label=label,
        source_data=extra,
        imported_labels=[vote for vote in votes if vote != NO_GOLD],
        label_set=NLI.labels,
        ordered_votes=True,
    )


def _generic_row(line: int, record: dict, mapping: dict[str, str], hypothesis_required: bool):
    premise = _text(record, mapping["premise"])
    hypothesis = _text(record, mapping["hypothesis"], required=hypothesis_required)
    update = _text(record, mapping["update"], required=False)
    source_id = _text(record, mapping["id"], required=False)
    mapped = set(mapping.values())
    return ExampleRow(
        line=line,
        key=f"id:{source_id}" if source_id else _content_key(premise, hypothesis, update),
        source_id=source_id,
        premise=premise,
        hypothesis=hypothesis,
        update=update,
        source_label=_text(record, mapping["label"], required=False),
        source_data={k: v for k, v in record.items() if k not in mapped},
        group=_text(record, mapping["group"], required=False)[:100],
    )


def _atoms_row(line: int, record: dict):
    example_ref = str(record.get("example_id") or record.get("id") or "")
    hypothesis = record.get("hypothesis") or ""
    if not isinstance(hypothesis, str):
        raise RowError("hypothesis", "must be text")
    if not example_ref and not hypothesis:
        raise RowError("example_id", "give the example's id or its hypothesis text")
    atoms = record.get("atoms")
    if not isinstance(atoms, list) or not atoms:
        raise RowError("atoms", "must be a non-empty list")
    parsed = []
    for index, atom in enumerate(atoms):
        where = f"atoms[{index}]"
        if isinstance(atom, str):
            atom = {"text": atom}
        if not isinstance(atom, dict):
            raise RowError(where, "must be text or an object with 'text'")
        text = atom.get("text")
        if not isinstance(text, str) or not text.strip():
            raise RowError(f"{where}.text", "is missing or empty")
        validity = atom.get("validity", "unknown")
        if isinstance(validity, bool):
            validity = "valid" if validity else "invalid"
        if validity not in Atom.Validity.values:
            raise RowError(f"{where}.validity", "must be valid, invalid or unknown")
        effect = atom.get("effect", atom.get("label"))
        if effect is not None and (isinstance(effect, bool) or effect not in (-2, -1, 0, 1, 2)):
            raise RowError(f"{where}.effect", "must be a whole number from -2 to 2")
        parsed.append({"text": text.strip(), "validity": validity, "effect": effect})
    return AtomRow(line=line, example_ref=example_ref, hypothesis=hypothesis, atoms=parsed)


def read_rows(stream: IO[str], fmt: str, mapping: dict[str, str] | None = None, hypothesis_required: bool = True):
    """Yield (line, ExampleRow | AtomRow | Skipped | RowError) for every record of the stream. Rows of the
    generic formats may leave the hypothesis out where it is not required (premises to write about)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt in ("jsonl", "csv"):
        full_mapping = {name: name for name in GENERIC_FIELDS}
        unknown = set(mapping or {}) - set(GENERIC_FIELDS)
        if unknown:
            raise ValueError(f"mapping names unknown field(s) {', '.join(sorted(unknown))}")
        full_mapping.update(mapping or {})
        required = [full_mapping["premise"]] + ([full_mapping["hypothesis"]] if hypothesis_required else [])
        records = json_lines(stream) if fmt == "jsonl" else csv_rows(stream, required)
        return _parsed(records, partial(_generic_row, mapping=full_mapping, hypothesis_required=hypothesis_required))
    records = csv_rows(stream, USNLI_COLUMNS) if fmt == "usnli" else json_lines(stream)
    parse = {"usnli": _usnli_row, "chaosnli": _chaosnli_row, "dnli": _dnli_row, "snli": _snli_row, "atoms": _atoms_row}[fmt]
    return _parsed(records, parse)


def _parsed(records, parse):
    """(line, row) for every record: `parse(line, record)` gives the row (or a Skipped) or raises RowError.
    Reader and row errors are yielded with their line, so that the importer can list them all."""
    for line, record in records:
        if isinstance(record, RowError):
            yield line, record
            continue
        try:
            yield line, parse(line, record)
        except RowError as exc:
            yield line, exc


PREVIEW_ROWS = 10
CSV_FORMATS = ("usnli", "csv")


def preview(path: str | Path, fmt: str, limit: int = PREVIEW_ROWS) -> dict:
    """The first records of a file as they stand, before any mapping, for the import preview:
    {"columns": [names in first-seen order], "rows": [[cell text]], "errors": [(line, field, message)]}."""
    columns: list[str] = []
    records, errors = [], []
    with open(path, "rb") as stream:
        for line, record in (csv_rows(stream) if fmt in CSV_FORMATS else json_lines(stream)):
            if isinstance(record, RowError):
                errors.append((line, record.field, record.message))
            else:
                records.append(record)
                columns += [name for name in record if name not in columns]
            if len(records) + len(errors) >= limit:
                break

    def cell(value) -> str:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 120 else text[:119] + "…"

    return {"columns": columns, "rows": [[cell(r.get(c, "")) for c in columns] for r in records], "errors": errors}


# ---------------------------------------------------------------- writing


def check_format(project: Project, fmt: str) -> None:
    """Refuse a format that does not fit the project's task type, saying which do."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    task = project.task
    if fmt not in task.import_formats:
        raise ValueError(f"the {fmt} format does not fit a {task.label} project; choose one of "
                         f"{', '.join(task.import_formats)}")


def check_size(size: int) -> None:
    """The one import size limit, for the web form, the API and the command line alike."""
    limit = settings.NLI_MAX_IMPORT_BYTES
    if size > limit:
        raise ImportFileError([(0, "(file)", f"is {size / 1e6:.1f} MB, over the import limit of {limit / 1e6:.0f} MB")])


def check_text(source, sample: int = 1 << 16) -> None:
    """Refuse at once a file (a path or an upload) whose start is not UTF-8 text, before it waits for a job."""
    if hasattr(source, "chunks"):
        source.seek(0)
        start = source.read(sample)
        source.seek(0)
    else:
        with open(source, "rb") as handle:
            start = handle.read(sample)
    try:
        start.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(start) - 3:  # not merely a character cut at the sample's end
            raise ImportFileError([(1, "(file)", f"is not UTF-8 text (byte {error.start})")]) from None


def count_lines(path: str | Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def import_file(project: Project, path: str | Path, fmt: str, mapping: dict[str, str] | None = None,
                purpose: str = "data", progress=None) -> ImportReport:
    """Import a file on disk. progress(lines read, lines in the file) is called as the rows are checked."""
    check_size(Path(path).stat().st_size)
    total = count_lines(path) if progress else 0
    with open(path, "rb") as stream:  # the readers decode it and name the first byte that is not UTF-8
        return import_stream(project, stream, fmt, mapping, purpose=purpose,
                             progress=(lambda line: progress(min(line, total), total)) if progress else None)


def import_upload(project: Project, upload, fmt: str, mapping: dict[str, str] | None = None, purpose: str = "data") -> ImportReport:
    """An uploaded file (Django's UploadedFile), read as a stream from its temporary file, never whole."""
    check_size(upload.size)
    upload.seek(0)
    return import_stream(project, upload.file, fmt, mapping, purpose=purpose)


def _rereadable(stream) -> bool:
    seekable = getattr(stream, "seekable", None)
    return bool(seekable and seekable())


def import_stream(project: Project, stream: IO[str], fmt: str, mapping=None, purpose: str = "data",
                  progress=None) -> ImportReport:
    """Validate the whole stream first; write nothing unless every row is good.

    purpose "gold" imports the rows as hidden gold checks, "qualification" as the items of the project's
    qualification test; in both the row's own label is the reference answer."""
    check_format(project, fmt)
    if purpose not in PURPOSES:
        raise ValueError(f"unknown purpose {purpose!r}; choose one of {', '.join(PURPOSES)}")
    if purpose == "qualification" and project.task.per_atom:
        raise ValueError("atoms are picked into a qualification test on its page, not imported into it")
    kept_fields = project.task.source_fields(project.options)
    if purpose == "data" and fmt != "atoms" and kept_fields is None and _rereadable(stream):
        return _import_examples_streamed(project, stream, fmt, mapping, progress)
    rows, skipped, errors = [], [], []
    line = 0
    for line, row in read_rows(stream, fmt, mapping, hypothesis_required=kept_fields is None or "hypothesis" in kept_fields):
        if progress and line % PROGRESS_ROWS == 0:
            progress(line)
        if isinstance(row, RowError):
            errors.append((line, row.field, row.message))
        elif isinstance(row, Skipped):
            skipped.append(row)
        else:
            rows.append(row)
    if progress:
        progress(line)
    gold = purpose == "gold"
    if fmt == "atoms":
        return _explained(project, fmt, _analyzed(_write_atoms(project, rows, errors, skipped, gold)))
    if kept_fields is not None:
        rows = _keep_fields(rows, kept_fields, skipped)
    _check_example_rows(project, rows, errors)
    if purpose != "data" and not project.task.per_atom:
        _check_gold_references(project, rows, errors)
    if errors:
        raise ImportFileError(errors)
    if purpose == "qualification":
        return _write_qualification(project, rows, skipped)
    return _explained(project, fmt, _analyzed(_write_examples(project, rows, skipped, gold)))


# The tables an import fills, whose planner statistics it refreshes.
IMPORTED_TABLES = (Example, Atom, Item, Annotation)


def _analyzed(report: ImportReport) -> ImportReport:
    if report.created or report.items:
        analyze_imported_tables()
    return report


def analyze_imported_tables() -> None:
    """Fresh PostgreSQL planner statistics for the tables an import fills. Without them the planner
    guesses from the empty tables it last saw: right after an import it expects one claimable item, and
    the claim query scans the worker's whole history for every item instead of reading the index.
    Only these tables: the claim and page tables of a new deployment must stay never-analysed rather than
    analysed empty, or the plans that pooled connections prepare for the first claims (seq scans of an
    "empty" claim table) are kept while the table grows, and each claim reads the worker's whole history
    until autovacuum analyses it (docs/benchmarks.md)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE " + ", ".join(connection.ops.quote_name(model._meta.db_table)
                                              for model in IMPORTED_TABLES))


def _write_qualification(project: Project, rows: list[ExampleRow], skipped: list[Skipped]) -> ImportReport:
    from annotation.models import QualificationItem
    from annotation.services.qualification import QualificationError, _refuse_once_taken, project_test

    with transaction.atomic():
        test = project_test(project)
        try:
            _refuse_once_taken(test)
        except QualificationError as error:
            raise ImportFileError([(0, "(file)", str(error))]) from None
        start = test.items.count()
        QualificationItem.objects.bulk_create([
            QualificationItem(
                test=test, premise=row.premise, hypothesis=row.hypothesis, update=row.update, order=start + number,
                reference=gold_reference(project, Example(source_label=row.source_label, source_data=row.source_data), None),
            )
            for number, row in enumerate(rows, start=1)
        ])
    return ImportReport(skipped=len(skipped), qualification_items=len(rows))


def _explained(project: Project, fmt: str, report: ImportReport) -> ImportReport:
    """Say why a good file added no items, so that "0 new items" is never left unexplained."""
    task = project.task
    if report.items:
        return report
    if report.created and task.per_atom and fmt != "atoms":
        report.notes.append(
            f"These {report.created} rows are examples; a {task.label} project annotates their atoms, one item "
            "per atom. Import the atoms next (format atoms, matching the examples by id or hypothesis)."
        )
    elif report.already_present and not report.created:
        report.notes.append(f"All {report.already_present} rows were imported before: nothing is new.")
    elif not report.created and not report.already_present:
        reasons = ", ".join(f"{count} {reason}" for reason, count in report.skipped_reasons.items())
        report.notes.append("The file has no rows to import" + (f" ({reasons} skipped)." if reasons else "."))
    return report


def _keep_fields(rows: list[ExampleRow], fields: tuple[str, ...], skipped: list[Skipped]) -> list[ExampleRow]:
    """The rows cut to the example fields a task type keeps (a writing task: what workers write about), one
    per distinct text; later repeats are skipped. What else a row said (labels, votes) is not kept."""
    kept, seen = [], set()
    for row in rows:
        texts = {name: getattr(row, name) if name in fields else "" for name in ("premise", "hypothesis", "update")}
        key = "text:" + _content_key(*texts.values()).removeprefix("sha:")
        if key in seen:
            skipped.append(Skipped(row.line, "repeats the text of an earlier row"))
            continue
        seen.add(key)
        kept.append(replace(row, key=key, **texts, update_type="", source_label="", source_data={}, imported_labels=[],
                            label_set=None, ordered_votes=False, group=""))
    return kept


def _check_gold_references(project: Project, rows: list[ExampleRow], errors: list) -> None:
    for row in rows:
        example = Example(source_label=row.source_label, source_data=row.source_data)
        if gold_reference(project, example, None) is None:
            errors.append((row.line, "label", f"a gold item needs a reference answer for a {project.task.label} "
                                               "project in its label"))


# Columns with a width, and the field an error names. PostgreSQL enforces the widths; SQLite does not.
SIZED_COLUMNS = (("key", "id"), ("source_id", "id"), ("source_label", "label"))


def _fingerprint(text: str) -> int:
    """A deterministic 64-bit fingerprint: eight bytes a row where a big file's ids would take ~130."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


class ExampleRowChecks:
    """The checks of example rows, fed one row at a time so that a big file is never held whole: column
    widths, repeated ids, rows without an id numbered in file order, one label set per file.

    Ids are kept as 64-bit fingerprints in flat arrays (16 bytes a row), and repeats are found by sorting
    them at the end; two rows whose fingerprints agree are reported only once their ids are read back and
    found equal, so a fingerprint collision never refuses a good file."""

    def __init__(self, project: Project):
        self.project = project
        self.id_fingerprints = array("q")
        self.id_lines = array("q")
        self.occurrences: Counter = Counter()
        self.label_sets: set = set()
        self.first_voted_line: int | None = None

    def check(self, row: ExampleRow, errors: list) -> None:
        for column, name in SIZED_COLUMNS:
            limit = Example._meta.get_field(column).max_length
            if len(getattr(row, column)) > limit:
                errors.append((row.line, name, f"is longer than {limit} characters"))
                break
        if row.key.startswith("sha:"):
            # Rows without an id that repeat another row's text (the releases have a few) stay rows of
            # their own; numbering them keeps a re-import of the same file a no-op.
            content = _fingerprint(row.key)
            self.occurrences[content] += 1
            row.key = f"{row.key}:{self.occurrences[content]}"
        else:
            self.id_fingerprints.append(_fingerprint(row.key))
            self.id_lines.append(row.line)
        if row.imported_labels:
            self.label_sets.add(row.label_set)
            self.first_voted_line = self.first_voted_line or row.line

    def finish(self, errors: list, ids_at: Callable[[set[int]], dict[int, str]]) -> None:
        """Add the repeated ids and the label-set errors; `ids_at(lines)` reads back the ids of those lines."""
        self._repeated_ids(errors, ids_at)
        if self.label_sets and self.project.task.label_distributions:
            if len(self.label_sets) > 1:
                errors.append((self.first_voted_line, "label_counter", "the file mixes label sets"))
            else:
                wanted = list(next(iter(self.label_sets)))
                current = self.project.options.get("labels")
                if current and current != wanted and self.project.examples.exists():
                    errors.append((self.first_voted_line, "label_counter", f"the project uses labels {current}, the file {wanted}"))
        errors.sort(key=lambda error: error[0] or 0)

    def _repeated_ids(self, errors: list, ids_at) -> None:
        order = numpy.argsort(numpy.frombuffer(self.id_fingerprints, dtype=numpy.int64), kind="stable")
        fingerprints = numpy.frombuffer(self.id_fingerprints, dtype=numpy.int64)[order]  # equal ones in file order
        lines = numpy.frombuffer(self.id_lines, dtype=numpy.int64)[order]
        runs: dict[int, list[int]] = {}  # fingerprint -> the lines that carry it, in file order
        for position in numpy.flatnonzero(fingerprints[1:] == fingerprints[:-1]):
            run = runs.setdefault(int(fingerprints[position]), [int(lines[position])])
            run.append(int(lines[position + 1]))
        if not runs:
            return
        ids = ids_at({line for run in runs.values() for line in run})
        for run in runs.values():
            first_of: dict[str, int] = {}
            for line in run:
                if ids[line] in first_of:
                    errors.append((line, "id", f"repeats the id of line {first_of[ids[line]]}"))
                else:
                    first_of[ids[line]] = line


def _check_example_rows(project: Project, rows: list[ExampleRow], errors: list) -> None:
    checks = ExampleRowChecks(project)
    for row in rows:
        checks.check(row, errors)
    checks.finish(errors, lambda lines: {row.line: row.key for row in rows if row.line in lines})


def _write_examples(project: Project, rows: list[ExampleRow], skipped: list[Skipped], gold: bool) -> ImportReport:
    report = ImportReport(skipped=len(skipped), skipped_reasons=dict(Counter(s.reason for s in skipped)))
    report.unique_hypotheses = len({row.hypothesis for row in rows})
    with transaction.atomic():
        _write_example_batches(project, [rows], {row.label_set for row in rows if row.imported_labels}, gold, report)
    return report


def _write_example_batches(project: Project, batches, label_sets: set, gold: bool, report: ImportReport) -> None:
    """Write examples, their items and imported votes batch by batch (inside the caller's transaction);
    rows whose key the project already has are counted as already present."""
    task = project.task
    existing = set(project.examples.values_list("key", flat=True))
    if not task.label_distributions:
        label_sets = set()  # votes are kept only where items collect label distributions
    if label_sets and project.options.get("labels") != list(next(iter(label_sets))):
        project.options = {**project.options, "labels": list(next(iter(label_sets)))}
        project.save(update_fields=["options"])
    position = project.examples.count()
    for rows in batches:
        new_rows = [row for row in rows if row.key not in existing]
        report.already_present += len(rows) - len(new_rows)
        examples = Example.objects.bulk_create(
            [
                Example(
                    project=project,
                    key=row.key,
                    source_id=row.source_id,
                    premise=row.premise,
                    hypothesis=row.hypothesis,
                    update=row.update,
                    update_type=row.update_type,
                    source_label=row.source_label,
                    source_data=row.source_data,
                    position=position + offset,
                )
                for offset, row in enumerate(new_rows)
            ],
            batch_size=2000,
        )
        position += len(examples)
        report.created += len(examples)
        if not task.per_atom:
            votes = [row.imported_labels if label_sets else [] for row in new_rows]
            items = [
                _new_item(project, example, labels=labels, group=row.group, gold=gold)
                for example, row, labels in zip(examples, new_rows, votes)
            ]
            Item.objects.bulk_create(items, batch_size=2000)
            report.items += len(items)
            annotations = [
                Annotation(item=item, raw={"value": label}, value=label, imported=True, count=count)
                for item, row, labels in zip(items, new_rows, votes)
                for label, count in ([(label, 1) for label in labels] if row.ordered_votes else Counter(labels).items())
            ]
            Annotation.objects.bulk_create(annotations, batch_size=5000)
            report.annotations += sum(annotation.count for annotation in annotations)


STREAMED_BATCH_ROWS = 5000


def _import_examples_streamed(project: Project, stream, fmt: str, mapping, progress) -> ImportReport:
    """A data import in two passes over a stream that can be read again, so memory stays flat whatever the
    file's size: check every row keeping only ids, then read again and write in batches, in one
    transaction. A bad row anywhere, the last one included, still stores nothing."""
    errors, skipped = [], Counter()
    checks = ExampleRowChecks(project)
    hypotheses = array("q")  # fingerprints: the count of distinct hypotheses without holding their text
    line = 0
    for line, row in read_rows(stream, fmt, mapping):
        if progress and line % PROGRESS_ROWS == 0:
            progress(line)
        if isinstance(row, RowError):
            errors.append((line, row.field, row.message))
        elif isinstance(row, Skipped):
            skipped[row.reason] += 1
        else:
            checks.check(row, errors)
            hypotheses.append(_fingerprint(row.hypothesis))
    if progress:
        progress(line)

    def ids_at(lines: set[int]) -> dict[int, str]:
        stream.seek(0)
        return {line: row.key for line, row in read_rows(stream, fmt, mapping)
                if line in lines and isinstance(row, ExampleRow)}

    checks.finish(errors, ids_at)
    if errors:
        raise ImportFileError(errors)
    distinct_hypotheses = len(numpy.unique(numpy.frombuffer(hypotheses, dtype=numpy.int64)))
    report = ImportReport(skipped=sum(skipped.values()), skipped_reasons=dict(skipped), unique_hypotheses=distinct_hypotheses)
    label_sets, checks = checks.label_sets, ExampleRowChecks(project)  # the second pass numbers keys alike
    del hypotheses
    stream.seek(0)

    def batches():
        batch = []
        for _, row in read_rows(stream, fmt, mapping):
            if isinstance(row, ExampleRow):
                checks.check(row, [])
                batch.append(row)
                if len(batch) == STREAMED_BATCH_ROWS:
                    yield batch
                    batch = []
        if batch:
            yield batch

    with transaction.atomic():
        _write_example_batches(project, batches(), label_sets, False, report)
    return _explained(project, fmt, _analyzed(report))


def _new_item(project: Project, example: Example, atom: Atom | None = None, labels: list[str] = (), group: str = "", gold: bool = False) -> Item:
    item = Item(project=project, example=example, atom=atom, target=project.redundancy, coherence_group=group)
    if gold:  # served only as hidden checks, never as data to collect
        item.is_gold, item.gold = True, gold_reference(project, example, atom)
        item.claimable, item.status, item.target = False, Item.Status.DONE, 0
    elif labels:  # imported votes: the item is complete as it stands
        aggregate = project.task.aggregate(list(labels), project.options)
        item.annotation_count = len(labels)
        item.target = max(project.redundancy, len(labels))
        item.claimable = False
        item.aggregate = aggregate.value
        item.status = Item.Status.ADJUDICATION if aggregate.tied else Item.Status.DONE
    return item


def _write_atoms(project: Project, rows: list[AtomRow], errors: list, skipped: list, gold: bool) -> ImportReport:
    by_ref: dict[str, list[Example]] = {}
    by_hypothesis: dict[str, list[Example]] = {}
    for example in project.examples.all():
        by_ref.setdefault(example.source_id, []).append(example)
        by_ref.setdefault(example.key, []).append(example)
        by_hypothesis.setdefault(example.hypothesis, []).append(example)
    targets: list[tuple[AtomRow, list[Example]]] = []
    for row in rows:
        found = by_ref.get(row.example_ref, []) if row.example_ref else by_hypothesis.get(row.hypothesis, [])
        if not found:
            name = "example_id" if row.example_ref else "hypothesis"
            errors.append((row.line, name, "matches no example of this project"))
        targets.append((row, found))
    if gold and project.task.per_atom:
        _check_gold_atoms(project, rows, errors)
    if errors:
        raise ImportFileError(errors)
    report = ImportReport(skipped=len(skipped))
    report.unique_hypotheses = len({example.hypothesis for _, found in targets for example in found})
    with transaction.atomic():
        existing = set(Atom.objects.filter(example__project=project).values_list("example_id", "text"))
        new_atoms = []
        for row, found in targets:
            for example in found:
                for order, atom in enumerate(row.atoms):
                    if (example.id, atom["text"]) in existing:
                        report.already_present += 1
                        continue
                    existing.add((example.id, atom["text"]))
                    new_atoms.append(
                        Atom(example=example, text=atom["text"], order=order, validity=atom["validity"], effect=atom["effect"])
                    )
        Atom.objects.bulk_create(new_atoms, batch_size=2000)
        report.atoms = report.created = len(new_atoms)
        if project.task.per_atom:
            items = [_new_item(project, atom.example, atom, gold=gold) for atom in new_atoms]
            Item.objects.bulk_create(items, batch_size=2000)
            report.items = len(items)
    return report


def _check_gold_atoms(project: Project, rows: list[AtomRow], errors: list) -> None:
    task = project.task
    for row in rows:
        for order, atom in enumerate(row.atoms):
            reference = task.gold_reference(None, Atom(validity=atom["validity"], effect=atom["effect"]), project.options)
            if reference is None:
                errors.append((row.line, f"atoms[{order}].{task.atom_reference_field}",
                               f"a gold atom needs its reference answer for a {task.label} project"))
