"""Dataset exports, streamed: each format is a generator of text chunks read from the database in
keyset-paginated batches, so memory stays flat whatever the project's size.

usnli     CSV id,pre,hyp,nli,unli (imported values unchanged; collected items: the final probability)
chaosnli  JSONL with ChaosNLI's fields, counts recomputed from the stored votes
snli      JSONL in SNLI's original shape: sentence1, sentence2, gold_label (3 of 5 votes), annotator_labels, pairID
dnli      JSONL in delta-NLI's shape, one written update per line (Premise, Hypothesis, Update, UpdateType) with
          its validation (writing projects)
atoms     JSONL, one example per line with its atoms, their gold fields and collected labels
jsonl     JSONL, one item per line with every raw annotation and its timings
csv       CSV, one item per line with its final label, for spreadsheets: a text cell that a spreadsheet
          would run as a formula is neutralised (below); the dataset formats keep every text exactly
"""
from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from typing import Iterator

from annotation.models import Annotation, AuditEntry, Example, Item, Project
from annotation.services import audit
from annotation.services.linking import written_records
from annotation.services.redundancy import votes_in_order
from common.vocabulary import ALPHA_NLI, NLI, USNLI_NUMBERING, label_set_of, long_name, snli_gold_label

FORMATS = ("usnli", "chaosnli", "snli", "dnli", "atoms", "jsonl", "csv")
CSV_FORMATS = ("usnli", "csv")
EXAMPLE_FORMATS = ("atoms",)  # one record per example rather than per item
BATCH = 500


class ExportError(ValueError):
    """An export that cannot be made as asked; raised before anything is streamed."""


def content_type(fmt: str) -> str:
    return "text/csv" if fmt in CSV_FORMATS else "application/x-ndjson"


def file_name(project: Project, fmt: str) -> str:
    """One extension: demo-slider-usnli.csv, demo-slider.csv, demo-nli-chaosnli.jsonl, demo-nli.jsonl."""
    stem = project.slug if fmt in ("csv", "jsonl") else f"{project.slug}-{fmt}"
    return f"{stem}.{'csv' if fmt in CSV_FORMATS else 'jsonl'}"


def check_format(project: Project, fmt: str) -> None:
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    fitting = project.task.export_formats_for(project.options)
    if fmt not in fitting:
        raise ExportError(f"the {fmt} format does not fit this {project.task.label} project; choose one of "
                          f"{', '.join(fitting)}")
    if fmt == "snli" and project.task.categories(project.options) != list(NLI.labels):
        raise ExportError("the snli format needs the labels entailment / neutral / contradiction")


def export(project: Project, fmt: str) -> Iterator[str]:
    """The export's text chunks. The format is checked here, before the first chunk, so a refused export
    is an error response and never a stream that breaks off."""
    check_format(project, fmt)
    writers = {"usnli": _usnli, "chaosnli": _chaosnli, "snli": _snli, "dnli": _dnli, "atoms": _atoms, "jsonl": _jsonl,
               "csv": _csv}
    return writers[fmt](project)


def record_export(project: Project, fmt: str, by, via: str) -> None:
    """The audit log's row for an export that was allowed (by: the user, None for the command line)."""
    audit.record(by, AuditEntry.Action.EXPORT, project, format=fmt, via=via)


def write_export(project: Project, fmt: str, path, progress=None) -> int:
    """Write an export to a file; returns the number of records written. progress(records, expected) is
    called after every batch."""
    records = 0
    chunks = export(project, fmt)  # refused formats fail here, before the file is created
    expected = (project.examples if fmt in EXAMPLE_FORMATS else project.items).count() if progress else 0
    with open(path, "w", encoding="utf-8", newline="") as out:
        for chunk in chunks:
            out.write(chunk)
            records += chunk.count("\n")
            if progress:
                progress(min(records, expected), expected)
    return records - (1 if fmt in CSV_FORMATS else 0)


def iter_item_batches(project: Project, batch: int = BATCH) -> Iterator[list[Item]]:
    """Items in creation order, a batch at a time, by keyset on the primary key."""
    queryset = Item.objects.filter(project=project).select_related("example", "atom").order_by("id")
    last_id = 0
    while True:
        items = list(queryset.filter(id__gt=last_id)[:batch])
        if not items:
            return
        yield items
        last_id = items[-1].id


