"""Dataset imports: read a file with its format's reader (dataset_io.formats) into example rows, check every
row (import_checks), then write all or nothing (import_writing). This module is the entry the pages, the API
and the commands call, with the readers and the file checks done before a job waits.

Every label a row carries is read through the one vocabulary (common.vocabulary) against the labels the study
takes (TaskType.example_labels), after the import's label mapping if it names one; anything else refuses the
file with its line and field. Rows go to a pool (data, gold checks, the qualification test): the import's
purpose, or what an exported record says of itself; a row whose text is in another pool of the study is
refused, naming the item and its pool (annotation.services.pools).
"""

from __future__ import annotations

import json
import re
from array import array
from collections import Counter
from pathlib import Path
from typing import IO

from django.conf import settings
from django.db import transaction

from annotation.models import Project
from common.readers import RowError
from common.vocabulary import LabelError, label_mapping
from dataset_io.formats import FORMATS, Names, ReadContext, get_format
from dataset_io.formats.base import AtomRow, ExampleRow, Skipped, oversized_text
from dataset_io.formats.generic import FIELDS as GENERIC_FIELDS
from dataset_io.formats.generic import full_mapping
from dataset_io.services.import_checks import (
    ExampleRowChecks,
    ImportFileError,
    PoolChecks,
    check_example_rows,
    fingerprint,
    identity,
    keep_fields,
)
from dataset_io.services.import_writing import (
    ImportReport,
    analyzed,
    write_atoms,
    write_example_batches,
    write_examples,
    write_qualification,
)

# What imported rows become: data to collect, hidden gold checks, or the project's qualification test.
PURPOSES = ("data", "gold", "qualification")
# The formats files are imported in (the registry's, less the export-only ones), read when asked: this module
# loads before a feature app registers its formats.
IMPORT_FORMATS = Names(reads=True)
PROGRESS_ROWS = 1000  # rows between two progress reports of a long import

__all__ = [
    "FORMATS",
    "GENERIC_FIELDS",
    "IMPORT_FORMATS",
    "PURPOSES",
    "ImportFileError",
    "ImportReport",
    "import_file",
    "import_stream",
    "import_upload",
    "preview",
    "read_rows",
]


# ---------------------------------------------------------------- reading


def read_context(project: Project, mapping: dict[str, str] | None = None, label_map=None) -> ReadContext:
    """What the readers need of the study: the labels its rows may carry (none where it keeps no labels: a
    writing study keeps only the texts workers write about), the import's label mapping checked against
    them, and a generic format's column mapping."""
    task, options = project.task, project.options
    kept_fields = task.source_fields(options)
    labels = None if kept_fields is not None else tuple(task.example_labels(options))
    try:
        checked_map = label_mapping(label_map or {}, labels) if labels is not None else {}
    except LabelError as error:
        raise ImportFileError([(0, "label mapping", str(error))]) from None
    return ReadContext(
        labels=labels,
        label_map=checked_map,
        mapping=full_mapping(mapping),
        hypothesis_required=kept_fields is None or "hypothesis" in kept_fields,
    )


def label_map_pairs(text: str) -> list[str]:
    """A label mapping written as text (VALUE=LABEL pairs separated by commas or new lines) as its pairs."""
    return [pair.strip() for pair in re.split(r"[,\n]", text or "") if pair.strip()]


def read_rows(stream: IO, fmt: str, context: ReadContext):
    """(line, ExampleRow | AtomRow | Skipped | RowError) for every record of the stream."""
    reader = get_format(fmt)
    for line, record in reader.records(stream, reader.required_columns(context)):
        if isinstance(record, RowError):
            yield line, record
            continue
        try:
            row = reader.parse(line, record, context)
        except RowError as exc:
            yield line, exc
            continue
        oversized = oversized_text(row) if isinstance(row, (ExampleRow, AtomRow)) else None
        if oversized is not None:
            yield line, oversized
            continue
        for example in (row, getattr(row, "example", None)):
            if isinstance(example, ExampleRow):
                example.source_format = example.source_format or fmt
        yield line, row


