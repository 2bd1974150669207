"""ChaosNLI's JSON Lines: one item per line with its label distribution from many annotators.

Fields of the release: uid, label_counter, majority_label, label_dist and label_count (in the order
[e, n, c]; alphaNLI: [1, 2], its labels written as numbers), entropy (base 2), example, old_label, old_labels.
"""

from __future__ import annotations

import math

from annotation.tasktypes.base import majority
from common.readers import RowError
from common.vocabulary import ALPHA_NLI, NLI, label_set_of
from dataset_io.formats.base import (
    STUDIO_KEY,
    ExampleRow,
    ExportOptions,
    FieldDoc,
    Format,
    ReadContext,
    checked_records,
    json_line,
    schema_errors,
    studio_fields,
    text,
)
from dataset_io.services.records import collected_summary, item_batches, vote_counts

# Derived from the votes: recomputed on export, never kept from the file.
DERIVED = ("uid", "label_counter", "label_dist", "label_count", "entropy", STUDIO_KEY)
TOLERANCE = 1e-9


class ChaosNLI(Format):
    name = "chaosnli"
    title = "ChaosNLI JSON Lines"
    extension = "jsonl"
    summary = "one item per line with the distribution of its labels"
    fields = (
        FieldDoc("uid", "text", "the item's id"),
        FieldDoc(
            "label_counter",
            "object",
            "votes per label, most common first: the imported votes where the item "
            "has any (never mixed with collected ones), else the collected answers that count",
        ),
        FieldDoc(
            "majority_label",
            "label or null",
            "imported items: the file's own majority label; collected items: "
            "the adjudicated label, else the label with most votes; null on a tie (nli_studio.tie)",
        ),
        FieldDoc(
            "label_dist",
            "list of numbers",
            "label_count divided by the votes, in the order [e, n, c] "
            "(alphaNLI [1, 2]); null on an unanswered item asked for",
        ),
        FieldDoc("label_count", "list of whole numbers", "votes per label in the same order"),
        FieldDoc("entropy", "number", "Shannon entropy of label_dist in bits; null on an unanswered item"),
        FieldDoc("example", "object", "the imported example object unchanged, else {uid, premise, hypothesis}"),
        FieldDoc(
            "old_label",
            "label or null",
            "the imported original label (ChaosNLI: the source dataset's), else the row's own label, else null",
        ),
        FieldDoc("old_labels", "list", "as imported, where the file had it"),
        FieldDoc("(other fields)", "any", "fields the imported record had beyond these, unchanged"),
        FieldDoc("nli_studio.label_source", "imported or collected", "what label_counter counts", added=True),
        FieldDoc(
            "nli_studio.tie",
            "true or false",
            "majority_label is null because labels tie for the most votes",
            added=True,
        ),
        FieldDoc("nli_studio.adjudicated", "true or false", "an author set majority_label", added=True),
        FieldDoc(
            "nli_studio.collected",
            "object",
            "the collected answers that count: label_counter, label_count, "
            "majority_label (null on a tie), tie, answers",
            added=True,
        ),
        FieldDoc("nli_studio.excluded", "whole number", "answers of workers the author excluded", added=True),
        FieldDoc(
            "nli_studio.item, pool, gold, unanswered",
            "",
            "the study's item id; data or gold (and a gold "
            "check's reference) when gold checks are asked for; true on an item without votes asked for",
            added=True,
        ),
    )

    def importable(self, task, options):
        return task.label_distributions

    def exportable(self, task, options):
        return task.label_distributions

    def parse(self, line, record, context: ReadContext):
        uid = text(record, "uid")
        example = record.get("example")
        if not isinstance(example, dict):
            raise RowError("example", "must be an object with the premise and hypothesis")
        counter = record.get("label_counter")
        if not isinstance(counter, dict) or not counter:
            raise RowError("label_counter", "must be a non-empty object of label counts")
        if "obs1" in example:  # alphaNLI: which of two hypotheses explains the observations
            label_set = ALPHA_NLI.labels
            premise = f"{text(example, 'obs1', field_name='example.obs1')} … {text(example, 'obs2', field_name='example.obs2')}"
            hypothesis = f"1: {text(example, 'hyp1', field_name='example.hyp1')} | 2: {text(example, 'hyp2', field_name='example.hyp2')}"
        else:
            label_set = NLI.labels
            premise = text(example, "premise", field_name="example.premise")
            hypothesis = text(example, "hypothesis", field_name="example.hypothesis")
        labels: list[str] = []
        for label, count in counter.items():
            name = context.label(label, f"label_counter.{label}", labels=label_set)
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise RowError(f"label_counter.{label}", "must be a whole number of votes")
            labels.extend([name] * count)
        old_label = record.get("old_label")
        source_label = "" if old_label is None else context.label(old_label, "old_label", labels=label_set)
        studio = studio_fields(record)
        kept = {name: value for name, value in record.items() if name not in DERIVED}
        if old_label is None:
            kept.pop("old_label", None)
        # The file's majority label is kept where it says more than the votes do (a tie it broke its own way).
        if "majority_label" in kept and str(kept["majority_label"]) == str(majority(labels, list(label_set)).value):
            del kept["majority_label"]
        return ExampleRow(
            line=line,
            key=f"id:{uid}",
            source_id=uid,
            premise=premise,
            hypothesis=hypothesis,
            source_label=source_label,
            source_data=kept,
            imported_labels=labels,
            label_set=label_set,
            pool=studio.get("pool", ""),
            gold=studio.get("gold"),
        )

    def write(self, project, options: ExportOptions):
        task = project.task
        labels = task.categories(project.options)
        numeric = label_set_of(labels) is ALPHA_NLI  # alphaNLI writes its labels as numbers

        def out(label):
            return int(label) if numeric and label is not None else label

        for records in item_batches(project, options.include_gold, free_text=options.free_text):
            lines = []
            for record in records:
                example = record.item.example
                source = example.source_data if example.source_format == self.name else {}
                imported, collected = record.imported, record.collected
                aggregate = record.aggregate(task)
                votes = imported or collected
                if not votes and not options.include_unanswered and not record.item.is_gold:
                    continue
                counter, counts = vote_counts(votes, labels)
                total = sum(counts)
                dist = [count / total for count in counts] if total else None
                mine = collected_summary(task, project.options, collected)
                if options.study_gold and aggregate["adjudicated"]:
                    majority = out(aggregate["value"])
                elif imported and "majority_label" in source:  # the file's own, as it wrote it
                    majority = source["majority_label"]
                elif imported:
                    majority = out(collected_summary(task, project.options, imported)["value"])
                else:
                    majority = out(aggregate["value"] if aggregate["adjudicated"] else mine["value"])
                tie = bool(total) and majority is None
                studio = {
                    "item": record.item.id,
                    "label_source": "imported" if imported else "collected",
                    "tie": tie,
                    "adjudicated": aggregate["adjudicated"] and (options.study_gold or not imported),
                    "collected": {
                        "label_counter": {str(out(k)): v for k, v in vote_counts(collected, labels)[0].items()},
                        "label_count": vote_counts(collected, labels)[1],
                        "majority_label": out(mine["value"]),
                        "tie": mine["tie"],
                        "answers": mine["answers"],
                    },
                    "excluded": record.excluded,
                }
                if not total:
                    studio["unanswered"] = True
                if options.include_gold:
                    studio.update(pool=record.pool, gold=out(record.item.gold))
                row = {
                    "uid": example.source_id or example.key,
                    "label_counter": {str(out(label)) if numeric else label: count for label, count in counter.items()},
                    "majority_label": majority,
                    "label_dist": dist,
                    "label_count": counts,
                    "entropy": -sum(p * math.log2(p) for p in dist if p > 0) if dist else None,
                    "example": source.get(
                        "example",
                        {
                            "uid": example.source_id or example.key,
                            "premise": example.premise,
                            "hypothesis": example.hypothesis,
                        },
                    ),
                    "old_label": source["old_label"] if "old_label" in source else out(example.source_label or None),
                }
                row.update(
                    {name: value for name, value in source.items() if name not in row and name != "majority_label"}
                )
                row[STUDIO_KEY] = studio
                lines.append(json_line(row))
            yield "".join(lines)

    def validate(self, stream):
        return checked_records(self.records(stream), _check_record)


