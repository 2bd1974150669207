"""Dataset exports, streamed: each format (dataset_io.formats) writes text chunks read from the database in
keyset-paginated batches, so memory stays flat whatever the study's size. This module is what the pages, the
API, the command line and jobs call: it checks the format fits before the first byte, names the file and
records the export in the audit log.
"""

from __future__ import annotations

from collections.abc import Iterator

from annotation.models import AuditEntry, Project
from annotation.services import audit
from dataset_io.formats import FORMATS, ExportOptions, exportable, get_format
from dataset_io.services.records import FREE_TEXT_CHOICES

__all__ = [
    "FORMATS",
    "ExportError",
    "ExportOptions",
    "FormatDoesNotFit",
    "check_format",
    "content_type",
    "export",
    "file_name",
    "options_from",
    "record_export",
    "write_export",
]


class ExportError(ValueError):
    """An export that cannot be made as asked; raised before anything is streamed. field: what was wrong."""

    def __init__(self, message: str, field: str = "as"):
        super().__init__(message)
        self.field = field


class FormatDoesNotFit(ExportError):
    """A format that exists, but not for this study's task type or settings (the API: no such export, 404)."""


def content_type(fmt: str) -> str:
    return get_format(fmt).content_type


def file_name(project: Project, fmt: str) -> str:
    """demo-slider-usnli.csv, demo-nli-chaosnli.jsonl; the spreadsheet CSV is demo-slider.csv."""
    return get_format(fmt).file_name(project)


def check_format(project: Project, fmt: str) -> None:
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    fitting = exportable(project.task, project.options)
    if fmt not in fitting:
        raise FormatDoesNotFit(
            f"the {fmt} format does not fit this {project.task.label} project; choose one of {', '.join(fitting)}"
        )


def export(project: Project, fmt: str, options: ExportOptions = ExportOptions()) -> Iterator[str]:
    """The export's text chunks. The format is checked here, before the first chunk, so a refused export
    is an error response and never a stream that breaks off."""
    check_format(project, fmt)
    return get_format(fmt).write(project, options)


TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("", "0", "false", "no", "off")


def options_from(params) -> ExportOptions:
    """Export options from a query string or form (include_gold, include_unanswered: 1, true, yes or on;
    0, false, no, off or absent; free_text: keep (or absent), omit or scrub, spelled so). Anything else is
    refused rather than read as "no" or "keep"."""

    def asked(name):
        word = str(params.get(name, "")).strip().lower()
        if word not in TRUE_WORDS + FALSE_WORDS:
            raise ExportError(f"{name} must be true or false, not {params.get(name)!r}", field=name)
        return word in TRUE_WORDS

    free_text = params.get("free_text", "keep")  # as the schema's enum spells it: an empty value is no choice
    if free_text not in FREE_TEXT_CHOICES:
        choices = ", ".join(FREE_TEXT_CHOICES)
        raise ExportError(f"free_text must be one of {choices}, not {params.get('free_text')!r}", field="free_text")
    return ExportOptions(
        include_unanswered=asked("include_unanswered"), include_gold=asked("include_gold"), free_text=free_text
    )


def record_export(project: Project, fmt: str, by, via: str, options: ExportOptions = ExportOptions()) -> None:
    """The audit log's row for an export that was allowed (by: the user, None for the command line)."""
    audit.record(
        by,
        AuditEntry.Action.EXPORT,
        project,
        format=fmt,
        via=via,
        include_gold=options.include_gold,
        include_unanswered=options.include_unanswered,
    )


def write_export(project: Project, fmt: str, path, progress=None, options: ExportOptions = ExportOptions()) -> int:
    """Write an export to a file; returns the number of records written (a CSV file's rows, its header not
    counted). progress(items, expected) is called after every batch."""
    records = 0
    chunks = export(project, fmt, options)  # refused formats fail here, before the file is created
    expected = project.items.count() if progress else 0
    is_csv = get_format(fmt).extension == "csv"
    header = 1 if is_csv else 0
    with open(path, "w", encoding="utf-8", newline="") as out:
        for chunk in chunks:
            out.write(chunk)
            records += _records_in(chunk, is_csv)
            if progress:
                progress(min(records, expected), expected)
    return max(records - header, 0)


def _records_in(chunk: str, is_csv: bool) -> int:
    """The records in one chunk a format yielded (every format yields whole records, each ending in a line break):
    JSON Lines escape a line break inside a text, so every line break ends a record; a CSV cell may hold line
    breaks inside its quotes (LiveNLI's 1,405 rows take 1,414 lines), so only the breaks outside quotes count:
    those in the even pieces between quote characters (a doubled quote inside a cell opens and closes an
    empty piece). No parsing, so no field-size limit."""
    if not is_csv:
        return chunk.count("\n")
    return sum(piece.count("\n") for piece in chunk.split('"')[::2])
