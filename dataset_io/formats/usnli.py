"""U-SNLI's CSV: `id,pre,hyp,nli,unli` (nli numbers the NLI label 0 = contradiction, 1 = neutral,
2 = entailment; unli is a probability). Imported by slider studies (the probability is the item's reference)
and 3-way label studies (the label is); exported by slider studies."""

from __future__ import annotations

from common.readers import RowError
from common.vocabulary import NLI, USNLI_NUMBERING
from dataset_io.formats.base import (
    POOLS,
    ExampleRow,
    ExportOptions,
    FieldDoc,
    Format,
    ReadContext,
    checked_records,
    csv_cell,
    csv_line,
    extra_columns,
    probability_text,
    text,
)
from dataset_io.services.records import item_batches

COLUMNS = ("id", "pre", "hyp", "nli", "unli")
USNLI_CODES = {label: code for code, label in USNLI_NUMBERING.items()}
# Columns this app adds after the published ones (and after any other column the imported file had).
ADDED = ("unli_source", "collected_unli", "collected_answers", "excluded_answers", "adjudicated", "item")
GOLD_COLUMNS = ("pool", "gold")
UNLI_SOURCES = ("imported", "collected", "none")


class USNLI(Format):
    name = "usnli"
    title = "U-SNLI CSV"
    extension = "csv"
    summary = "one premise-hypothesis pair per line with its NLI label and its probability"
    fields = (
        FieldDoc("id", "text", "the pair's id (the imported id, else the study's key for it)"),
        FieldDoc("pre", "text", "the premise, exactly as stored"),
        FieldDoc("hyp", "text", "the hypothesis, exactly as stored"),
        FieldDoc(
            "nli",
            "0, 1 or 2",
            "the imported NLI label in U-SNLI's numbering (0 contradiction, 1 neutral, "
            "2 entailment); empty where the row had none",
        ),
        FieldDoc(
            "unli",
            "probability",
            "the imported probability where the row had one (never overwritten), "
            "else the collected one; empty only on an unanswered row asked for",
        ),
        FieldDoc("(other columns)", "text", "columns the imported file had beyond these, unchanged"),
        FieldDoc("unli_source", "imported, collected or none", "what `unli` holds", added=True),
        FieldDoc(
            "collected_unli",
            "probability",
            "the collected probability: the adjudicated one, else the median "
            "of the answers that count; empty while none",
            added=True,
        ),
        FieldDoc(
            "collected_answers", "whole number", "answers that count (excluded workers' answers left out)", added=True
        ),
        FieldDoc("excluded_answers", "whole number", "answers of workers the author excluded", added=True),
        FieldDoc("adjudicated", "true or false", "an author set `collected_unli`", added=True),
        FieldDoc("item", "whole number", "the study's item id", added=True),
        FieldDoc(
            "pool, gold",
            "data or gold; probability",
            "only when gold checks are asked for: the row's pool, and a gold check's reference",
            added=True,
        ),
    )

    def importable(self, task, options):
        return (
            not task.per_atom
            and task.source_fields(options) is None
            and (task.probability_answers or set(NLI.labels) <= set(task.example_labels(options)))
        )

    def exportable(self, task, options):
        return task.probability_answers and not task.per_atom

    def required_columns(self, context):
        return COLUMNS

    def parse(self, line, record, context: ReadContext):
        source_id = text(record, "id")
        nli = text(record, "nli").strip()
        label = context.label(nli, "nli", labels=NLI.labels, numbering=USNLI_NUMBERING)
        probability = probability_text(text(record, "unli"), "unli")
        pool = (record.get("pool") or "").strip()
        if pool and pool not in POOLS:
            raise RowError("pool", f"must be one of {', '.join(POOLS)}, got {pool[:20]!r}")
        return ExampleRow(
            line=line,
            key=f"id:{source_id}",
            source_id=source_id,
            premise=text(record, "pre"),
            hypothesis=text(record, "hyp"),
            source_label=label,
            source_probability=probability,
            source_data={k: v for k, v in record.items() if k not in COLUMNS + ADDED + GOLD_COLUMNS},
            pool=pool,
            gold=(record.get("gold") or None) if pool == "gold" else None,
        )

    def write(self, project, options: ExportOptions):
        extra = extra_columns(project, COLUMNS + ADDED + GOLD_COLUMNS, self.name)
        yield csv_line([*COLUMNS, *extra, *ADDED, *(GOLD_COLUMNS if options.include_gold else ())])
        task = project.task
        for records in item_batches(project, options.include_gold, free_text=options.free_text):
            lines = []
            for record in records:
                example, aggregate = record.item.example, record.aggregate(task)
                collected = aggregate["value"] if (record.collected or aggregate["adjudicated"]) else None
                if example.source_probability and not (options.study_gold and collected is not None):
                    unli, source = example.source_probability, "imported"
                elif collected is not None:
                    unli, source = repr(float(collected)), "collected"
                elif options.include_unanswered or record.item.is_gold:
                    unli, source = "", "none"
                else:
                    continue  # nothing to say about this pair yet
                row = [
                    example.source_id or example.key,
                    example.premise,
                    example.hypothesis,
                    USNLI_CODES.get(example.source_label, ""),
                    unli,
                ]
                own = example.source_data if example.source_format == self.name else {}
                row += [csv_cell(own.get(column)) for column in extra]
                row += [
                    source,
                    "" if collected is None else repr(float(collected)),
                    len(record.collected),
                    record.excluded,
                    csv_cell(aggregate["adjudicated"]),
                    record.item.id,
                ]
                if options.include_gold:
                    row += [record.pool, csv_cell(record.item.gold)]
                lines.append(csv_line(row))
            yield "".join(lines)

    def validate(self, stream):
        records = self.records(stream, COLUMNS)
        return checked_records(records, _check_row)


def _check_row(line, row):
    if not (row.get("id") or "").strip():
        yield RowError("id", "is missing or empty")
    for column in ("pre", "hyp"):
        if not (row.get(column) or "").strip():
            yield RowError(column, "is missing or empty")
    nli = row.get("nli", "")
    if nli not in USNLI_NUMBERING and nli != "":
        yield RowError("nli", f"must be 0, 1 or 2, got {nli[:20]!r}")
    source = row.get("unli_source")
    if source is not None and source not in UNLI_SOURCES:
        yield RowError("unli_source", f"must be one of {', '.join(UNLI_SOURCES)}, got {source[:20]!r}")
    unli = row.get("unli", "")
    if unli == "" and source != "none":
        yield RowError("unli", "is missing or empty")
    elif unli != "" and source == "none":
        yield RowError("unli", "must be empty where unli_source is none")
    for column in ("unli", "collected_unli") + (("gold",) if row.get("pool") == "gold" else ()):
        if row.get(column):
            try:
                probability_text(row[column], column)
            except RowError as error:
                yield error
    for column in ("collected_answers", "excluded_answers", "item"):
        value = row.get(column)
        if value is not None and not value.isdigit():
            yield RowError(column, f"must be a whole number, got {value[:20]!r}")
    if row.get("adjudicated") not in (None, "true", "false"):
        yield RowError("adjudicated", f"must be true or false, got {row['adjudicated'][:20]!r}")
    if row.get("pool") not in (None, *POOLS):
        yield RowError("pool", f"must be one of {', '.join(POOLS)}, got {row['pool'][:20]!r}")
    if row.get("adjudicated") == "true" and not row.get("collected_unli"):
        yield RowError("collected_unli", "an adjudicated row needs its collected probability")


FORMAT = USNLI()