LABEL = {"type": ["string", "integer"]}
SCHEMA = {
    "type": "object",
    "required": [
        "uid",
        "label_counter",
        "majority_label",
        "label_dist",
        "label_count",
        "entropy",
        "example",
        "old_label",
    ],
    "properties": {
        "uid": {"type": "string", "minLength": 1},
        "label_counter": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
        "majority_label": {"type": ["string", "integer", "null"]},
        "label_dist": {"type": ["array", "null"], "items": {"type": "number", "minimum": 0, "maximum": 1}},
        "label_count": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "entropy": {"type": ["number", "null"], "minimum": 0},
        "example": {"type": "object"},
        "old_label": {"type": ["string", "integer", "null"]},
        "old_labels": {"type": "array", "items": {"type": "string"}},
        STUDIO_KEY: {
            "type": "object",
            "properties": {
                "label_source": {"enum": ["imported", "collected"]},
                "tie": {"type": "boolean"},
                "adjudicated": {"type": "boolean"},
                "excluded": {"type": "integer", "minimum": 0},
                "unanswered": {"type": "boolean"},
                "pool": {"enum": ["data", "gold"]},
                "collected": {"type": "object"},
            },
        },
    },
}
EXAMPLE_FIELDS = {NLI.labels: ("premise", "hypothesis"), ALPHA_NLI.labels: ("obs1", "obs2", "hyp1", "hyp2")}


