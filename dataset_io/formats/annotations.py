"""One answer per line, with its provenance: the per-annotation file (for perspectivist work, annotator
models, or checking who answered what). Export only."""

from __future__ import annotations

from common.readers import RowError
from dataset_io.formats.base import ExportOptions, FieldDoc, Format, checked_records, json_line, schema_errors
from dataset_io.formats.jsonl import ANNOTATION_FIELDS
from dataset_io.services.provenance import Provenance
from dataset_io.services.records import annotation_record, item_batches


class Annotations(Format):
    name = "annotations"
    title = "Annotations JSON Lines"
    extension = "jsonl"
    summary = "one answer per line with its provenance (imported votes as one line per label with its count)"
    round_trips = False  # answers belong to workers of this study: they are not imported
    fields = (
        FieldDoc(
            "item, id, atom",
            "whole number, text, text or null",
            "the study's item id, the example's id and, in per-atom studies, the atom",
        ),
        FieldDoc("pool", "data or gold", "gold check answers appear only when gold checks are asked for"),
        *ANNOTATION_FIELDS,
    )

    def exportable(self, task, options):
        return True

    def write(self, project, options: ExportOptions):
        task, provenance = project.task, Provenance(project)
        for records in item_batches(project, options.include_gold, free_text=options.free_text, batch=200):
            lines = []
            for record in records:
                item, example = record.item, record.item.example
                head = {
                    "item": item.id,
                    "id": example.source_id or example.key,
                    "atom": item.atom.text if item.atom else None,
                    "pool": record.pool,
                }
                lines += [
                    json_line({**head, **annotation_record(task, project.options, vote, provenance)})
                    for vote in record.votes
                ]
            yield "".join(lines)

    def validate(self, stream):
        return checked_records(self.records(stream), _check_record)


SCHEMA = {
    "type": "object",
    "required": [
        "item",
        "id",
        "pool",
        "annotator",
        "imported",
        "count",
        "value",
        "submitted_at",
        "seconds_spent",
        "page",
        "instrument_version",
        "qualification_score",
        "excluded",
        "excluded_reason",
        "excluded_by",
    ],
    "properties": {
        "item": {"type": "integer"},
        "id": {"type": "string"},
        "pool": {"enum": ["data", "gold"]},
        "annotator": {"type": ["string", "null"]},
        "imported": {"type": "boolean"},
        "count": {"type": "integer", "minimum": 1},
        "seconds_spent": {"type": ["number", "null"], "minimum": 0},
        "page": {"type": ["integer", "null"]},
        "instrument_version": {"type": ["string", "null"]},
        "qualification_score": {"type": ["number", "null"]},
        "worker_reliability": {
            "type": ["object", "null"],
            "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "excluded": {"type": "boolean"},
        "excluded_reason": {"type": ["string", "null"]},
        "excluded_by": {"type": ["string", "null"]},
        "worker_status": {"enum": ["active", "blocked", "suspended", None]},
    },
}


def _check_record(line, record):
    errors = list(schema_errors(SCHEMA, record))
    yield from errors
    if errors:
        return
    if record["imported"] != (record["annotator"] is None):
        yield RowError("annotator", "an imported vote has no annotator, a collected answer has one")
    if record["excluded"] and not record["excluded_reason"]:
        yield RowError("excluded_reason", "an excluded answer needs its reason")
    if not record["imported"] and record["submitted_at"] is None:
        yield RowError("submitted_at", "a collected answer needs its time")


FORMAT = Annotations()