def _csv_line(values) -> str:
    buffer = io.StringIO()
    # The csv module quotes only around the line terminator ("\n"): a bare "\r" in a text needs quotes too.
    carriage_return = any(isinstance(value, str) and "\r" in value for value in values)
    csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL if carriage_return else csv.QUOTE_MINIMAL).writerow(values)
    return buffer.getvalue()


# OWASP's rule against CSV injection: a cell starting with one of these is read as a formula by spreadsheets.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value):
    """Text that a spreadsheet would evaluate, prefixed with a quote so it is shown as text."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _json_line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


USNLI_CODES = {label: code for code, label in USNLI_NUMBERING.items()}


def _usnli(project: Project) -> Iterator[str]:
    yield _csv_line(["id", "pre", "hyp", "nli", "unli"])
    for items in iter_item_batches(project):
        lines = []
        for item in items:
            example = item.example
            final = item.final_value
            unli = repr(float(final)) if final is not None else example.source_data.get("unli", "")
            nli = example.source_data.get("nli", USNLI_CODES.get(example.source_label, ""))
            lines.append(_csv_line([example.source_id or example.key, example.premise, example.hypothesis, nli, unli]))
        yield "".join(lines)


def _vote_counts(items: list[Item]) -> dict[int, Counter]:
    counts: dict[int, Counter] = {item.id: Counter() for item in items}
    rows = Annotation.objects.filter(item__in=[item.id for item in items]).values_list("item_id", "value", "count")
    for item_id, value, count in rows.iterator(chunk_size=5000):
        counts[item_id][value] += count
    return counts


def _chaosnli(project: Project) -> Iterator[str]:
    labels = project.task.categories(project.options)
    numeric = label_set_of(labels) is ALPHA_NLI  # alphaNLI writes its labels as numbers

    def out(label):
        return int(label) if numeric and label is not None else label

    for items in iter_item_batches(project):
        counts = _vote_counts(items)
        lines = []
        for item in items:
            counter = counts[item.id]
            total = sum(counter.values())
            label_count = [counter.get(label, 0) for label in labels]
            label_dist = [count / total if total else 0.0 for count in label_count]
            majority = item.final_value
            if majority is None and total:
                best = max(label_count)
                winners = [label for label, count in zip(labels, label_count) if count == best]
                source_majority = item.example.source_data.get("majority_label")
                majority = str(source_majority) if str(source_majority) in winners else winners[0]
            source = item.example.source_data
            record = {
                "uid": item.example.source_id or item.example.key,
                "label_counter": {out(label): count for label, count in counter.most_common()},
                "majority_label": out(majority),
                "label_dist": label_dist,
                "label_count": label_count,
                "entropy": -sum(p * math.log2(p) for p in label_dist if p > 0),
                "example": source.get(
                    "example",
                    {"uid": item.example.source_id, "premise": item.example.premise, "hypothesis": item.example.hypothesis},
                ),
                "old_label": source.get("old_label", item.example.source_label),
            }
            if "old_labels" in source:
                record["old_labels"] = source["old_labels"]
            if numeric:  # JSON object keys are strings; ChaosNLI writes them so too
                record["label_counter"] = {str(k): v for k, v in record["label_counter"].items()}
            lines.append(_json_line(record))
        yield "".join(lines)


def _snli(project: Project) -> Iterator[str]:
    for items in iter_item_batches(project):
        votes = votes_in_order([item.id for item in items])
        lines = []
        for item in items:
            example = item.example
            record = {
                "annotator_labels": [long_name(vote) for vote in votes[item.id]],
                "gold_label": long_name(snli_gold_label(votes[item.id], item.adjudicated)),
                "pairID": example.source_data.get("pairID", example.source_id or example.key),
                "sentence1": example.premise,
                "sentence2": example.hypothesis,
            }
            if "captionID" in example.source_data:
                record["captionID"] = example.source_data["captionID"]
            lines.append(_json_line(record))
        yield "".join(lines)


def _dnli(project: Project) -> Iterator[str]:
    lines = []
    for record in written_records(project):
        pair, example = record.pair, record.answer.item.example
        lines.append(_json_line({
            "Premise": pair.premise,
            "Hypothesis": pair.hypothesis,
            "Update": pair.update,
            "UpdateType": pair.update_type,
            "UpdateTypeImpossible": False,
            "SourceId": example.source_id or example.key,
            "WorkerIdAnon": f"w{record.answer.worker_id}",
            # The validation: its pair id (None: not sent yet), the validators' -2..+2 effects on the
            # hypothesis, and the verdict once settled (strengthener, weakener or no effect).
            "ValidationPairId": record.validation_pair_id,
            "ValidationVotes": record.votes,
            "ValidationVerdict": record.verdict,
        }))
        if len(lines) == BATCH:
            yield "".join(lines)
            lines = []
    yield "".join(lines)


def _example_fields(example) -> dict:
    return {
        "id": example.source_id or example.key,
        "premise": example.premise,
        "hypothesis": example.hypothesis,
        "update": example.update,
        "update_type": example.update_type,
        "label": example.source_label,
    }


def _atoms(project: Project) -> Iterator[str]:
    queryset = Example.objects.filter(project=project).prefetch_related("atoms__items").order_by("id")
    last_id = 0
    while True:
        examples = list(queryset.filter(id__gt=last_id)[:BATCH])
        if not examples:
            return
        lines = []
        for example in examples:
            atoms = []
            for atom in example.atoms.all():
                collected = [item.final_value for item in atom.items.all() if item.final_value is not None]
                atoms.append(
                    {
                        "text": atom.text,
                        "order": atom.order,
                        "validity": atom.validity,
                        "effect": atom.effect,
                        "collected": collected[0] if collected else None,
                    }
                )
            lines.append(_json_line({**_example_fields(example), "atoms": atoms}))
        yield "".join(lines)
        last_id = examples[-1].id


ANNOTATION_FIELDS = (
    "item_id", "worker_id", "imported", "count", "raw", "value", "reason", "seconds_spent", "started_at", "submitted_at", "late",
)


def _annotations_by_item(items: list[Item]) -> dict[int, list[dict]]:
    """Every annotation of a batch of items as export records, read as plain rows (no model objects)."""
    grouped: dict[int, list[dict]] = {item.id: [] for item in items}
    rows = Annotation.objects.filter(item__in=list(grouped)).order_by("item_id", "id").values_list(*ANNOTATION_FIELDS)
    for item_id, worker_id, imported, count, raw, value, reason, seconds, started, submitted, late in rows.iterator(chunk_size=5000):
        grouped[item_id].append(
            {
                "worker": f"w{worker_id}" if worker_id else None,
                "imported": imported,
                "count": count,
                "raw": raw,
                "value": value,
                "reason": reason,
                "seconds_spent": seconds,
                "started_at": started.isoformat() if started else None,
                "submitted_at": submitted.isoformat() if submitted else None,
                "late": late,
            }
        )
    return grouped


def _jsonl(project: Project) -> Iterator[str]:
    for items in iter_item_batches(project, batch=200):
        annotations = _annotations_by_item(items)
        yield "".join(
            _json_line(
                {
                    "item": item.id,
                    "task_type": project.task_type,
                    "example": _example_fields(item.example),
                    "source_data": item.example.source_data,
                    "atom": item.atom.text if item.atom else None,
                    "status": item.status,
                    "aggregate": item.aggregate,
                    "adjudicated": item.adjudicated,
                    "final": item.final_value,
                    "annotations": annotations[item.id],
                }
            )
            for item in items
        )


def _csv(project: Project) -> Iterator[str]:
    yield _csv_line(["item", "id", "premise", "hypothesis", "update", "atom", "status", "annotations", "final"])
    for items in iter_item_batches(project):
        yield "".join(
            _csv_line(
                [spreadsheet_safe(value) for value in [
                    item.id,
                    item.example.source_id or item.example.key,
                    item.example.premise,
                    item.example.hypothesis,
                    item.example.update,
                    item.atom.text if item.atom else "",
                    item.status,
                    item.annotation_count,
                    "" if item.final_value is None else item.final_value,
                ]]
            )
            for item in items
        )
