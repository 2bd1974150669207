"""LiveNLI's CSV (Findings of EMNLP 2023): one row per explanation, several per MNLI item. A row gives its
worker's plausible labels (`multilabel`, LiveNLI's answers to "is the statement true?": true = entailment,
either = neutral, false = contradiction, several joined with " | "), a free-text explanation, and the spans of
premise and hypothesis the worker highlighted.

The structured columns are Python-literal text, not JSON (chaos_dist, mnli_labels, highlight_p, highlight_h:
read with ast.literal_eval, never eval), and dist and agg_dist are numpy-printed arrays ("[0.5 0.5 0. ]").
The release's header ends with a stray column (" 26b5c67b-…") that no row fills; it is kept, so an export has
the same header.

One example per uid (a uid's rows must follow each other): Example.source_data = {"rows": [every row as
parsed, in file order]}; the rows are written back with the same text. The ChaosNLI counts (chaos_dist)
become the item's imported votes where the study keeps label distributions. Collected answers are written as
rows of their own after the imported ones (`row_source` says which).
"""

from __future__ import annotations

import ast
import json
from collections import Counter

from common.readers import RowError
from common.vocabulary import LIVENLI_ANSWERS, LIVENLI_SEPARATOR, NLI, NO_GOLD, LabelError, snli_gold_label, to_label
from dataset_io.formats.base import (
    POOLS,
    ExampleRow,
    ExportOptions,
    FieldDoc,
    Format,
    ReadContext,
    csv_cell,
    csv_line,
    mnli_pairs,
)
from dataset_io.services.provenance import Provenance
from dataset_io.services.records import ItemRecord, item_batches
from label_variation.services.reasons import export_rounds
from label_variation.services.variation import read_explanations

COLUMNS = (
    "uid",
    "premise",
    "hypothesis",
    "chaos_dist",
    "mnli_labels",
    "worker_id",
    "multilabel",
    "explanation",
    "highlight_p",
    "highlight_h",
    "dist",
    "agg_dist",
    "taxonomy",
    "within_label_variation",
)
LITERAL_COLUMNS = ("chaos_dist", "mnli_labels", "highlight_p", "highlight_h")
ARRAY_COLUMNS = ("dist", "agg_dist")
HIGHLIGHTS = {"highlight_p": "premise", "highlight_h": "hypothesis"}
# The same for every row of one uid.
ITEM_COLUMNS = ("premise", "hypothesis", "chaos_dist", "mnli_labels", "taxonomy")
ADDED = ("row_source", "item", "answer", "excluded_answers")
GOLD_COLUMNS = ("pool", "gold")
ROW_SOURCES = ("imported", "collected", "none")
KNOWN = COLUMNS + ADDED + GOLD_COLUMNS
ANSWER_OF = {label: answer for answer, label in LIVENLI_ANSWERS.items()}  # e -> true, n -> either, c -> false
SEPARATOR = f" {LIVENLI_SEPARATOR} "
TOLERANCE = 1e-6  # dist and agg_dist are printed with 8 digits


