"""VariErr NLI's JSON Lines (varierr.json, ACL 2024): one MNLI item per line with its round-1 explanations
(per label list, long names), the round-2 "makes sense" judgments of every explanation, the labels found to
be errors, and the item's ChaosNLI label counts.

Imported records are kept whole (Example.source_data) and written back unchanged; the ChaosNLI counts become
the item's imported votes where the study keeps label distributions. What the study collected goes under
`nli_studio` beside an imported record, or into the record's own fields on an item the file did not have.
"""

from __future__ import annotations

from collections import Counter

from common.readers import RowError
from common.vocabulary import LONG_NAMES, NLI
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
from dataset_io.services.provenance import Provenance
from dataset_io.services.records import ItemRecord, item_batches
from label_variation.services.variation import peer_majority, read_explanations
from metrics.variation import ERROR, PENDING, VERDICTS, classify_labels

LABEL_LISTS = tuple(LONG_NAMES[label] for label in NLI.labels)  # entailment, neutral, contradiction
ROUNDS = ("label_count_round_1", "label_count_round_2")


class VariErr(Format):
    name = "varierr"
    title = "VariErr NLI JSON Lines"
    extension = "jsonl"
    summary = "one item per line with each label's explanations and their round-2 judgments"
    fields = (
        FieldDoc("id", "text", "the item's id (the imported id, else the study's key for it)"),
        FieldDoc("context, statement", "text", "the premise and the hypothesis"),
        FieldDoc(
            "entailment, neutral, contradiction",
            "list of explanations",
            "the explanations given for the label, each {annotator, id, judgments [{annotator, makes_sense}], "
            "label_correction, reason (the explanation), self_corrected}: imported ones as the file had them; on "
            "an item the file did not have, the collected ones (annotator: the anonymised annotator id; id: "
            "<item>-<label>-<n>; judgments: the author's own self-check first where they gave it (annotator: the "
            "author's id, as in the release), then the linked validation study's votes under each validator's "
            "anonymised id; label_correction false; self_corrected as the release sets it, true exactly where "
            "the author's own judgment is not makes sense or is missing, and null (not in the release) while "
            "the author has not judged it and still can, a label in nli_studio.pending_labels; premise_spans, "
            "hypothesis_spans added)",
        ),
        FieldDoc("idk", "list", "the annotators who said they did not know"),
        FieldDoc(
            "label_count_round_1",
            "object",
            "{entailment, neutral, contradiction}: explanations per label, null where none",
        ),
        FieldDoc(
            "label_count_round_2",
            "object",
            "explanations judged to make sense per label kept after round 2 (by their authors in the release and "
            "on collected items whose authors self-checked; else by a strict majority of validators), null for "
            "a label not kept",
        ),
        FieldDoc("label_set_round_1", "list of labels", "the labels with an explanation"),
        FieldDoc("label_set_round_2", "list of labels", "label_set_round_1 less error_labels"),
        FieldDoc(
            "error_labels",
            "list of labels",
            "the labels found to be errors: the file's own on an imported item, else VariErr's rule over the "
            "collected judgments (docs/variation.md)",
        ),
        FieldDoc("has_ambiguity", "true or false", "label_set_round_2 keeps two or more labels"),
        FieldDoc(
            "chaosnli_labels",
            "object",
            "the item's ChaosNLI label counts {e, n, c} (out of 100), read as the item's imported "
            "distribution; on an item the file did not have, its imported votes, else the counts its imported "
            "LiveNLI rows carry, else {}",
        ),
        FieldDoc("nli_studio.item", "whole number", "the study's item id", added=True),
        FieldDoc("nli_studio.label_source", "imported or collected", "what the record's own fields hold", added=True),
        FieldDoc(
            "nli_studio.label_verdicts",
            "object",
            "{label: supported, error, undecided or pending} by the study's verdict rule (VariErr's, or this "
            "app's peer majority where the author picked it) over every explanation of the item, imported and "
            "collected; pending: a writer can still self-check it",
            added=True,
        ),
        FieldDoc(
            "nli_studio.pending_labels",
            "list of labels",
            "the labels waiting for their writers' self-check (long names): neither errors nor confirmed yet; "
            "they stay in label_set_round_2 and out of error_labels until their writers judge them or the "
            "study closes",
            added=True,
        ),
        FieldDoc(
            "nli_studio.collected",
            "object",
            "beside an imported record, what the study collected: {entailment, neutral, contradiction, idk} "
            "explanations as above, or a label study's {label_counter, answers}",
            added=True,
        ),
        FieldDoc(
            "nli_studio.excluded, pool, gold, unanswered",
            "",
            "answers of excluded workers; the pool and a gold check's reference when asked for; true on an item "
            "asked for without any answer",
            added=True,
        ),
    )

    def importable(self, task, options):
        return task.explains_labels or (task.label_distributions and mnli_pairs(task, options))

    exportable = importable

    def parse(self, line, record, context: ReadContext):
        error = next(iter(_check_record(line, record)), None)
        if error is not None:
            raise error
        studio = studio_fields(record)
        votes = [label for label, count in record["chaosnli_labels"].items() for _ in range(count)]
        return ExampleRow(
            line=line,
            key=f"id:{record['id']}",
            source_id=record["id"],
            premise=record["context"],
            hypothesis=record["statement"],
            source_data={name: value for name, value in record.items() if name != STUDIO_KEY},
            imported_labels=votes,
            label_set=NLI.labels,
            pool=studio.get("pool", ""),
            gold=studio.get("gold"),
        )

    def write(self, project, options: ExportOptions):
        task, provenance = project.task, Provenance(project)
        for records in item_batches(project, options.include_gold, free_text=options.free_text):
            read = read_explanations(project, [record.item.example.key for record in records])
            verdicts = classify_labels(read.explanations, peer_majority(project))
            judged = _judgments(read.explanations)
            lines = []
            for record in records:
                item, example = record.item, record.item.example
                key_verdicts = verdicts.get(example.key, {})
                if task.explains_labels:
                    pending = {label for label in NLI.labels if key_verdicts.get(label) == PENDING}
                    collected = _explained(task, record, provenance, judged, pending)
                    answered = any(collected[name] for name in (*LABEL_LISTS, "idk"))
                else:
                    labels = record.collected
                    collected = {"label_counter": dict(Counter(labels).most_common()), "answers": len(labels)}
                    answered = bool(labels)
                imported = example.source_format == self.name
                if not (imported or answered or options.include_unanswered or item.is_gold):
                    continue
                studio: dict = {
                    "item": item.id,
                    "label_source": "imported" if imported else "collected",
                    "label_verdicts": key_verdicts,
                    "pending_labels": [LONG_NAMES[label] for label in NLI.labels if key_verdicts.get(label) == PENDING],
                    "excluded": record.excluded,
                }
                if imported:
                    row = dict(example.source_data)
                    if answered:
                        studio["collected"] = collected
                else:
                    chaosnli = Counter(record.imported) or read.chaosnli.get(example.key, {})
                    row = _record_of(record, collected if task.explains_labels else {}, key_verdicts, chaosnli)
                    if not task.explains_labels and answered:
                        studio["collected"] = collected
                    if not answered:
                        studio["unanswered"] = True
                if options.include_gold:
                    studio.update(pool=record.pool, gold=item.gold)
                row[STUDIO_KEY] = studio
                lines.append(json_line(row))
            yield "".join(lines)

    def validate(self, stream):
        return checked_records(self.records(stream), _check_record)


