"""The JSON Lines of "Investigating reasons for disagreement in natural language inference" (Jiang & de
Marneffe, TACL 2022): one MNLI pair per line with the reasons for disagreement its annotators tagged.
Round 1 gives one annotator's tags (`a1`); round 2 two annotators' (`a1`, `a2`), their `reconciliation`
where they discussed a disagreement, and `agg`: the reconciled tags, else the tags both gave.

Imported records are kept whole (Example.source_data) and written back unchanged. The tags are the
release's strings (e.g. "Probabilistic", "Interrogative.", "N/A"); any non-empty text is read, since a study
may use its own taxonomy. A record this app exported carries every round tagged in its study under
nli_studio (`round`, `reasons`, `worker_tags`): importing it keeps that part too (source_data's nli_studio), so
the new study reads, reports and exports round 1 and the later rounds, not only the record's own fields.
"""

from __future__ import annotations

from collections import Counter

from common.readers import RowError
from dataset_io.formats.base import (
    STUDIO_KEY,
    ExampleRow,
    ExportOptions,
    FieldDoc,
    Format,
    ReadContext,
    checked_records,
    json_line,
    mnli_pairs,
    schema_errors,
    studio_fields,
)
from dataset_io.services.records import item_batches
from label_variation.services.reasons import ROUNDS, export_rounds

TAGGERS = ("a1", "a2")


class Taxonomy(Format):
    name = "taxonomy"
    title = "NLI disagreement taxonomy JSON Lines (TACL 2022)"
    extension = "jsonl"
    summary = "one premise-hypothesis pair per line with its annotators' reasons for disagreement"
    fields = (
        FieldDoc("pairID", "text", "the pair's id (the imported id, else the study's key for it)"),
        FieldDoc("premise, hypothesis", "text", "the pair, exactly as stored"),
        FieldDoc(
            "a1",
            "list of tags",
            "the first annotator's reasons for disagreement (round 1: the only one); on a pair tagged in the study, "
            "its latest round's first tagger, else every tag its workers gave",
        ),
        FieldDoc("a2", "list of tags", "round 2: the second annotator's reasons"),
        FieldDoc(
            "reconciliation",
            "list of tags or null",
            "round 2: the reasons the two agreed on after discussing a disagreement; null where they did not meet",
        ),
        FieldDoc("agg", "list of tags", "round 2: reconciliation where there is one, else the tags in both a1 and a2"),
        FieldDoc("(other fields)", "any", "fields the imported record had beyond these, unchanged"),
        FieldDoc("nli_studio.item", "whole number", "the study's item id", added=True),
        FieldDoc(
            "nli_studio.collected",
            "object",
            "the study's own label answers of the pair that count: {label_counter, answers}",
            added=True,
        ),
        FieldDoc(
            "nli_studio.round, worker_tags, reasons",
            "",
            "on a pair tagged in the study (any study: label answers, explanations or others): the round its "
            "own fields hold (the latest), the workers' tags with their counts, and every round tagged here, "
            "{round: {a1, a2, reconciliation, agg}} (round 1 is kept once round 2 exists); importing the file "
            "keeps them, so the study it goes to has every round",
            added=True,
        ),
        FieldDoc(
            "nli_studio.excluded, pool, gold, unanswered",
            "",
            "answers of excluded workers; the pool and a gold check's reference when asked for; true on a pair "
            "asked for without tags (a1 then empty)",
            added=True,
        ),
    )

    def importable(self, task, options):
        return task.label_distributions and not task.explains_labels and mnli_pairs(task, options)

    def exportable(self, task, options):
        """Any study of whole pairs may carry reasons (tagged by its authors or workers), whatever its answers;
        not a writing study (its items have no hypothesis yet) nor one item per atom."""
        kept = task.source_fields(options)
        return not task.per_atom and (kept is None or "hypothesis" in kept)

    def parse(self, line, record, context: ReadContext):
        error = next(iter(_check_record(line, record)), None)
        if error is not None:
            raise error
        studio = studio_fields(record)
        source_data = {name: value for name, value in record.items() if name != STUDIO_KEY}
        tagged = {name: studio[name] for name in KEPT_ROUNDS if name in studio}
        if tagged:  # the rounds tagged in the study this record was exported from
            source_data[STUDIO_KEY] = tagged
        return ExampleRow(
            line=line,
            key=f"id:{record['pairID']}",
            source_id=record["pairID"],
            premise=record["premise"],
            hypothesis=record["hypothesis"],
            source_data=source_data,
            pool=studio.get("pool", ""),
            gold=studio.get("gold"),
        )

    def write(self, project, options: ExportOptions):
        for records in item_batches(project, options.include_gold, free_text=options.free_text):
            tagged = export_rounds(record.item.id for record in records)
            lines = []
            for record in records:
                item, example = record.item, record.item.example
                imported = example.source_format == self.name
                # Label answers are counted; other answers (explanations, probabilities) are in other formats.
                labels = [label for label in record.collected if isinstance(label, str)]
                rounds = tagged.get(item.id, {})
                if not (imported or rounds or options.include_unanswered or item.is_gold):
                    continue
                studio: dict = {"item": item.id, "excluded": record.excluded}
                row = {"pairID": example.source_id or example.key, "premise": example.premise}
                row["hypothesis"] = example.hypothesis
                if imported:
                    row = dict(example.source_data)
                    studio.update(row.pop(STUDIO_KEY, {}))  # the rounds the imported record carried
                elif rounds:
                    number = max(rounds)
                    row.update(_release_part(rounds[number]))
                    studio["round"] = number
                    if "worker_tags" in rounds[number]:
                        studio["worker_tags"] = rounds[number]["worker_tags"]
                else:
                    row["a1"] = []
                    studio["unanswered"] = True
                if rounds:  # every round tagged here, the latest one's also in the record's own fields
                    carried = {int(number): fields for number, fields in studio.get("reasons", {}).items()}
                    tagged_here = {number: _release_part(fields) for number, fields in rounds.items()}
                    studio["reasons"] = dict(sorted({**carried, **tagged_here}.items()))
                if labels:
                    studio["collected"] = {"label_counter": dict(Counter(labels).most_common()), "answers": len(labels)}
                if options.include_gold:
                    studio.update(pool=record.pool, gold=item.gold)
                row[STUDIO_KEY] = studio
                lines.append(json_line(row))
            yield "".join(lines)

    def validate(self, stream):
        return checked_records(self.records(stream), _check_record)