class LiveNLI(Format):
    name = "livenli"
    title = "LiveNLI CSV"
    extension = "csv"
    summary = "one explanation per line (a uid's lines together) with its labels and highlighted spans"
    fields = (
        FieldDoc("uid", "text", "the MNLI pair's id (the imported id, else the study's key for it)"),
        FieldDoc("premise, hypothesis", "text", "the pair, exactly as stored"),
        FieldDoc(
            "chaos_dist",
            "Python dict text or empty",
            "the pair's ChaosNLI label counts, e.g. {'c': 11, 'e': 14, 'n': 75}, read as the item's imported "
            "distribution; on collected rows the item's imported votes, else the counts its imported VariErr "
            "record carries; empty where the pair has none",
        ),
        FieldDoc(
            "mnli_labels",
            "Python list text, or a label",
            "MNLI's five annotator labels (or its one gold label); their majority is the example's label",
        ),
        FieldDoc("worker_id", "text", "the row's worker; collected rows: the anonymised annotator id"),
        FieldDoc(
            "multilabel",
            "true, either, false joined with ' | '",
            "the labels the worker found plausible: true = entailment, either = neutral, false = contradiction "
            "(LiveNLI's question: is the statement true given the context?)",
        ),
        FieldDoc(
            "explanation",
            "text",
            "the worker's explanation; a collected answer with several labels gives one row per label (as the "
            "release has one row per explanation), each with that label's explanation and highlights (the whole "
            "answer is in `answer`); empty for a label study's answer",
        ),
        FieldDoc(
            "highlight_p, highlight_h",
            "Python dict text",
            "{'entities': [{'endIndex', 'startIndex', 'text', 'type': 'highlight'}], 'relationships': []}: "
            "character offsets [startIndex, endIndex) into the premise and hypothesis, and the text they cover "
            "(checked against the pair's text: every highlight of the release matches it)",
        ),
        FieldDoc("dist", "numpy-printed list", "the row's labels as a distribution [e, n, c], split evenly"),
        FieldDoc(
            "agg_dist", "numpy-printed list", "the mean of dist over the pair's rows (collected rows: over those)"
        ),
        FieldDoc(
            "taxonomy",
            "text",
            "the pair's reasons for disagreement, comma-separated, as the release has them; on a pair the file "
            "did not have, the reasons tagged in the study (the latest round's result)",
        ),
        FieldDoc("within_label_variation", "text", "as the release has it"),
        FieldDoc(
            "(other columns)", "text", "columns the imported file had beyond these (the release's stray last one)"
        ),
        FieldDoc(
            "row_source",
            "imported, collected or none",
            'an imported row, a collected answer ("I don\'t know" answers are in the annotations export only), '
            "or an item asked for without any",
            added=True,
        ),
        FieldDoc("item", "whole number", "the study's item id", added=True),
        FieldDoc(
            "answer",
            "JSON or empty",
            "collected rows of a study with explanations: the answer's labels with their explanations and spans",
            added=True,
        ),
        FieldDoc("excluded_answers", "whole number", "answers of workers the author excluded", added=True),
        FieldDoc(
            "pool, gold",
            "data or gold; label",
            "only when gold checks are asked for: the item's pool and a gold check's reference",
            added=True,
        ),
    )

    def importable(self, task, options):
        return task.explains_labels or (task.label_distributions and mnli_pairs(task, options))

    exportable = importable

    def required_columns(self, context):
        return COLUMNS

    def may_leave_off(self, column):
        return column not in KNOWN  # the release's stray last column, which no row fills

    def records(self, stream, required=()):
        """(line of its first row, {"uid", "rows": [parsed rows], "lines"}) for each uid, and (line, RowError)
        for each bad row, with the line it is on."""
        group: dict | None = None
        finished: dict[str, int] = {}  # uid -> the line its rows started on
        refused = False  # a row refused since the last uid closed: its uid's means cannot be checked
        for line, row in self.rows(stream, COLUMNS):
            if isinstance(row, RowError):
                yield line, row
                refused = True
                continue
            try:
                parsed = _parsed_row(row)
            except RowError as error:
                yield line, error
                refused = True
                continue
            if group is not None and parsed["uid"] != group["uid"]:
                finished[group["uid"]] = group["lines"][0]
                yield _closed(group, check_means=not refused)
                group, refused = None, False
            if group is None:
                if parsed["uid"] in finished:
                    message = f"repeats the uid of line {finished[parsed['uid']]}: a uid's rows must follow each other"
                    yield line, RowError("uid", message)
                    continue
                group = {"uid": parsed["uid"], "rows": [], "lines": []}
            error = _disagreement(group, parsed)
            if error is not None:
                yield line, error
                continue
            group["rows"].append(parsed)
            group["lines"].append(line)
        if group is not None:
            yield _closed(group, check_means=not refused)

    def parse(self, line, record, context: ReadContext):
        rows = record["rows"]
        first = rows[0]
        pool = first.pop("pool", "")
        gold = first.pop("gold", "")
        for row in rows:
            row.pop("pool", None)
            row.pop("gold", None)
        if pool and pool not in POOLS:
            raise RowError("pool", f"must be one of {', '.join(POOLS)}, got {pool[:20]!r}")
        kept = [row for row in rows if row.pop("row_source", "imported") != "none"]
        for row in kept:
            for name in ADDED:
                row.pop(name, None)
        chaos = first["chaos_dist"]
        return ExampleRow(
            line=line,
            key=f"id:{record['uid']}",
            source_id=record["uid"],
            premise=first["premise"],
            hypothesis=first["hypothesis"],
            source_label=_mnli_label(first["mnli_labels"]),
            source_data={"rows": kept},
            imported_labels=[label for label, count in chaos.items() for _ in range(count)] if chaos else [],
            label_set=NLI.labels,
            pool=pool,
            gold=(gold or None) if pool == "gold" else None,
        )

    def write(self, project, options: ExportOptions):
        import numpy  # here, not at the top: web processes that never export this stay lean

        def array_text(values) -> str:
            return str(numpy.array(values, dtype=float))

        extra = _extra_columns(project)
        yield csv_line([*COLUMNS, *extra, *ADDED, *(GOLD_COLUMNS if options.include_gold else ())])
        task, provenance = project.task, Provenance(project)
        for records in item_batches(project, options.include_gold, free_text=options.free_text):
            carried = read_explanations(project, [record.item.example.key for record in records]).chaosnli
            tagged = export_rounds(record.item.id for record in records)
            lines = []
            for record in records:
                item, example = record.item, record.item.example
                imported = example.source_data.get("rows", []) if example.source_format == self.name else []
                collected = _collected_rows(task, record, provenance)
                if not (imported or collected or options.include_unanswered or item.is_gold):
                    continue
                model = imported[0] if imported else {}
                counts = Counter(record.imported) or carried.get(example.key, {})
                chaos = model.get("chaos_dist", {label: counts[label] for label in sorted(counts)} if counts else "")
                item_cells = {
                    "uid": example.source_id or example.key,
                    "premise": example.premise,
                    "hypothesis": example.hypothesis,
                    "chaos_dist": chaos,
                    "mnli_labels": model.get("mnli_labels", ""),
                    "taxonomy": model.get("taxonomy", _tags_text(tagged.get(item.id, {}))),
                }
                mean = [sum(column) / len(collected) for column in zip(*(row["dist"] for row in collected))]
                rows = [(row, "imported") for row in imported]
                rows += [({**row, **item_cells, "agg_dist": mean}, "collected") for row in collected]
                if not rows:
                    rows = [({**item_cells, "dist": "", "agg_dist": ""}, "none")]
                for row, source in rows:
                    cells = [_cell(row.get(name, ""), name, array_text) for name in COLUMNS]
                    cells += [csv_cell(row.get(name, "")) for name in extra]
                    cells += [source, item.id, csv_cell(row.get("answer")), record.excluded]
                    if options.include_gold:
                        cells += [record.pool, csv_cell(item.gold)]
                    lines.append(csv_line(cells))
            yield "".join(lines)

    def validate(self, stream):
        for line, record in self.records(stream, COLUMNS):
            if isinstance(record, RowError):
                record.line = line
                yield record