def _judgments(explained) -> dict:
    """{(example key, label, worker id): (the author's own judgment or None, [(validator's anonymised id,
    their judgment), ...])} "makes sense" of the collected explanations among these (as the one reader of
    explanations, label_variation.services.variation, gives them)."""
    judged = {}
    for explanation in explained:
        if explanation.author.startswith("worker:"):
            worker = int(explanation.author.removeprefix("worker:"))
            judged[explanation.item_key, explanation.label, worker] = (
                explanation.self_judgment,
                list(zip(explanation.peer_judges, explanation.peer_judgments, strict=True)),
            )
    return judged


def _explained(task, record: ItemRecord, provenance: Provenance, judged: dict, pending: set) -> dict:
    """The item's collected answers as VariErr lists: one explanation per label an answer gives, and the
    annotators who said they did not know. pending: the labels whose writers can still self-check them."""
    lists: dict = {name: [] for name in (*LABEL_LISTS, "idk")}
    key = record.item.example.key
    for vote in record.votes:
        if vote.imported or vote.excluded:
            continue
        annotator = provenance.annotator(vote.worker_id)
        if vote.value.get("idk"):
            lists["idk"].append(annotator)
        given = task.explained_labels(vote.value)
        for label in NLI.labels:
            explained = given.get(label)
            if explained is None:
                continue
            entries = lists[LONG_NAMES[label]]
            own, peers = judged.get((key, label, vote.worker_id), (None, ()))
            entries.append(
                {
                    "annotator": annotator,
                    "id": f"{record.item.id}-{LONG_NAMES[label]}-{len(entries) + 1}",
                    # The author's self-check first, under their own id as in the release; then the validators'.
                    "judgments": ([] if own is None else [{"annotator": annotator, "makes_sense": own}])
                    + [{"annotator": judge, "makes_sense": makes_sense} for judge, makes_sense in peers],
                    "label_correction": False,
                    "reason": explained["explanation"],
                    # The release's meaning: the author did not confirm it (judged it not to make sense, or
                    # gave no judgment once self-checks closed); null while its author can still self-check it.
                    "self_corrected": None if own is None and label in pending else own is not True,
                    "premise_spans": explained.get("premise_spans", []),
                    "hypothesis_spans": explained.get("hypothesis_spans", []),
                }
            )
    return lists