PREVIEW_ROWS = 10


def preview(path: str | Path, fmt: str, limit: int = PREVIEW_ROWS) -> dict:
    """The first records of a file as they stand, before any mapping, for the import preview:
    {"columns": [names in first-seen order], "rows": [[cell text]], "errors": [(line, field, message)]}."""
    columns: list[str] = []
    records, errors = [], []
    reader = FORMATS.get(fmt, FORMATS["jsonl"])  # a format not offered (the form refuses it) shows as JSON Lines
    with open(path, "rb") as stream:
        for line, record in reader.rows(stream):
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


def label_values(path: str | Path, fmt: str, column: str, limit: int = 10_000) -> list[str]:
    """The distinct values of a generic file's label column (the first `limit` rows), for the import page's
    label mapping step."""
    values: dict[str, None] = {}
    with open(path, "rb") as stream:
        for count, (_, record) in enumerate(FORMATS[fmt].rows(stream)):
            if count >= limit:
                break
            if isinstance(record, dict) and record.get(column) not in (None, ""):
                values.setdefault(str(record[column]).strip())
    return list(values)


# ---------------------------------------------------------------- importing


def check_format(project: Project, fmt: str) -> None:
    """Refuse a format that does not fit the project's task type, saying which do."""
    reader = get_format(fmt)
    task = project.task
    if not reader.importable(task, project.options):
        from dataset_io.formats import importable

        raise ValueError(
            f"the {fmt} format does not fit a {task.label} project; choose one of "
            f"{', '.join(importable(task, project.options))}"
        )


def check_size(size: int) -> None:
    """The one import size limit, for the web form, the API and the command line alike."""
    limit = settings.NLI_MAX_IMPORT_BYTES
    if size > limit:
        raise ImportFileError(
            [(0, "(file)", f"is {size / 2**20:.1f} MiB, over the import limit of {limit / 2**20:.0f} MiB")]
        )


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


def import_file(
    project: Project,
    path: str | Path,
    fmt: str,
    mapping: dict[str, str] | None = None,
    purpose: str = "data",
    progress=None,
    label_map=None,
) -> ImportReport:
    """Import a file on disk. progress(lines read, lines in the file) is called as the rows are checked."""
    check_size(Path(path).stat().st_size)
    total = count_lines(path) if progress else 0
    with open(path, "rb") as stream:  # the readers decode it and name the first byte that is not UTF-8
        return import_stream(
            project,
            stream,
            fmt,
            mapping,
            purpose=purpose,
            label_map=label_map,
            progress=(lambda line: progress(min(line, total), total)) if progress else None,
        )


def import_upload(
    project: Project, upload, fmt: str, mapping: dict[str, str] | None = None, purpose: str = "data", label_map=None
) -> ImportReport:
    """An uploaded file (Django's UploadedFile), read as a stream from its temporary file, never whole."""
    check_size(upload.size)
    upload.seek(0)
    return import_stream(project, upload.file, fmt, mapping, purpose=purpose, label_map=label_map)


def _rereadable(stream) -> bool:
    seekable = getattr(stream, "seekable", None)
    return bool(seekable and seekable())


