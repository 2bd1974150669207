"""JSON Lines of any fields (imported through a mapping onto id, premise, hypothesis, update, label,
probability and group), and every task type's complete export: one item per line with the example's fields,
the columns its row had, and under `nli_studio` the item's pool, status, declared aggregate, imported votes and
every answer with its provenance. Importing the export into a new study gives back its examples, items,
imported votes and (asked for) gold checks."""

from __future__ import annotations

from annotation.services import extensions
from common.readers import RowError
from dataset_io.formats import generic
from dataset_io.formats.base import (
    STUDIO_KEY,
    ExportOptions,
    FieldDoc,
    Format,
    ReadContext,
    checked_records,
    json_line,
    schema_errors,
)
from dataset_io.services.provenance import Provenance
from dataset_io.services.records import annotation_record, item_batches

ANNOTATION_FIELDS = (
    FieldDoc(
        "annotator",
        "text or null",
        "the anonymised annotator id (a keyed hash, the same in every export of the study; null for imported votes)",
    ),
    FieldDoc(
        "imported, count", "true or false, whole number", "an imported vote, and how many votes the row stands for"
    ),
    FieldDoc(
        "value, raw",
        "any",
        "the normalised answer and the answer as submitted (task types add fields such as "
        "a slider's position and probability)",
    ),
    FieldDoc("reason", "text", "the worker's optional reason"),
    FieldDoc("submitted_at, started_at", "ISO 8601 time or null", "when the page was submitted and handed out"),
    FieldDoc("seconds_spent", "number or null", "seconds on the item while its page was visible"),
    FieldDoc("page", "whole number or null", "the page (assignment) the answer came on"),
    FieldDoc("late", "true or false", "submitted after the page expired (kept)"),
    FieldDoc(
        "instrument_version",
        "text or null",
        "the first 16 hex digits of the SHA-256 of the instructions and "
        "settings the page was shown with (listed in the bundle's instrument_versions.json)",
    ),
    FieldDoc("qualification_score", "number or null", "the worker's score on the study's qualification test"),
    FieldDoc(
        "worker_reliability",
        "object or null",
        "nominal studies: the worker's reliability by annotator models fitted to the answers that count, "
        "{wawa: agreement with the majority vote, dawid_skene: accuracy from their confusion matrix}; "
        "null for imported votes, other task types, or when no model can be fitted",
    ),
    FieldDoc("worker_status", "active, blocked, suspended or null", "the worker's standing in the study now"),
    FieldDoc(
        "simulated",
        "true or false",
        "given by a simulated worker (the demo studies' answers that show every page filled in), not by a person",
    ),
    FieldDoc(
        "excluded, excluded_reason, excluded_by",
        "true or false, text, text",
        "left out of every aggregate, agreement figure and report, why, and the author who decided",
    ),
)