def _record_of(record: ItemRecord, lists: dict, verdicts: dict, chaosnli: dict) -> dict:
    """A VariErr record of an item the file did not have: its collected explanations (none in a label
    study), the rounds as VariErr counts them, the verdicts of VariErr's rule, its ChaosNLI counts."""
    example = record.item.example
    entries = {name: lists.get(name, []) for name in LABEL_LISTS}
    round_one = [name for name in LABEL_LISTS if entries[name]]
    errors = [LONG_NAMES[label] for label in NLI.labels if verdicts.get(label) == ERROR]
    round_two = [name for name in round_one if name not in errors]

    self_checked = any(
        judgment["annotator"] == entry["annotator"]
        for name in LABEL_LISTS
        for entry in entries[name]
        for judgment in entry["judgments"]
    )

    def made_sense(name: str) -> int:
        """Explanations their authors judged to make sense where the item's authors self-checked (VariErr's
        count), else those a strict majority of their validators judged to make sense."""
        if self_checked:
            return sum(
                any(j["annotator"] == entry["annotator"] and j["makes_sense"] for j in entry["judgments"])
                for entry in entries[name]
            )
        return sum(
            2 * sum(judgment["makes_sense"] for judgment in entry["judgments"]) > len(entry["judgments"])
            for entry in entries[name]
        )

    return {
        "id": example.source_id or example.key,
        "context": example.premise,
        "statement": example.hypothesis,
        **entries,
        "idk": lists.get("idk", []),
        "label_count_round_1": {name: float(len(entries[name])) if entries[name] else None for name in LABEL_LISTS},
        "label_count_round_2": {name: float(made_sense(name)) if name in round_two else None for name in LABEL_LISTS},
        "label_set_round_1": round_one,
        "label_set_round_2": round_two,
        "error_labels": errors,
        "has_ambiguity": len(round_two) > 1,
        "chaosnli_labels": {label: chaosnli[label] for label in NLI.labels if chaosnli.get(label)},
    }