def _check_record(line, record):
    errors = list(schema_errors(SCHEMA, record))
    if errors:
        yield from errors
        return
    example = record["example"]
    label_set = ALPHA_NLI.labels if "obs1" in example or isinstance(record["majority_label"], int) else NLI.labels
    for name in EXAMPLE_FIELDS[label_set]:
        if not isinstance(example.get(name), str) or not example[name].strip():
            yield RowError(f"example.{name}", "is missing or empty")

    def known(value, field_name):
        if value is not None and str(value) not in label_set:
            yield RowError(field_name, f"must be one of {', '.join(label_set)}, got {value!r}")
        if label_set is ALPHA_NLI.labels and value is not None and not isinstance(value, int):
            yield RowError(field_name, f"alphaNLI writes its labels as the numbers 1 and 2, got {value!r}")

    yield from known(record["majority_label"], "majority_label")
    yield from known(record["old_label"], "old_label")
    for label in record["label_counter"]:
        if label not in label_set:
            yield RowError(f"label_counter.{label}", f"is not one of the labels {', '.join(label_set)}")
    counts = record["label_count"]
    if len(counts) != len(label_set):
        yield RowError("label_count", f"must have {len(label_set)} entries in the order {', '.join(label_set)}")
        return
    if counts != [record["label_counter"].get(label, 0) for label in label_set]:
        yield RowError("label_count", f"must be label_counter's counts in the order {', '.join(label_set)}")
    total, dist, studio = sum(counts), record["label_dist"], record.get(STUDIO_KEY, {})
    if total == 0 or dist is None:
        if not studio.get("unanswered"):
            yield RowError("label_dist", "an item without votes must be flagged nli_studio.unanswered")
        return
    if len(dist) != len(label_set) or any(abs(p - c / total) > TOLERANCE for p, c in zip(dist, counts)):
        yield RowError("label_dist", "must be label_count divided by the number of votes")
    else:
        entropy = -sum(p * math.log2(p) for p in dist if p > 0)
        if record["entropy"] is None or abs(record["entropy"] - entropy) > TOLERANCE:
            yield RowError("entropy", f"must be the entropy of label_dist in bits ({entropy:.12g})")
    majority = record["majority_label"]
    best = max(counts)
    winners = [label for label, count in zip(label_set, counts) if count == best]
    if majority is None and not studio.get("tie"):
        yield RowError("majority_label", "is null: a tie must be flagged nli_studio.tie")
    elif majority is not None and str(majority) not in winners and not studio.get("adjudicated"):
        yield RowError("majority_label", f"must be a label with the most votes ({', '.join(winners)})")


FORMAT = ChaosNLI()
