"""CSV of any columns (imported through a mapping, as jsonl is), and a spreadsheet's export: one item per
line with its final label and how it was made.

The export neutralises cells a spreadsheet would run as formulas (OWASP's rule: a text cell starting with
=, +, -, @, a tab or a carriage return gets a leading '), so it is for reading, not for importing again."""

from __future__ import annotations

from common.readers import RowError
from dataset_io.formats import generic
from dataset_io.formats.base import (
    ExportOptions,
    FieldDoc,
    Format,
    ReadContext,
    checked_records,
    csv_cell,
    csv_line,
)
from dataset_io.services.records import item_batches

COLUMNS = (
    "item",
    "id",
    "premise",
    "hypothesis",
    "update",
    "atom",
    "label",
    "probability",
    "status",
    "answers",
    "excluded_answers",
    "final",
    "method",
    "tie",
    "adjudicated",
)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value):
    """Text that a spreadsheet would evaluate, prefixed with a quote so it is shown as text."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class Spreadsheet(Format):
    name = "csv"
    title = "CSV (spreadsheet)"
    extension = "csv"
    summary = "one item per line with its final label, for spreadsheets"
    round_trips = False
    fields = (
        FieldDoc("item, id", "whole number, text", "the study's item id and the example's id"),
        FieldDoc(
            "premise, hypothesis, update, atom",
            "text",
            "the texts (a cell a spreadsheet would run as a formula starts with ')",
        ),
        FieldDoc("label, probability", "text", "the row's imported label and probability"),
        FieldDoc("status", "open, done or adjudication", "the item's status"),
        FieldDoc(
            "answers, excluded_answers",
            "whole number",
            "answers that count (imported votes included), and answers of excluded workers",
        ),
        FieldDoc(
            "final, method, tie, adjudicated",
            "",
            "the item's label (adjudicated, else the aggregate; empty "
            "while unsettled or tied), how it was made, whether labels tied, whether an author set it",
        ),
        FieldDoc("pool", "data or gold", "only when gold checks are asked for", added=True),
    )

    def importable(self, task, options):
        return True

    def exportable(self, task, options):
        return True

    def required_columns(self, context):
        return generic.required_columns(context)

    def parse(self, line, record, context: ReadContext):
        return generic.parse_row(line, record, context)

    def file_name(self, project) -> str:
        return f"{project.slug}.csv"

    def write(self, project, options: ExportOptions):
        task = project.task
        yield csv_line([*COLUMNS, *(("pool",) if options.include_gold else ())])
        for records in item_batches(project, options.include_gold, free_text=options.free_text):
            lines = []
            for record in records:
                item, example = record.item, record.item.example
                if not (record.answered or options.include_unanswered or item.is_gold):
                    continue
                aggregate = record.aggregate(task)
                row = [
                    item.id,
                    example.source_id or example.key,
                    example.premise,
                    example.hypothesis,
                    example.update,
                    item.atom.text if item.atom else "",
                    example.source_label,
                    example.source_probability,
                    item.status,
                    aggregate["answers"],
                    aggregate["excluded"],
                    csv_cell(aggregate["value"]),
                    aggregate["method"] or "",
                    csv_cell(aggregate["tie"]),
                    csv_cell(aggregate["adjudicated"]),
                ]
                if options.include_gold:
                    row.append(record.pool)
                lines.append(csv_line([spreadsheet_safe(value) for value in row]))
            yield "".join(lines)

    def validate(self, stream):
        """An export of this app (its item column) is checked column by column; any other CSV needs a premise."""
        return checked_records(self.records(stream, ("premise",)), _check_row)


def _check_row(line, row):
    if "item" not in row:
        if not (row.get("premise") or "").strip():
            yield RowError("premise", "is missing or empty")
        return
    for column in ("item", "answers", "excluded_answers"):
        if not (row.get(column) or "").isdigit():
            yield RowError(column, f"must be a whole number, got {(row.get(column) or '')[:20]!r}")
    for column in ("tie", "adjudicated"):
        if row.get(column) not in ("true", "false"):
            yield RowError(column, f"must be true or false, got {(row.get(column) or '')[:20]!r}")
    if row.get("tie") == "true" and row.get("final"):
        yield RowError("final", "must be empty on a tie")


FORMAT = Spreadsheet()