def _tags_text(rounds: dict) -> str:
    """The reasons tagged here (the latest round with a result) as the release's column writes them."""
    for number in sorted(rounds, reverse=True):
        if rounds[number]["reasons"] is not None:
            return ",".join(rounds[number]["reasons"])
    return ""


def _extra_columns(project) -> list[str]:
    """The columns the study's imported LiveNLI rows had beyond the format's own (the release's stray one),
    in sorted order, read once before the header is written."""
    from annotation.models import Example

    names: set[str] = set()
    examples = Example.objects.filter(project=project, source_format=LiveNLI.name)
    for data in examples.values_list("source_data", flat=True).iterator(chunk_size=2000):
        for row in data.get("rows", []):
            names.update(row)
    return sorted(names - set(COLUMNS))


def _cell(value, column: str, array_text) -> str:
    """A value as the release writes it: Python literals for the structured columns, numpy's print for the
    arrays, text as it is."""
    if value == "" or value is None:
        return ""
    if column in ARRAY_COLUMNS:
        return array_text(value)
    if column in HIGHLIGHTS:
        return repr(_sorted_keys(value))  # the release's highlights list their keys in order
    if column in LITERAL_COLUMNS and not isinstance(value, str):
        return repr(value)
    return str(value)


def _sorted_keys(value):
    if isinstance(value, dict):
        return {key: _sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(inner) for inner in value]
    return value


