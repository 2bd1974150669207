"""delta-NLI's JSON Lines: a premise, a hypothesis and an update that strengthens or weakens it.

Imported by studies that annotate an example's atoms or write about its texts (the update and its type are
kept); exported by writing studies whose workers write updates, one written update per line with its
validation."""

from __future__ import annotations

from common.readers import RowError
from common.vocabulary import UPDATE
from dataset_io.formats.base import (
    STUDIO_KEY,
    ExampleRow,
    ExportOptions,
    FieldDoc,
    Format,
    ReadContext,
    Skipped,
    checked_records,
    content_key,
    json_line,
    schema_errors,
    text,
)
from dataset_io.services.provenance import Provenance
from dataset_io.services.records import Vote, annotation_record

TEXTS = ("Premise", "Hypothesis", "Update")
VERDICTS = (*UPDATE.labels, "no effect")


class DeltaNLI(Format):
    name = "dnli"
    title = "delta-NLI JSON Lines"
    extension = "jsonl"
    summary = "one premise, hypothesis and update per line"
    round_trips = False  # a writing study exports what its workers wrote, not the rows it imported
    fields = (
        FieldDoc("Premise, Hypothesis, Update", "text", "the texts, exactly as stored (the Update as written)"),
        FieldDoc("UpdateType", "strengthener or weakener", "what the update was written to do"),
        FieldDoc("UpdateTypeImpossible", "true or false", "false: every exported update was written"),
        FieldDoc("SourceId", "text", "the id of the example the update was written for"),
        FieldDoc("WorkerIdAnon", "text", "the writer's anonymised annotator id (the study's keyed hash)"),
        FieldDoc("ValidationPairId", "text or null", "the update's pair in the validation study; null until sent"),
        FieldDoc("ValidationVotes", "list", "the validators' -2..+2 effects of the update on the hypothesis"),
        FieldDoc("ValidationVerdict", "strengthener, weakener, no effect or null", "what the validation settled on"),
        FieldDoc("nli_studio", "object", "the written answer's provenance, as in the annotations format", added=True),
    )

    def importable(self, task, options):
        # Studies that annotate an example's atoms, or write about its texts: the update and its type are kept.
        return task.per_atom or task.source_fields(options) is not None

    def exportable(self, task, options):
        return task.writes_updates(options)

    def parse(self, line, record, context: ReadContext):
        impossible = record.get("UpdateTypeImpossible", False)
        if not isinstance(impossible, bool):
            raise RowError("UpdateTypeImpossible", "must be true or false")
        if impossible:
            return Skipped(line, "UpdateTypeImpossible")
        premise, hypothesis, update = text(record, "Premise"), text(record, "Hypothesis"), text(record, "Update")
        update_type = text(record, "UpdateType").strip().lower()
        if update_type not in UPDATE.labels:
            raise RowError("UpdateType", f"must be strengthener or weakener, got {update_type[:20]!r}")
        return ExampleRow(
            line=line,
            key=content_key(premise, hypothesis, update, update_type),
            source_id=str(record.get("SNLIPairId") or record.get("AtomicEventRelationId") or ""),
            premise=premise,
            hypothesis=hypothesis,
            update=update,
            update_type=update_type,
            source_label=context.label(update_type, "UpdateType") if context.labels else update_type,
            source_data={k: v for k, v in record.items() if k not in TEXTS},
        )

    def write(self, project, options: ExportOptions):
        from annotation.services.linking import written_records  # linking reaches the projects service

        task, provenance = project.task, Provenance(project)
        lines = []
        for record in written_records(project):
            pair, answer = record.pair, record.answer
            example = answer.item.example
            vote = Vote(
                answer.worker_id,
                False,
                1,
                answer.raw,
                answer.value,
                answer.reason,
                answer.seconds_spent,
                answer.started_at,
                answer.submitted_at,
                answer.late,
                answer.excluded,
                answer.assignment_id,
                answer.assignment.instrument.digest if answer.assignment and answer.assignment.instrument else None,
            )
            studio = annotation_record(task, project.options, vote, provenance)
            for name in ("value", "raw", "count", "imported"):  # the update is the record itself
                studio.pop(name)
            lines.append(
                json_line(
                    {
                        "Premise": pair.premise,
                        "Hypothesis": pair.hypothesis,
                        "Update": pair.update,
                        "UpdateType": pair.update_type,
                        "UpdateTypeImpossible": False,
                        "SourceId": example.source_id or example.key,
                        "WorkerIdAnon": provenance.annotator(answer.worker_id),
                        "ValidationPairId": record.validation_pair_id,
                        "ValidationVotes": record.votes,
                        "ValidationVerdict": record.verdict,
                        STUDIO_KEY: {"item": answer.item_id, **studio},
                    }
                )
            )
            if len(lines) == 500:
                yield "".join(lines)
                lines = []
        yield "".join(lines)

    def validate(self, stream):
        return checked_records(self.records(stream), _check_record)


SCHEMA = {
    "type": "object",
    "required": ["Premise", "Hypothesis", "Update", "UpdateType", "UpdateTypeImpossible"],
    "properties": {
        "Premise": {"type": "string", "minLength": 1},
        "Hypothesis": {"type": "string", "minLength": 1},
        "Update": {"type": "string"},
        "UpdateType": {"enum": list(UPDATE.labels)},
        "UpdateTypeImpossible": {"type": "boolean"},
        "WorkerIdAnon": {"type": ["integer", "string"]},
        "ValidationVotes": {"type": "array", "items": {"type": "integer", "minimum": -2, "maximum": 2}},
        "ValidationVerdict": {"enum": [*VERDICTS, None]},
        "ValidationPairId": {"type": ["string", "null"]},
    },
}


def _check_record(line, record):
    errors = list(schema_errors(SCHEMA, record))
    yield from errors
    if not errors and not record["UpdateTypeImpossible"] and not record["Update"].strip():
        yield RowError("Update", "is empty, but UpdateTypeImpossible is false")


FORMAT = DeltaNLI()
