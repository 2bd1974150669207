"""SNLI's JSON Lines, in its original shape (sentence1, sentence2, gold_label, annotator_labels, pairID,
captionID, parses) or as premise / hypothesis / label rows. Exports write the original shape."""

from __future__ import annotations

from common.readers import RowError
from common.vocabulary import LONG_NAMES, NLI, NO_GOLD, long_name, snli_gold_label
from dataset_io.formats.base import (
    STUDIO_KEY,
    ExampleRow,
    ExportOptions,
    FieldDoc,
    Format,
    ReadContext,
    checked_records,
    content_key,
    json_line,
    schema_errors,
    studio_fields,
    text,
)
from dataset_io.services.provenance import Provenance
from dataset_io.services.records import item_batches

ORIGINAL = ("sentence1", "sentence2", "gold_label", "annotator_labels", "pairID")
SIMPLE = ("premise", "hypothesis", "label", "id")
LONG_LABELS = tuple(LONG_NAMES.values())


class SNLI(Format):
    name = "snli"
    title = "SNLI JSON Lines"
    extension = "jsonl"
    summary = "one premise-hypothesis pair per line with its annotators' labels and SNLI's gold label"
    fields = (
        FieldDoc("sentence1, sentence2", "text", "the premise and the hypothesis, exactly as stored"),
        FieldDoc(
            "annotator_labels",
            "list of labels",
            "the imported votes in their order where the pair had any "
            "(never mixed with collected ones), else the collected answers that count, in the order given "
            "(a validation study's: the writer's label first); long names",
        ),
        FieldDoc(
            "gold_label",
            "label or -",
            "the imported gold label where the pair had one, else SNLI's rule over "
            "annotator_labels (a label 3 annotators gave with none as many, else -) unless an author adjudicated",
        ),
        FieldDoc("pairID", "text", "the imported id, else the study's key for the pair"),
        FieldDoc("captionID, (other fields)", "any", "fields the imported record had beyond these, unchanged"),
        FieldDoc(
            "nli_studio.label_source", "imported or collected", "what annotator_labels and gold_label hold", added=True
        ),
        FieldDoc(
            "nli_studio.annotators",
            "list",
            "the anonymised annotator of each of annotator_labels (null for imported votes)",
            added=True,
        ),
        FieldDoc("nli_studio.adjudicated", "true or false", "an author set gold_label", added=True),
        FieldDoc(
            "nli_studio.collected",
            "object",
            "where the pair had imported labels too: the collected answers "
            "that count (annotator_labels, annotators, gold_label by SNLI's rule)",
            added=True,
        ),
        FieldDoc(
            "nli_studio.excluded, item, pool, gold, unanswered",
            "",
            "answers of excluded workers; the study's "
            "item id; the pool and a gold check's reference when asked for; true on an item asked for without any "
            "label",
            added=True,
        ),
    )

    def importable(self, task, options):
        return not task.uses_updates

    def exportable(self, task, options):
        return task.label_distributions and task.categories(options) == list(NLI.labels)

    def parse(self, line, record, context: ReadContext):
        original = "sentence1" in record
        premise = text(record, "sentence1" if original else "premise")
        hypothesis = text(record, "sentence2" if original else "hypothesis")
        label_field = "gold_label" if original else "label"
        label = _label(context, text(record, label_field), label_field)
        votes = record.get("annotator_labels", [])
        if not isinstance(votes, list):
            raise RowError("annotator_labels", "must be a list of labels")
        votes = [_label(context, vote, f"annotator_labels[{index}]") for index, vote in enumerate(votes)]
        pair_id = str(record.get("pairID", "") or record.get("id", "") or "")
        studio = studio_fields(record)
        kept = ORIGINAL if original else SIMPLE
        return ExampleRow(
            line=line,
            key=f"id:{pair_id}" if pair_id else content_key(premise, hypothesis),
            source_id=pair_id,
            premise=premise,
            hypothesis=hypothesis,
            source_label=label,
            source_data={name: value for name, value in record.items() if name not in kept and name != STUDIO_KEY},
            imported_labels=[vote for vote in votes if vote != NO_GOLD],
            label_set=NLI.labels,
            ordered_votes=True,
            pool=studio.get("pool", ""),
            gold=studio.get("gold"),
        )

    def write(self, project, options: ExportOptions):
        provenance = Provenance(project)
        for records in item_batches(project, options.include_gold, free_text=options.free_text):
            lines = []
            for record in records:
                item, example = record.item, record.item.example
                imported_gold = example.source_label if example.origin_id is None else ""
                collected_votes = [vote for vote in record.votes if not vote.imported and not vote.excluded]
                collected = [vote.value for vote in collected_votes]
                annotators = [provenance.annotator(vote.worker_id) for vote in collected_votes]
                collected_gold = snli_gold_label(collected, item.adjudicated)
                studio = {"item": item.id, "adjudicated": item.adjudicated is not None, "excluded": record.excluded}
                if record.imported or imported_gold:
                    labels, gold = record.imported, imported_gold or snli_gold_label(record.imported)
                    studio.update(label_source="imported", annotators=[None] * len(labels))
                    if collected or item.adjudicated is not None:
                        studio["collected"] = {
                            "annotator_labels": [long_name(v) for v in collected],
                            "annotators": annotators,
                            "gold_label": long_name(collected_gold),
                        }
                    studio["adjudicated"] = False  # an imported gold label is never replaced
                elif collected or item.adjudicated is not None or options.include_unanswered or item.is_gold:
                    labels, gold = collected, collected_gold
                    studio.update(label_source="collected", annotators=annotators)
                    if not collected and item.adjudicated is None:
                        studio["unanswered"] = True
                else:
                    continue
                if options.include_gold:
                    studio.update(pool=record.pool, gold=item.gold)
                row = {
                    "annotator_labels": [long_name(vote) for vote in labels],
                    "gold_label": long_name(gold),
                    "pairID": example.source_id or example.key,
                    "sentence1": example.premise,
                    "sentence2": example.hypothesis,
                }
                if example.source_format == self.name:  # the record's own other fields (captionID, parses)
                    row.update({name: value for name, value in example.source_data.items() if name not in row})
                row[STUDIO_KEY] = studio
                lines.append(json_line(row))
            yield "".join(lines)

    def validate(self, stream):
        return checked_records(self.records(stream), _check_record)