class JSONLines(Format):
    name = "jsonl"
    title = "JSON Lines (complete)"
    extension = "jsonl"
    summary = "one item per line with its example, declared aggregate and every answer with its provenance"
    fields = (
        FieldDoc(
            "id, premise, hypothesis, update",
            "text",
            "the example's id (the imported id, else the study's key for it) and texts, exactly as stored",
        ),
        FieldDoc("label, probability", "text or null", "the row's imported label and probability"),
        FieldDoc("group", "text or null", "the coherence group"),
        FieldDoc(
            "(other fields)",
            "any",
            "the columns the imported row had beyond the mapped ones, unchanged (one "
            "whose name is taken by a field above goes to nli_studio.source_columns)",
        ),
        FieldDoc("nli_studio.item, pool, gold", "", "the item id; data or gold; a gold check's reference", added=True),
        FieldDoc(
            "nli_studio.key, source_format",
            "text",
            "the study's key for the example (what makes a row without "
            "an id, or with an id shared by several rows, one example) and the format it was imported in",
            added=True,
        ),
        FieldDoc(
            "nli_studio.atom",
            "object or null",
            "per-atom studies: the atom's text, order, validity, effect",
            added=True,
        ),
        FieldDoc("nli_studio.update_type, status", "text", "the example's update type; the item's status", added=True),
        FieldDoc(
            "nli_studio.aggregate",
            "object",
            "the item's label and how it was made: value, method (majority, "
            "median, adjudicated), settled, tie (value null), adjudicated, answers that count, excluded",
            added=True,
        ),
        FieldDoc(
            "nli_studio.imported_votes", "list", "the imported votes as [label, count] pairs, in order", added=True
        ),
        FieldDoc(
            "nli_studio.annotations",
            "list",
            "every collected answer (excluded ones flagged) with the fields of the annotations format",
            added=True,
        ),
        FieldDoc(
            "nli_studio.reasons",
            "object",
            "with the label-variation app, where the item was tagged with reasons for disagreement: every round, {round: {a1, a2, reconciliation, "
            "agg (the taxonomy release's fields), reasons (the round's result, null while undecided), "
            "worker_tags (workers' tags with their counts, where workers tagged)}}",
            added=True,
        ),
        FieldDoc(
            "nli_studio.unanswered",
            "true",
            "on an item without any label or answer, written when asked for",
            added=True,
        ),
    )

    def importable(self, task, options):
        return True

    def exportable(self, task, options):
        return True

    def parse(self, line, record, context: ReadContext):
        return generic.parse_row(line, record, context)

    def write(self, project, options: ExportOptions):
        task, provenance = project.task, Provenance(project)
        for records in item_batches(project, options.include_gold, free_text=options.free_text, batch=200):
            added = extensions.record_parts([record.item.id for record in records])
            lines = []
            for record in records:
                item, example, atom = record.item, record.item.example, record.item.atom
                known = (
                    record.answered
                    or example.source_label
                    or example.source_probability
                    or (atom is not None and (atom.validity != atom.Validity.UNKNOWN or atom.effect is not None))
                    or item.id in added
                )
                if not (known or options.include_unanswered or item.is_gold):
                    continue
                row = {
                    "id": example.source_id or example.key,
                    "premise": example.premise,
                    "hypothesis": example.hypothesis,
                    "update": example.update,
                    "label": example.source_label or None,
                    "probability": example.source_probability or None,
                    "group": item.coherence_group or None,
                }
                clashes = {
                    name: value for name, value in example.source_data.items() if name in row or name == STUDIO_KEY
                }
                row.update({name: value for name, value in example.source_data.items() if name not in clashes})
                studio = {
                    "item": item.id,
                    "key": example.key,
                    "source_format": example.source_format,
                    "pool": record.pool,
                    "update_type": example.update_type,
                    "atom": (
                        {"text": atom.text, "order": atom.order, "validity": atom.validity, "effect": atom.effect}
                        if atom
                        else None
                    ),
                    "status": item.status,
                    "aggregate": record.aggregate(task),
                    "imported_votes": [[vote.value, vote.count] for vote in record.votes if vote.imported],
                    "annotations": [
                        annotation_record(task, project.options, vote, provenance)
                        for vote in record.votes
                        if not vote.imported
                    ],
                }
                studio.update(added.get(item.id, {}))
                if item.is_gold:
                    studio["gold"] = item.gold
                if clashes:
                    studio["source_columns"] = clashes
                if not known:
                    studio["unanswered"] = True
                row[STUDIO_KEY] = studio
                lines.append(json_line(row))
            yield "".join(lines)

    def validate(self, stream):
        return checked_records(self.records(stream), _check_record)


SCHEMA = {
    "type": "object",
    "required": ["premise"],
    "properties": {
        "premise": {"type": "string", "minLength": 1},
        STUDIO_KEY: {
            "type": "object",
            "properties": {
                "pool": {"enum": ["data", "gold"]},
                "item": {"type": "integer"},
                "aggregate": {
                    "type": "object",
                    "required": ["value", "tie", "adjudicated", "answers", "excluded"],
                    "properties": {
                        "tie": {"type": "boolean"},
                        "adjudicated": {"type": "boolean"},
                        "answers": {"type": "integer", "minimum": 0},
                        "excluded": {"type": "integer", "minimum": 0},
                    },
                },
                "annotations": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["annotator", "excluded", "submitted_at", "instrument_version"],
                        "properties": {
                            "excluded": {"type": "boolean"},
                            "annotator": {"type": ["string", "null"]},
                            "seconds_spent": {"type": ["number", "null"], "minimum": 0},
                        },
                    },
                },
                "imported_votes": {"type": "array", "items": {"type": "array", "minItems": 2, "maxItems": 2}},
            },
        },
    },
}


def _check_record(line, record):
    errors = list(schema_errors(SCHEMA, record))
    yield from errors
    studio = record.get(STUDIO_KEY)
    if errors or not studio:
        return
    aggregate = studio.get("aggregate")
    if aggregate and aggregate["tie"] and aggregate.get("value") is not None:
        yield RowError(f"{STUDIO_KEY}.aggregate.value", "must be null on a tie")
    for index, answer in enumerate(studio.get("annotations", [])):
        if answer["excluded"] and not answer.get("excluded_reason"):
            yield RowError(f"{STUDIO_KEY}.annotations[{index}].excluded_reason", "an excluded answer needs its reason")
    counted = sum(1 for a in studio.get("annotations", []) if not a["excluded"])
    imported = sum(count for _, count in studio.get("imported_votes", []))
    if aggregate and aggregate["answers"] != counted + imported:
        yield RowError(f"{STUDIO_KEY}.aggregate.answers", f"must count the answers that count ({counted + imported})")


FORMAT = JSONLines()