LONG_LABEL = {"enum": list(LABEL_LISTS)}
ANNOTATOR = {"type": ["integer", "string", "null"]}
EXPLANATION = {
    "type": "object",
    "required": ["annotator", "id", "judgments", "label_correction", "reason", "self_corrected"],
    "properties": {
        "annotator": {"type": ["integer", "string"]},
        "id": {"type": "string", "minLength": 1},
        "judgments": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["annotator", "makes_sense"],
                "properties": {"annotator": ANNOTATOR, "makes_sense": {"type": "boolean"}},
            },
        },
        "label_correction": {"type": "boolean"},
        "reason": {"type": "string", "minLength": 1},
        "self_corrected": {"type": ["boolean", "null"]},  # null: its author can still self-check it
        "premise_spans": {"type": "array"},
        "hypothesis_spans": {"type": "array"},
    },
}
COUNTS = {
    "type": "object",
    "required": list(LABEL_LISTS),
    "additionalProperties": False,
    "properties": {name: {"type": ["number", "null"], "minimum": 0} for name in LABEL_LISTS},
}
LABEL_SET = {"type": "array", "items": LONG_LABEL, "uniqueItems": True}
SCHEMA = {
    "type": "object",
    "required": [
        "id",
        "context",
        "statement",
        *LABEL_LISTS,
        "idk",
        *ROUNDS,
        "label_set_round_1",
        "label_set_round_2",
        "error_labels",
        "has_ambiguity",
        "chaosnli_labels",
    ],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "context": {"type": "string", "minLength": 1, "pattern": r"\S"},
        "statement": {"type": "string", "minLength": 1, "pattern": r"\S"},
        **{name: {"type": "array", "items": EXPLANATION} for name in LABEL_LISTS},
        "idk": {"type": "array", "items": {"type": ["integer", "string"]}},
        **dict.fromkeys(ROUNDS, COUNTS),
        "label_set_round_1": LABEL_SET,
        "label_set_round_2": LABEL_SET,
        "error_labels": LABEL_SET,
        "has_ambiguity": {"type": "boolean"},
        "chaosnli_labels": {
            "type": "object",
            "propertyNames": {"enum": list(NLI.labels)},
            "additionalProperties": {"type": "integer", "minimum": 0},
        },
        STUDIO_KEY: {
            "type": "object",
            "properties": {
                "label_source": {"enum": ["imported", "collected"]},
                "label_verdicts": {
                    "type": "object",
                    "additionalProperties": {"enum": list(VERDICTS)},
                },
                "pending_labels": LABEL_SET,
                "excluded": {"type": "integer", "minimum": 0},
                "unanswered": {"type": "boolean"},
                "pool": {"enum": ["data", "gold"]},
                "collected": {"type": "object"},
            },
        },
    },
}


def _check_record(line, record):
    """The published shape (JSON Schema), then what ties the fields of one record together."""
    errors = list(schema_errors(SCHEMA, record))
    if errors:
        yield from errors
        return
    given = [name for name in LABEL_LISTS if record[name]]
    if set(record["label_set_round_1"]) != set(given):
        yield RowError("label_set_round_1", f"must name the labels with explanations ({', '.join(given) or 'none'})")
    for name in LABEL_LISTS:
        count = record["label_count_round_1"][name]
        if (count or 0) != len(record[name]) or (count == 0):
            yield RowError(
                f"label_count_round_1.{name}",
                f"must be the number of {name} explanations ({len(record[name])}), null for none",
            )
        kept = name in record["label_set_round_2"]
        if (record["label_count_round_2"][name] is None) == kept:
            yield RowError(
                f"label_count_round_2.{name}", "must be null exactly where the label is not in label_set_round_2"
            )
        seen = set()
        for index, explanation in enumerate(record[name]):
            judges = [
                judgment["annotator"] for judgment in explanation["judgments"] if judgment["annotator"] is not None
            ]
            if len(set(judges)) != len(judges):
                yield RowError(f"{name}[{index}].judgments", "judges the explanation twice by one annotator")
            if explanation["id"] in seen:
                yield RowError(f"{name}[{index}].id", f"repeats the id {explanation['id']!r}")
            seen.add(explanation["id"])
    stray = set(record["error_labels"]) - set(record["label_set_round_1"])
    if stray:
        yield RowError("error_labels", f"names labels without explanations: {', '.join(sorted(stray))}")
    expected = [name for name in record["label_set_round_1"] if name not in record["error_labels"]]
    if set(record["label_set_round_2"]) != set(expected):
        yield RowError(
            "label_set_round_2", f"must be label_set_round_1 less error_labels ({', '.join(expected) or 'none'})"
        )
    if record["has_ambiguity"] != (len(record["label_set_round_2"]) > 1):
        yield RowError("has_ambiguity", "must be true exactly where label_set_round_2 keeps two or more labels")


FORMAT = VariErr()