def _release_part(fields: dict) -> dict:
    """A round's release fields (a1, a2, reconciliation, agg) from export_rounds' entry."""
    return {name: fields[name] for name in ("a1", *ROUND_TWO) if name in fields}


TAGS = {"type": "array", "items": {"type": "string", "minLength": 1, "pattern": r"\S"}, "uniqueItems": True}
ROUND = {
    "type": "object",
    "required": ["a1"],
    "properties": {"a1": TAGS, "a2": TAGS, "reconciliation": {**TAGS, "type": ["array", "null"]}, "agg": TAGS},
    "additionalProperties": False,
}
KEPT_ROUNDS = ("round", "reasons", "worker_tags")  # nli_studio's part an import keeps
SCHEMA = {
    "type": "object",
    "required": ["pairID", "premise", "hypothesis", "a1"],
    "properties": {
        "pairID": {"type": "string", "minLength": 1},
        "premise": {"type": "string", "minLength": 1, "pattern": r"\S"},
        "hypothesis": {"type": "string", "minLength": 1, "pattern": r"\S"},
        "a1": TAGS,
        "a2": TAGS,
        "reconciliation": {**TAGS, "type": ["array", "null"]},
        "agg": TAGS,
        STUDIO_KEY: {
            "type": "object",
            "properties": {
                "excluded": {"type": "integer", "minimum": 0},
                "unanswered": {"type": "boolean"},
                "pool": {"enum": ["data", "gold"]},
                "collected": {"type": "object"},
                "round": {"enum": list(ROUNDS)},
                "reasons": {
                    "type": "object",
                    "propertyNames": {"enum": [str(number) for number in ROUNDS]},
                    "additionalProperties": ROUND,
                },
                "worker_tags": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}},
            },
        },
    },
}
ROUND_TWO = ("a2", "reconciliation", "agg")


def _check_record(line, record):
    """The published shape, then the rounds: a round-2 record has all of a2, reconciliation and agg, and agg
    is the reconciliation where there is one, else the tags both annotators gave; so has each round an export
    of this app carries (nli_studio.reasons)."""
    errors = list(schema_errors(SCHEMA, record))
    if errors:
        yield from errors
        return
    studio = record.get(STUDIO_KEY, {})
    if not record["a1"] and not studio.get("unanswered"):
        yield RowError("a1", "must give at least one tag")
    yield from _round_errors(record, "")
    for number, fields in studio.get("reasons", {}).items():
        yield from _round_errors(fields, f"{STUDIO_KEY}.reasons[{number}].")  # as schema_errors names them


def _round_errors(fields: dict, prefix: str):
    present = [name for name in ROUND_TWO if name in fields]
    if present and len(present) < len(ROUND_TWO):
        missing = ", ".join(name for name in ROUND_TWO if name not in fields)
        needs = f"a round-2 record needs {', '.join(ROUND_TWO)}; it lacks {missing}"
        yield RowError(prefix + missing.split(", ")[0], needs)
        return
    if present:
        reconciled = fields["reconciliation"]
        expected = set(reconciled) if reconciled is not None else set(fields["a1"]) & set(fields["a2"])
        if set(fields["agg"]) != expected:
            rule = "reconciliation" if reconciled is not None else "the tags in both a1 and a2"
            yield RowError(prefix + "agg", f"must be {rule} ({', '.join(sorted(expected)) or 'none'})")


FORMAT = Taxonomy()