def _collected_rows(task, record: ItemRecord, provenance: Provenance) -> list[dict]:
    """The collected answers that count as LiveNLI rows: as in the release, one row per explanation, so an
    answer explaining several labels gives one row per label, each with that label's explanation and
    highlights (which never overlap); a label study's answer is one row without explanation."""
    rows = []
    text = {"premise": record.item.example.premise, "hypothesis": record.item.example.hypothesis}
    for vote in record.votes:
        if vote.imported or vote.excluded:
            continue
        worker = provenance.annotator(vote.worker_id)
        if not task.explains_labels:
            rows.append(_row(worker, [vote.value], "", {name: [] for name in HIGHLIGHTS.values()}, text, None))
            continue
        explained = task.explained_labels(vote.value)
        answer = json.dumps(explained, ensure_ascii=False)
        for label in NLI.labels:  # "I don't know" gives no label: LiveNLI has no row for it
            if label in explained:
                part = explained[label]
                spans = {name: [tuple(span) for span in part.get(f"{name}_spans", [])] for name in HIGHLIGHTS.values()}
                rows.append(_row(worker, [label], part["explanation"], spans, text, answer))
    return rows


def _row(worker, labels: list[str], explanation: str, spans: dict, text: dict, answer) -> dict:
    return {
        "worker_id": worker,
        "multilabel": SEPARATOR.join(ANSWER_OF[label] for label in labels),
        "explanation": explanation,
        **{
            column: {
                "entities": [
                    {"endIndex": end, "startIndex": start, "text": text[name][start:end], "type": "highlight"}
                    for start, end in spans[name]
                ],
                "relationships": [],
            }
            for column, name in HIGHLIGHTS.items()
        },
        "dist": [labels.count(label) / len(labels) for label in NLI.labels],
        "within_label_variation": "",
        "answer": answer,
    }


def _mnli_label(value) -> str:
    """MNLI's gold label of the pair: the label 3 of its 5 annotators gave (or the one label given)."""
    labels = value if isinstance(value, list) else [value] if value else []
    gold = snli_gold_label([to_label(label, NLI.labels) for label in labels]) if labels else NO_GOLD
    return "" if gold == NO_GOLD else gold


