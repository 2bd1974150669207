"""Rows of any columns, mapped onto the fields an example has: what the jsonl and csv formats read.

Fields: id, premise, hypothesis, update, label (the row's label: a label of the study, through the vocabulary
or the import's label mapping), probability (a reference probability, U-SNLI's unli) and group (a coherence
group). A mapping names the column of each field; a field left out is read from the column of its own name.
Every other column is kept unchanged and written back by the study's jsonl export.
"""

from __future__ import annotations

from common.readers import RowError
from dataset_io.formats.atoms import parse_atom
from dataset_io.formats.base import ExampleRow, ReadContext, content_key, probability_text, studio_fields, text

FIELDS = ("id", "premise", "hypothesis", "update", "label", "probability", "group")


def full_mapping(mapping: dict[str, str] | None) -> dict[str, str]:
    """{field: column} for every field; ValueError naming a field that does not exist."""
    unknown = set(mapping or {}) - set(FIELDS)
    if unknown:
        raise ValueError(
            f"mapping names unknown field(s) {', '.join(sorted(unknown))}; the fields are {', '.join(FIELDS)}"
        )
    return {**{name: name for name in FIELDS}, **(mapping or {})}


def required_columns(context: ReadContext) -> tuple[str, ...]:
    mapping = full_mapping(context.mapping)
    return (mapping["premise"],) + ((mapping["hypothesis"],) if context.hypothesis_required else ())


def parse_row(line: int, record: dict, context: ReadContext) -> ExampleRow:
    mapping = full_mapping(context.mapping)
    premise = text(record, mapping["premise"])
    hypothesis = text(record, mapping["hypothesis"], required=context.hypothesis_required)
    update = text(record, mapping["update"], required=False)
    source_id = text(record, mapping["id"], required=False)
    label = text(record, mapping["label"], required=False)
    probability = text(record, mapping["probability"], required=False)
    studio = studio_fields(record)
    atom = studio.get("atom")
    source_data = {k: v for k, v in record.items() if k not in set(mapping.values()) | {"nli_studio"}}
    source_data.update(studio.get("source_columns") or {})
    key = studio.get("key")
    if key is not None and (not isinstance(key, str) or not key.strip()):
        raise RowError("nli_studio.key", "must be text")
    row = ExampleRow(
        line=line,
        key=key or (f"id:{source_id}" if source_id else content_key(premise, hypothesis, update)),
        source_id=source_id,
        premise=premise,
        hypothesis=hypothesis,
        update=update,
        update_type=str(studio.get("update_type") or ""),
        source_label=context.label(label, mapping["label"]) if label else "",
        source_probability=probability_text(probability, mapping["probability"]) if probability else "",
        source_data=source_data,
        group=text(record, mapping["group"], required=False)[:100],
        source_format=str(studio.get("source_format") or ""),
        pool="" if atom else studio.get("pool", ""),
        gold=None if atom else studio.get("gold"),
        atoms=[
            parse_atom(
                {**atom, "nli_studio": {k: studio[k] for k in ("pool", "gold") if k in studio}}, "nli_studio.atom"
            )
        ]
        if atom
        else [],
    )
    votes = studio.get("imported_votes")
    if votes:
        if not isinstance(votes, list) or not all(isinstance(v, list) and len(v) == 2 for v in votes):
            raise RowError("nli_studio.imported_votes", "must be a list of [label, count] pairs")
        labels = []
        for index, (value, count) in enumerate(votes):
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise RowError(f"nli_studio.imported_votes[{index}]", "the count must be a whole number from 1")
            labels += [context.label(value, f"nli_studio.imported_votes[{index}]")] * count
        row.imported_labels, row.label_set = labels, context.labels
        row.ordered_votes = all(count == 1 for _, count in votes)
    return row