def _label(context: ReadContext, value, field_name: str) -> str:
    """An SNLI label: e / n / c (any spelling), or "-" where the annotators reached no majority."""
    if str(value).strip() == NO_GOLD:
        return NO_GOLD
    return context.label(value, field_name)


GOLD = {"enum": [*LONG_LABELS, NO_GOLD]}
ORIGINAL_SCHEMA = {
    "type": "object",
    "required": ["sentence1", "sentence2", "gold_label", "annotator_labels", "pairID"],
    "properties": {
        "sentence1": {"type": "string", "minLength": 1},
        "sentence2": {"type": "string", "minLength": 1},
        "gold_label": GOLD,
        "annotator_labels": {"type": "array", "items": {"enum": list(LONG_LABELS)}},
        "pairID": {"type": "string", "minLength": 1},
        "captionID": {"type": "string"},
        STUDIO_KEY: {
            "type": "object",
            "properties": {
                "label_source": {"enum": ["imported", "collected"]},
                "adjudicated": {"type": "boolean"},
                "annotators": {"type": "array"},
                "excluded": {"type": "integer", "minimum": 0},
                "pool": {"enum": ["data", "gold"]},
                "unanswered": {"type": "boolean"},
            },
        },
    },
}
SIMPLE_SCHEMA = {
    "type": "object",
    "required": ["premise", "hypothesis", "label"],
    "properties": {
        "premise": {"type": "string", "minLength": 1},
        "hypothesis": {"type": "string", "minLength": 1},
        "label": GOLD,
    },
}


def _check_record(line, record):
    original = "sentence1" in record or "sentence2" in record
    errors = list(schema_errors(ORIGINAL_SCHEMA if original else SIMPLE_SCHEMA, record))
    yield from errors
    if errors or not original:
        return
    votes = [label[0] for label in record["annotator_labels"]]  # long names: their first letter is the label
    studio = record.get(STUDIO_KEY, {})
    if votes and not studio.get("adjudicated"):
        expected = long_name(snli_gold_label(votes))
        if record["gold_label"] != expected:
            yield RowError("gold_label", f"must be SNLI's gold label of annotator_labels ({expected})")
    if "annotators" in studio and len(studio["annotators"]) != len(votes):
        yield RowError(f"{STUDIO_KEY}.annotators", "must name one annotator for each of annotator_labels")


FORMAT = SNLI()