def _literal(text: str, column: str):
    """A Python-literal cell as the value it writes (literal_eval: data, never code)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise RowError(column, f"is not a Python literal: {text[:40]!r}") from None


def _array(text: str, column: str) -> list[float]:
    """A numpy-printed array of three probabilities, e.g. "[0.5 0.5 0. ]"."""
    inner = text.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        raise RowError(column, f"must be a printed array such as [0.5 0.5 0. ], got {text[:40]!r}")
    try:
        values = [float(part) for part in inner[1:-1].split()]
    except ValueError:
        raise RowError(column, f"must hold numbers, got {text[:40]!r}") from None
    if len(values) != len(NLI.labels) or not all(0.0 <= value <= 1.0 for value in values):
        raise RowError(column, f"must hold {len(NLI.labels)} probabilities (e, n, c), got {text[:40]!r}")
    if abs(sum(values) - 1.0) > TOLERANCE * len(values):
        raise RowError(column, f"must sum to 1, got {text[:40]!r}")
    return values


def _labels_of(multilabel: str) -> list[str]:
    answers = [answer.strip() for answer in multilabel.split(LIVENLI_SEPARATOR)]
    try:
        return [to_label(answer, NLI.labels, numbering=LIVENLI_ANSWERS) for answer in answers]
    except LabelError:
        known = ", ".join(LIVENLI_ANSWERS)
        raise RowError("multilabel", f"must be {known} (several joined with ' | '), got {multilabel[:40]!r}") from None


def _highlight(value, column: str, text: str) -> None:
    if not isinstance(value, dict) or not isinstance(value.get("entities"), list):
        raise RowError(column, "must be a dict with a list of 'entities'")
    for index, entity in enumerate(value["entities"]):
        where = f"{column}.entities[{index}]"
        if not isinstance(entity, dict):
            raise RowError(where, "must be a dict with startIndex, endIndex and text")
        start, end = entity.get("startIndex"), entity.get("endIndex")
        if not all(isinstance(bound, int) and not isinstance(bound, bool) for bound in (start, end)):
            raise RowError(where, "needs whole-number startIndex and endIndex")
        if not 0 <= start < end <= len(text):
            raise RowError(
                where,
                f"[{start}, {end}) is outside the {HIGHLIGHTS[column]} ({len(text)} characters)",
            )
        if entity.get("text") != text[start:end]:
            raise RowError(f"{where}.text", f"must be the {HIGHLIGHTS[column]}'s text at [{start}, {end})")


def _parsed_row(row: dict) -> dict:
    """One CSV row with its structured columns read, checked alone; RowError names the column."""
    source = row.get("row_source") or "imported"
    if source not in ROW_SOURCES:
        raise RowError("row_source", f"must be one of {', '.join(ROW_SOURCES)}, got {source[:20]!r}")
    for column in ("uid", "premise", "hypothesis") + (("worker_id", "multilabel") if source != "none" else ()):
        if not row[column].strip():
            raise RowError(column, "is missing or empty")
    if source == "imported" and not row["explanation"].strip():
        raise RowError("explanation", "is missing or empty")
    parsed = dict(row)
    for column in LITERAL_COLUMNS:
        text = row[column].strip()
        if column == "mnli_labels" and text and not text.startswith("["):
            parsed[column] = text  # a single label, as the release writes some pairs'
        elif text:
            parsed[column] = _literal(text, column)
        elif source == "imported" and column in HIGHLIGHTS:
            raise RowError(column, "is missing or empty")
    chaos = parsed["chaos_dist"]
    if chaos != "" and (
        not isinstance(chaos, dict)
        or set(chaos) - set(NLI.labels)
        or not all(isinstance(count, int) and not isinstance(count, bool) and count >= 0 for count in chaos.values())
    ):
        raise RowError("chaos_dist", "must be a dict of label counts such as {'c': 11, 'e': 14, 'n': 75}")
    mnli = parsed["mnli_labels"]
    try:
        _mnli_label(mnli)
    except LabelError as error:
        raise RowError("mnli_labels", str(error)) from None
    if source == "none":
        return parsed
    labels = _labels_of(row["multilabel"])
    for column, name in HIGHLIGHTS.items():
        if parsed[column] != "":
            _highlight(parsed[column], column, row[name])
    for column in ARRAY_COLUMNS:
        parsed[column] = _array(row[column], column)
    expected = [labels.count(label) / len(labels) for label in NLI.labels]
    if any(abs(given - share) > TOLERANCE for given, share in zip(parsed["dist"], expected)):
        raise RowError("dist", f"must split the row's labels evenly over [e, n, c], got {row['dist']!r}")
    return parsed


def _disagreement(group: dict, row: dict) -> RowError | None:
    """A row of a uid that disagrees with the uid's first row on the pair."""
    if group["rows"]:
        for column in ITEM_COLUMNS:
            if row[column] != group["rows"][0][column]:
                return RowError(column, f"differs from the uid's first row (line {group['lines'][0]})")
    return None


def _closed(group: dict, check_means: bool) -> tuple[int, dict | RowError]:
    """(line, the uid's record), or (line, RowError) where a row's agg_dist is not the mean of dist over the
    uid's rows of its kind (imported or collected)."""
    for source in ("imported", "collected") if check_means else ():
        kind = [
            (line, row)
            for line, row in zip(group["lines"], group["rows"])
            if row.get("row_source", "imported") == source
        ]
        if not kind:
            continue
        mean = [sum(shares) / len(kind) for shares in zip(*(row["dist"] for _, row in kind))]
        for line, row in kind:
            if any(abs(given - share) > TOLERANCE for given, share in zip(row["agg_dist"], mean)):
                shown = " ".join(f"{share:.8g}" for share in mean)
                return line, RowError("agg_dist", f"must be the mean of dist over the uid's {source} rows ([{shown}])")
    return group["lines"][0], group


FORMAT = LiveNLI()