def check_purpose(project: Project, purpose: str) -> None:
    """Refuse an import purpose the study's task type cannot take (TaskType.import_purposes), naming those it can."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown purpose {purpose!r}; choose one of {', '.join(PURPOSES)}")
    taken = project.task.import_purposes()
    if purpose not in taken:
        raise ValueError(
            f"a {project.task.label} study takes no {purpose} items from an import (it takes {', '.join(taken)})"
            + ("; pick its qualification test's items on the test's page" if purpose == "qualification" else "")
        )


def import_stream(
    project: Project, stream: IO[str], fmt: str, mapping=None, purpose: str = "data", progress=None, label_map=None
) -> ImportReport:
    """Validate the whole stream first; write nothing unless every row is good.

    purpose "gold" imports the rows as hidden gold checks, "qualification" as the items of the project's
    qualification test; in both the row's own label is the reference answer. label_map: {value: label} or
    ["VALUE=LABEL", ...], applied to every label the file carries before the vocabulary reads it."""
    check_format(project, fmt)
    check_purpose(project, purpose)
    context = read_context(project, mapping, label_map)
    kept_fields = project.task.source_fields(project.options)
    if purpose == "data" and fmt != "atoms" and kept_fields is None and _rereadable(stream):
        return _import_examples_streamed(project, stream, fmt, context, progress)
    rows, skipped, errors = [], [], []
    line = 0
    for line, row in read_rows(stream, fmt, context):
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
    if fmt == "atoms":
        return _explained(project, fmt, analyzed(write_atoms(project, rows, errors, skipped, purpose)))
    if kept_fields is not None:
        rows = keep_fields(rows, kept_fields, skipped)
    check_example_rows(project, rows, errors)
    checks = PoolChecks(project, purpose)
    for row in rows:
        checks.check(row, errors)
    if errors:
        raise ImportFileError(sorted(errors, key=lambda error: error[0] or 0))
    if purpose == "qualification":
        return write_qualification(project, rows, skipped)
    return _explained(project, fmt, analyzed(write_examples(project, rows, skipped, purpose)))


STREAMED_BATCH_ROWS = 5000


def _import_examples_streamed(project: Project, stream, fmt: str, context: ReadContext, progress) -> ImportReport:
    """A data import in two passes over a stream that can be read again, so memory stays flat whatever the
    file's size: check every row keeping only ids, then read again and write in batches, in one
    transaction. A bad row anywhere, the last one included, still stores nothing."""
    import numpy  # here, not at the top: web processes that never import stay lean

    errors, skipped = [], Counter()
    checks = ExampleRowChecks(project)
    pool_checks = PoolChecks(project, "data")
    hypotheses = array("q")  # fingerprints: the count of distinct hypotheses without holding their text
    line = 0
    for line, row in read_rows(stream, fmt, context):
        if progress and line % PROGRESS_ROWS == 0:
            progress(line)
        if isinstance(row, RowError):
            errors.append((line, row.field, row.message))
        elif isinstance(row, Skipped):
            skipped[row.reason] += 1
        else:
            checks.check(row, errors)
            pool_checks.check(row, errors)
            hypotheses.append(fingerprint(row.hypothesis))
    if progress:
        progress(line)

    def ids_at(lines: set[int]) -> dict[int, str]:
        stream.seek(0)
        return {
            line: identity(row)
            for line, row in read_rows(stream, fmt, context)
            if line in lines and isinstance(row, ExampleRow)
        }

    checks.finish(errors, ids_at)
    if errors:
        raise ImportFileError(sorted(errors, key=lambda error: error[0] or 0))
    distinct_hypotheses = len(numpy.unique(numpy.frombuffer(hypotheses, dtype=numpy.int64)))
    report = ImportReport(
        skipped=sum(skipped.values()), skipped_reasons=dict(skipped), unique_hypotheses=distinct_hypotheses
    )
    label_sets, checks = checks.label_sets, ExampleRowChecks(project)  # the second pass numbers keys alike
    del hypotheses
    stream.seek(0)

    def batches():
        batch = []
        for _, row in read_rows(stream, fmt, context):
            if isinstance(row, ExampleRow):
                checks.check(row, [])
                pool_checks.check(row, [])  # fills each gold row's reference again
                batch.append(row)
                if len(batch) == STREAMED_BATCH_ROWS:
                    yield batch
                    batch = []
        if batch:
            yield batch

    with transaction.atomic():
        write_example_batches(project, batches(), label_sets, "data", report)
    return _explained(project, fmt, analyzed(report))


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
