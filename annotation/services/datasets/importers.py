"""Dataset imports: read a file with its format's reader (annotation.formats) into example rows, validate every
row, then write all or nothing.

Every label a row carries is read through the one vocabulary (common.vocabulary) against the labels the study
takes (TaskType.example_labels), after the import's label mapping if it names one; anything else refuses the
file with its line and field. Rows go to a pool (data, gold checks, the qualification test): the import's
purpose, or what an exported record says of itself; a row whose text is in another pool of the study is
refused, naming the item and its pool (annotation.services.pools).
"""

from __future__ import annotations

import hashlib
import json
import re
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from django.conf import settings
from django.db import connection, transaction

from annotation.formats import FORMATS, ReadContext, get_format
from annotation.formats.base import CONTENT_KEY, AtomRow, ExampleRow, Skipped, content_key, oversized_text
from annotation.formats.generic import FIELDS as GENERIC_FIELDS
from annotation.formats.generic import full_mapping
from annotation.models import Annotation, Atom, Example, Item, Project
from annotation.services import pools
from annotation.services.answers import SubmissionError, parse_reference
from annotation.services.quality import gold_reference
from common.readers import RowError, csv_rows, json_lines
from common.vocabulary import LabelError, label_mapping

# What imported rows become: data to collect, hidden gold checks, or the project's qualification test.
PURPOSES = ("data", "gold", "qualification")
# The formats files are imported in (the registry's, less the export-only ones).
IMPORT_FORMATS = tuple(name for name, fmt in FORMATS.items() if fmt.reads)
MAX_ERRORS_REPORTED = 50
PROGRESS_ROWS = 1000  # rows between two progress reports of a long import

__all__ = [
    "FORMATS",
    "GENERIC_FIELDS",
    "IMPORT_FORMATS",
    "PURPOSES",
    "ImportFileError",
    "ImportReport",
    "import_file",
    "import_stream",
    "import_upload",
    "preview",
    "read_rows",
]


class ImportFileError(ValueError):
    """The file has bad rows; nothing was imported. `errors` lists (line, field, message); line 0 (or None)
    is the file or the import as a whole."""

    def __init__(self, errors: list[tuple[int | None, str, str]]):
        self.errors = errors
        lines = [
            f"{f'line {line}, ' if line else ''}field {name!r}: {message}"
            for line, name, message in errors[:MAX_ERRORS_REPORTED]
        ]
        more = len(errors) - MAX_ERRORS_REPORTED
        if more > 0:
            lines.append(f"... and {more} more")
        super().__init__("nothing was imported:\n" + "\n".join(lines))


@dataclass
class ImportReport:
    created: int = 0
    skipped: int = 0
    already_present: int = 0
    unique_hypotheses: int = 0
    items: int = 0
    atoms: int = 0
    annotations: int = 0
    skipped_reasons: dict = field(default_factory=dict)
    qualification_items: int = 0
    gold_items: int = 0
    # Why a file that was read without errors added nothing (or less than a user would expect).
    notes: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


# ---------------------------------------------------------------- reading


def read_context(project: Project, mapping: dict[str, str] | None = None, label_map=None) -> ReadContext:
    """What the readers need of the study: the labels its rows may carry (none where it keeps no labels: a
    writing study keeps only the texts workers write about), the import's label mapping checked against
    them, and a generic format's column mapping."""
    task, options = project.task, project.options
    kept_fields = task.source_fields(options)
    labels = None if kept_fields is not None else tuple(task.example_labels(options))
    try:
        checked_map = label_mapping(label_map or {}, labels) if labels is not None else {}
    except LabelError as error:
        raise ImportFileError([(0, "label mapping", str(error))]) from None
    return ReadContext(
        labels=labels,
        label_map=checked_map,
        mapping=full_mapping(mapping),
        hypothesis_required=kept_fields is None or "hypothesis" in kept_fields,
    )


def label_map_pairs(text: str) -> list[str]:
    """A label mapping written as text (VALUE=LABEL pairs separated by commas or new lines) as its pairs."""
    return [pair.strip() for pair in re.split(r"[,\n]", text or "") if pair.strip()]


def read_rows(stream: IO, fmt: str, context: ReadContext):
    """(line, ExampleRow | AtomRow | Skipped | RowError) for every record of the stream."""
    reader = get_format(fmt)
    for line, record in reader.records(stream, reader.required_columns(context)):
        if isinstance(record, RowError):
            yield line, record
            continue
        try:
            row = reader.parse(line, record, context)
        except RowError as exc:
            yield line, exc
            continue
        oversized = oversized_text(row) if isinstance(row, (ExampleRow, AtomRow)) else None
        if oversized is not None:
            yield line, oversized
            continue
        for example in (row, getattr(row, "example", None)):
            if isinstance(example, ExampleRow):
                example.source_format = example.source_format or fmt
        yield line, row


PREVIEW_ROWS = 10


def preview(path: str | Path, fmt: str, limit: int = PREVIEW_ROWS) -> dict:
    """The first records of a file as they stand, before any mapping, for the import preview:
    {"columns": [names in first-seen order], "rows": [[cell text]], "errors": [(line, field, message)]}."""
    columns: list[str] = []
    records, errors = [], []
    csv_file = fmt in FORMATS and FORMATS[fmt].extension == "csv"
    with open(path, "rb") as stream:
        for line, record in (
            csv_rows(stream, may_leave_off=FORMATS[fmt].may_leave_off) if csv_file else json_lines(stream)
        ):
            if isinstance(record, RowError):
                errors.append((line, record.field, record.message))
            else:
                records.append(record)
                columns += [name for name in record if name not in columns]
            if len(records) + len(errors) >= limit:
                break

    def cell(value) -> str:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 120 else text[:119] + "…"

    return {"columns": columns, "rows": [[cell(r.get(c, "")) for c in columns] for r in records], "errors": errors}


def label_values(path: str | Path, fmt: str, column: str, limit: int = 10_000) -> list[str]:
    """The distinct values of a generic file's label column (the first `limit` rows), for the import page's
    label mapping step."""
    values: dict[str, None] = {}
    with open(path, "rb") as stream:
        records = csv_rows(stream) if FORMATS[fmt].extension == "csv" else json_lines(stream)
        for count, (_, record) in enumerate(records):
            if count >= limit:
                break
            if isinstance(record, dict) and record.get(column) not in (None, ""):
                values.setdefault(str(record[column]).strip())
    return list(values)


# ---------------------------------------------------------------- writing


def check_format(project: Project, fmt: str) -> None:
    """Refuse a format that does not fit the project's task type, saying which do."""
    reader = get_format(fmt)
    task = project.task
    if not reader.importable(task, project.options):
        from annotation.formats import importable

        raise ValueError(
            f"the {fmt} format does not fit a {task.label} project; choose one of "
            f"{', '.join(importable(task, project.options))}"
        )


def check_size(size: int) -> None:
    """The one import size limit, for the web form, the API and the command line alike."""
    limit = settings.NLI_MAX_IMPORT_BYTES
    if size > limit:
        raise ImportFileError(
            [(0, "(file)", f"is {size / 2**20:.1f} MiB, over the import limit of {limit / 2**20:.0f} MiB")]
        )


def check_text(source, sample: int = 1 << 16) -> None:
    """Refuse at once a file (a path or an upload) whose start is not UTF-8 text, before it waits for a job."""
    if hasattr(source, "chunks"):
        source.seek(0)
        start = source.read(sample)
        source.seek(0)
    else:
        with open(source, "rb") as handle:
            start = handle.read(sample)
    try:
        start.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(start) - 3:  # not merely a character cut at the sample's end
            raise ImportFileError([(1, "(file)", f"is not UTF-8 text (byte {error.start})")]) from None


def count_lines(path: str | Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def import_file(
    project: Project,
    path: str | Path,
    fmt: str,
    mapping: dict[str, str] | None = None,
    purpose: str = "data",
    progress=None,
    label_map=None,
) -> ImportReport:
    """Import a file on disk. progress(lines read, lines in the file) is called as the rows are checked."""
    check_size(Path(path).stat().st_size)
    total = count_lines(path) if progress else 0
    with open(path, "rb") as stream:  # the readers decode it and name the first byte that is not UTF-8
        return import_stream(
            project,
            stream,
            fmt,
            mapping,
            purpose=purpose,
            label_map=label_map,
            progress=(lambda line: progress(min(line, total), total)) if progress else None,
        )


def import_upload(
    project: Project, upload, fmt: str, mapping: dict[str, str] | None = None, purpose: str = "data", label_map=None
) -> ImportReport:
    """An uploaded file (Django's UploadedFile), read as a stream from its temporary file, never whole."""
    check_size(upload.size)
    upload.seek(0)
    return import_stream(project, upload.file, fmt, mapping, purpose=purpose, label_map=label_map)


def _rereadable(stream) -> bool:
    seekable = getattr(stream, "seekable", None)
    return bool(seekable and seekable())


def import_stream(
    project: Project, stream: IO[str], fmt: str, mapping=None, purpose: str = "data", progress=None, label_map=None
) -> ImportReport:
    """Validate the whole stream first; write nothing unless every row is good.

    purpose "gold" imports the rows as hidden gold checks, "qualification" as the items of the project's
    qualification test; in both the row's own label is the reference answer. label_map: {value: label} or
    ["VALUE=LABEL", ...], applied to every label the file carries before the vocabulary reads it."""
    check_format(project, fmt)
    if purpose not in PURPOSES:
        raise ValueError(f"unknown purpose {purpose!r}; choose one of {', '.join(PURPOSES)}")
    if purpose == "qualification" and project.task.per_atom:
        raise ValueError("atoms are picked into a qualification test on its page, not imported into it")
    context = read_context(project, mapping, label_map)
    kept_fields = project.task.source_fields(project.options)
    if purpose == "data" and fmt != "atoms" and kept_fields is None and _rereadable(stream):
        return _import_examples_streamed(project, stream, fmt, context, progress)
    rows, skipped, errors = [], [], []
    line = 0
    for line, row in read_rows(stream, fmt, context):
        if progress and line % PROGRESS_ROWS == 0:
            progress(line)
        if isinstance(row, RowError):
            errors.append((line, row.field, row.message))
        elif isinstance(row, Skipped):
            skipped.append(row)
        else:
            rows.append(row)
    if progress:
        progress(line)
    if fmt == "atoms":
        return _explained(project, fmt, _analyzed(_write_atoms(project, rows, errors, skipped, purpose)))
    if kept_fields is not None:
        rows = _keep_fields(rows, kept_fields, skipped)
    _check_example_rows(project, rows, errors)
    checks = PoolChecks(project, purpose)
    for row in rows:
        checks.check(row, errors)
    if errors:
        raise ImportFileError(sorted(errors, key=lambda error: error[0] or 0))
    if purpose == "qualification":
        return _write_qualification(project, rows, skipped)
    return _explained(project, fmt, _analyzed(_write_examples(project, rows, skipped, purpose)))


class PoolChecks:
    """The pool each row goes to (the import's purpose, or what an exported record says of itself), its gold
    reference, and the refusal of a row whose text is in another pool of the study."""

    def __init__(self, project: Project, purpose: str):
        self.project, self.purpose = project, purpose
        self._others: dict[str, dict[str, pools.Member]] = {}

    def pool_of(self, row_pool: str, line: int, errors: list, where: str = "nli_studio.pool") -> str:
        if not row_pool:
            return self.purpose
        if self.purpose != "data" and row_pool != self.purpose:
            errors.append((line, where, f"this import adds {self.purpose} items; the row says it is {row_pool}"))
        return row_pool

    def others(self, pool: str) -> dict[str, pools.Member]:
        if pool not in self._others:  # read once per pool an import writes to: a data pool can be large
            self._others[pool] = pools.other_pools(self.project, pool)
        return self._others[pool]

    def check(self, row: ExampleRow, errors: list) -> None:
        pool = self.pool_of(row.pool, row.line, errors)
        if row.atoms:
            for index, atom in enumerate(row.atoms):
                self.check_text(
                    row, atom["text"], self.pool_of(atom["pool"], row.line, errors), errors, f"atoms[{index}].text"
                )
                self.check_atom_gold(row.line, atom, self.pool_of(atom["pool"], row.line, errors), errors, index)
            return
        if self.project.task.per_atom:
            return  # an atom study's examples are in no pool: their atoms are
        self.check_text(row, "", pool, errors, "premise")
        if pool == pools.GOLD or pool == pools.QUALIFICATION:
            try:
                row.gold = self.reference(row)
            except SubmissionError as error:
                errors.append((row.line, "nli_studio.gold", error.message))
                return
            if row.gold is None:
                errors.append(
                    (
                        row.line,
                        "label",
                        f"a {pool} item needs a reference answer for a {self.project.task.label} project in its label",
                    )
                )

    def check_text(self, row: ExampleRow, atom: str, pool: str, errors: list, where: str) -> None:
        member = self.others(pool).get(pools.text_key(row.premise, row.hypothesis, row.update, atom))
        if member is not None:
            errors.append(
                (
                    row.line,
                    where,
                    f"this text is the study's {member.name}, {pools.POOL_NAMES[member.pool]}; "
                    f"an item cannot also be {pools.POOL_NAMES[pool]}",
                )
            )

    def check_atom_gold(self, line: int, atom: dict, pool: str, errors: list, index: int) -> None:
        if pool != pools.GOLD:
            return
        task = self.project.task
        if atom.get("gold") is not None:
            try:
                atom["gold"] = parse_reference(task, self.project.options, atom["gold"])
            except SubmissionError as error:
                errors.append((line, f"atoms[{index}].nli_studio.gold", error.message))
            return
        atom["gold"] = task.gold_reference(
            None, Atom(validity=atom["validity"], effect=atom["effect"]), self.project.options
        )
        if atom["gold"] is None:
            errors.append(
                (
                    line,
                    f"atoms[{index}].{task.atom_reference_field}",
                    f"a gold atom needs its reference answer for a {task.label} project",
                )
            )

    def reference(self, row: ExampleRow):
        """A gold or qualification row's reference: the one its record names, else its own label."""
        if row.gold is not None:
            return parse_reference(self.project.task, self.project.options, row.gold)
        return gold_reference(self.project, _example_of(row), None)


def _example_of(row: ExampleRow, project: Project | None = None, position: int = 0) -> Example:
    """The (unsaved) example a row makes."""
    return Example(
        project=project,
        key=row.key,
        source_id=row.source_id,
        premise=row.premise,
        hypothesis=row.hypothesis,
        update=row.update,
        update_type=row.update_type,
        source_label=row.source_label,
        source_probability=row.source_probability,
        source_data=row.source_data,
        source_format=row.source_format,
        position=position,
    )


def _keep_fields(rows: list[ExampleRow], fields: tuple[str, ...], skipped: list[Skipped]) -> list[ExampleRow]:
    """The rows cut to the example fields a task type keeps (a writing task: what workers write about), one
    per distinct text; later repeats are skipped. What else a row said (labels, votes) is not kept."""
    kept, seen = [], set()
    for row in rows:
        texts = {name: getattr(row, name) if name in fields else "" for name in ("premise", "hypothesis", "update")}
        key = "text:" + content_key(*texts.values()).removeprefix("sha:")
        if key in seen:
            skipped.append(Skipped(row.line, "repeats the text of an earlier row"))
            continue
        seen.add(key)
        kept.append(
            replace(
                row,
                key=key,
                **texts,
                update_type="",
                source_label="",
                source_probability="",
                source_data={},
                imported_labels=[],
                label_set=None,
                ordered_votes=False,
                group="",
            )
        )
    return kept


# Columns with a width, and the field an error names. PostgreSQL enforces the widths; SQLite does not.
SIZED_COLUMNS = (("key", "id"), ("source_id", "id"), ("source_label", "label"), ("source_probability", "probability"))


def _fingerprint(text: str) -> int:
    """A deterministic 64-bit fingerprint: eight bytes a row where a big file's ids would take ~130."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def _identity(row: ExampleRow) -> str:
    """What may appear once in a file: an example's id, or with an atom (a per-atom study's own export, one
    line per atom) the id and the atom."""
    return row.key + "".join(f"\x1f{atom['text']}" for atom in row.atoms) if row.atoms else row.key


class ExampleRowChecks:
    """The checks of example rows, fed one row at a time so that a big file is never held whole: column
    widths, repeated ids, rows without an id numbered in file order, one label set per file.

    Ids are kept as 64-bit fingerprints in flat arrays (16 bytes a row), and repeats are found by sorting
    them at the end; two rows whose fingerprints agree are reported only once their ids are read back and
    found equal, so a fingerprint collision never refuses a good file."""

    def __init__(self, project: Project):
        self.project = project
        self.id_fingerprints = array("q")
        self.id_lines = array("q")
        self.occurrences: Counter = Counter()
        self.label_sets: set = set()
        self.first_voted_line: int | None = None

    def check(self, row: ExampleRow, errors: list) -> None:
        for column, name in SIZED_COLUMNS:
            limit = Example._meta.get_field(column).max_length
            if len(getattr(row, column)) > limit:
                errors.append((row.line, name, f"is longer than {limit} characters"))
                break
        if CONTENT_KEY.fullmatch(row.key):
            # Rows without an id that repeat another row's text (the releases have a few) stay rows of
            # their own; numbering them keeps a re-import of the same file a no-op.
            content = _fingerprint(_identity(row))
            self.occurrences[content] += 1
            row.key = f"{row.key}:{self.occurrences[content]}"
        else:
            self.id_fingerprints.append(_fingerprint(_identity(row)))
            self.id_lines.append(row.line)
        if row.imported_labels:
            self.label_sets.add(row.label_set)
            self.first_voted_line = self.first_voted_line or row.line

    def finish(self, errors: list, ids_at: Callable[[set[int]], dict[int, str]]) -> None:
        """Add the repeated ids and the label-set errors; `ids_at(lines)` reads back the identities of those
        lines."""
        self._repeated_ids(errors, ids_at)
        if self.label_sets and self.project.task.label_distributions:
            if len(self.label_sets) > 1:
                errors.append((self.first_voted_line, "label_counter", "the file mixes label sets"))
            else:
                current = self.project.options
                conflicts = {
                    name: value
                    for name, value in _options_changed_by(self.project, next(iter(self.label_sets))).items()
                    if current.get(name) is not None
                }
                if conflicts and self.project.examples.exists():
                    errors.extend(
                        (
                            self.first_voted_line,
                            "label_counter",
                            f"the project uses {name} {current[name]}, the file {value}",
                        )
                        for name, value in conflicts.items()
                    )
        errors.sort(key=lambda error: error[0] or 0)

    def _repeated_ids(self, errors: list, ids_at) -> None:
        import numpy  # here, not at the top: web processes that never import stay lean

        order = numpy.argsort(numpy.frombuffer(self.id_fingerprints, dtype=numpy.int64), kind="stable")
        fingerprints = numpy.frombuffer(self.id_fingerprints, dtype=numpy.int64)[order]  # equal ones in file order
        lines = numpy.frombuffer(self.id_lines, dtype=numpy.int64)[order]
        runs: dict[int, list[int]] = {}  # fingerprint -> the lines that carry it, in file order
        for position in numpy.flatnonzero(fingerprints[1:] == fingerprints[:-1]):
            run = runs.setdefault(int(fingerprints[position]), [int(lines[position])])
            run.append(int(lines[position + 1]))
        if not runs:
            return
        ids = ids_at({line for run in runs.values() for line in run})
        for run in runs.values():
            first_of: dict[str, int] = {}
            for line in run:
                if ids[line] in first_of:
                    errors.append((line, "id", f"repeats the id of line {first_of[ids[line]]}"))
                else:
                    first_of[ids[line]] = line


def _options_changed_by(project: Project, label_set: tuple[str, ...]) -> dict:
    """The project's settings an import of rows voting with `label_set` would change (the task type says
    which settings an import sets)."""
    wanted = project.task.options_from_import(project.options, tuple(label_set))
    return {name: value for name, value in wanted.items() if project.options.get(name) != value}


def _check_example_rows(project: Project, rows: list[ExampleRow], errors: list) -> None:
    checks = ExampleRowChecks(project)
    for row in rows:
        checks.check(row, errors)
    checks.finish(errors, lambda lines: {row.line: _identity(row) for row in rows if row.line in lines})


def _write_examples(project: Project, rows: list[ExampleRow], skipped: list[Skipped], purpose: str) -> ImportReport:
    report = ImportReport(skipped=len(skipped), skipped_reasons=dict(Counter(s.reason for s in skipped)))
    report.unique_hypotheses = len({row.hypothesis for row in rows})
    with transaction.atomic():
        _write_example_batches(project, [rows], {row.label_set for row in rows if row.imported_labels}, purpose, report)
    return report


def _write_example_batches(project: Project, batches, label_sets: set, purpose: str, report: ImportReport) -> None:
    """Write examples, their items (or atoms and atom items) and imported votes batch by batch (inside the
    caller's transaction); rows whose key the project already has are counted as already present."""
    task = project.task
    existing = dict(project.examples.values_list("key", "id"))
    if not task.label_distributions:
        label_sets = set()  # votes are kept only where items collect label distributions
    changes = _options_changed_by(project, next(iter(label_sets))) if label_sets else {}
    if changes:
        project.options = {**project.options, **changes}
        project.save(update_fields=["options"])
    position = project.examples.count()
    for rows in batches:
        new_rows, atom_rows = [], []
        for row in rows:
            if row.atoms:
                atom_rows.append(row)
            if row.key in existing:
                report.already_present += not row.atoms
            else:
                existing[row.key] = None  # a later line of the same example (one per atom) makes no second one
                new_rows.append(row)
        examples = Example.objects.bulk_create(
            [_example_of(row, project, position + offset) for offset, row in enumerate(new_rows)],
            batch_size=2000,
        )
        existing.update({example.key: example.id for example in examples})
        position += len(examples)
        report.created += len(examples)
        if not task.per_atom:
            votes = [row.imported_labels if label_sets else [] for row in new_rows]
            items = [
                _new_item(
                    project,
                    example,
                    labels=labels,
                    group=row.group,
                    gold=row.gold if (row.pool or purpose) == pools.GOLD else None,
                )
                for example, row, labels in zip(examples, new_rows, votes)
            ]
            Item.objects.bulk_create(items, batch_size=2000)
            report.items += len(items)
            report.gold_items += sum(item.is_gold for item in items)
            annotations = [
                Annotation(item=item, raw={"value": label}, value=label, imported=True, count=count)
                for item, row, labels in zip(items, new_rows, votes)
                for label, count in ([(label, 1) for label in labels] if row.ordered_votes else Counter(labels).items())
            ]
            Annotation.objects.bulk_create(annotations, batch_size=5000)
            report.annotations += sum(annotation.count for annotation in annotations)
        elif atom_rows:
            _write_row_atoms(project, atom_rows, existing, purpose, report)


def _write_row_atoms(
    project: Project, rows: list[ExampleRow], example_ids: dict[str, int], purpose: str, report: ImportReport
) -> None:
    """The atoms that lines of a per-atom study's own export carry, one item each (atoms already there are
    counted as already present)."""
    ids = {example_ids[row.key] for row in rows}
    existing = set(Atom.objects.filter(example_id__in=ids).values_list("example_id", "text"))
    atoms, pools_of = [], []
    for row in rows:
        for atom in row.atoms:
            key = (example_ids[row.key], atom["text"])
            if key in existing:
                report.already_present += 1
                continue
            existing.add(key)
            atoms.append(
                Atom(
                    example_id=key[0],
                    text=atom["text"],
                    order=atom["order"] or 0,
                    validity=atom["validity"],
                    effect=atom["effect"],
                )
            )
            pools_of.append(atom)
    Atom.objects.bulk_create(atoms, batch_size=2000)
    items = [
        _new_item(
            project,
            None,
            atom,
            gold=spec["gold"] if (spec["pool"] or purpose) == pools.GOLD else None,
            example_id=atom.example_id,
        )
        for atom, spec in zip(atoms, pools_of)
    ]
    Item.objects.bulk_create(items, batch_size=2000)
    report.atoms += len(atoms)
    report.items += len(items)
    report.gold_items += sum(item.is_gold for item in items)


STREAMED_BATCH_ROWS = 5000


def _import_examples_streamed(project: Project, stream, fmt: str, context: ReadContext, progress) -> ImportReport:
    """A data import in two passes over a stream that can be read again, so memory stays flat whatever the
    file's size: check every row keeping only ids, then read again and write in batches, in one
    transaction. A bad row anywhere, the last one included, still stores nothing."""
    import numpy  # here, not at the top: web processes that never import stay lean

    errors, skipped = [], Counter()
    checks = ExampleRowChecks(project)
    pool_checks = PoolChecks(project, "data")
    hypotheses = array("q")  # fingerprints: the count of distinct hypotheses without holding their text
    line = 0
    for line, row in read_rows(stream, fmt, context):
        if progress and line % PROGRESS_ROWS == 0:
            progress(line)
        if isinstance(row, RowError):
            errors.append((line, row.field, row.message))
        elif isinstance(row, Skipped):
            skipped[row.reason] += 1
        else:
            checks.check(row, errors)
            pool_checks.check(row, errors)
            hypotheses.append(_fingerprint(row.hypothesis))
    if progress:
        progress(line)

    def ids_at(lines: set[int]) -> dict[int, str]:
        stream.seek(0)
        return {
            line: _identity(row)
            for line, row in read_rows(stream, fmt, context)
            if line in lines and isinstance(row, ExampleRow)
        }

    checks.finish(errors, ids_at)
    if errors:
        raise ImportFileError(sorted(errors, key=lambda error: error[0] or 0))
    distinct_hypotheses = len(numpy.unique(numpy.frombuffer(hypotheses, dtype=numpy.int64)))
    report = ImportReport(
        skipped=sum(skipped.values()), skipped_reasons=dict(skipped), unique_hypotheses=distinct_hypotheses
    )
    label_sets, checks = checks.label_sets, ExampleRowChecks(project)  # the second pass numbers keys alike
    del hypotheses
    stream.seek(0)

    def batches():
        batch = []
        for _, row in read_rows(stream, fmt, context):
            if isinstance(row, ExampleRow):
                checks.check(row, [])
                pool_checks.check(row, [])  # fills each gold row's reference again
                batch.append(row)
                if len(batch) == STREAMED_BATCH_ROWS:
                    yield batch
                    batch = []
        if batch:
            yield batch

    with transaction.atomic():
        _write_example_batches(project, batches(), label_sets, "data", report)
    return _explained(project, fmt, _analyzed(report))


def _new_item(
    project: Project,
    example: Example | None,
    atom: Atom | None = None,
    labels: list[str] = (),
    group: str = "",
    gold=None,
    example_id: int | None = None,
) -> Item:
    """A new item; `gold` (a reference answer) makes it a hidden gold check, served only as one."""
    item = Item(project=project, example=example, atom=atom, target=project.redundancy, coherence_group=group)
    if example is None:
        item.example_id = example_id
    if gold is not None:
        item.is_gold, item.gold = True, gold
        item.claimable, item.status, item.target = False, Item.Status.DONE, 0
    elif labels:  # imported votes: the item is complete as it stands
        aggregate = project.task.aggregate(list(labels), project.options)
        item.annotation_count = len(labels)
        item.target = max(project.redundancy, len(labels))
        item.claimable = False
        item.aggregate = aggregate.value
        item.status = Item.Status.ADJUDICATION if aggregate.tied else Item.Status.DONE
    return item


def _write_atoms(project: Project, rows: list[AtomRow], errors: list, skipped: list, purpose: str) -> ImportReport:
    """Atoms of examples named by id or hypothesis text; a row that carries its example makes it first."""
    by_ref: dict[str, list[Example]] = {}
    by_hypothesis: dict[str, list[Example]] = {}
    for example in project.examples.all():
        by_ref.setdefault(example.source_id, []).append(example)
        by_ref.setdefault(example.key, []).append(example)
        by_hypothesis.setdefault(example.hypothesis, []).append(example)
    carried = [row.example for row in rows if row.example is not None]
    _check_example_rows(project, carried, errors)
    new_examples = [example for example in carried if example.key not in by_ref]
    checks = PoolChecks(project, purpose)
    targets: list[tuple[AtomRow, list]] = []
    for row in rows:
        if row.example is not None and row.example.key not in by_ref:
            found = [row.example]
        else:
            found = by_ref.get(row.example_ref, []) if row.example_ref else by_hypothesis.get(row.hypothesis, [])
        if not found:
            name = "example_id" if row.example_ref else "hypothesis"
            errors.append((row.line, name, "matches no example of this project"))
        for example in found:
            for index, atom in enumerate(row.atoms):
                pool = checks.pool_of(atom["pool"], row.line, errors, f"atoms[{index}].nli_studio.pool")
                if project.task.per_atom:
                    checks.check_text(example, atom["text"], pool, errors, f"atoms[{index}].text")
                    checks.check_atom_gold(row.line, atom, pool, errors, index)
        targets.append((row, found))
    if errors:
        raise ImportFileError(sorted(errors, key=lambda error: error[0] or 0))
    report = ImportReport(skipped=len(skipped))
    report.unique_hypotheses = len({example.hypothesis for _, found in targets for example in found})
    with transaction.atomic():
        made = {}
        if new_examples:
            position = project.examples.count()
            created = Example.objects.bulk_create(
                [_example_of(row, project, position + offset) for offset, row in enumerate(new_examples)]
            )
            made = {example.key: example for example in created}
            report.notes.append(
                f"{len(created)} example{'s' if len(created) != 1 else ''} made from the lines that carry them."
            )
        existing = set(Atom.objects.filter(example__project=project).values_list("example_id", "text"))
        new_atoms, specs = [], []
        for row, found in targets:
            for example in found:
                example = made.get(example.key, example) if isinstance(example, ExampleRow) else example
                for order, atom in enumerate(row.atoms):
                    if (example.id, atom["text"]) in existing:
                        report.already_present += 1
                        continue
                    existing.add((example.id, atom["text"]))
                    new_atoms.append(
                        Atom(
                            example=example,
                            text=atom["text"],
                            validity=atom["validity"],
                            order=order if atom["order"] is None else atom["order"],
                            effect=atom["effect"],
                        )
                    )
                    specs.append(atom)
        Atom.objects.bulk_create(new_atoms, batch_size=2000)
        report.atoms = report.created = len(new_atoms)
        if project.task.per_atom:
            items = [
                _new_item(
                    project, atom.example, atom, gold=spec["gold"] if (spec["pool"] or purpose) == pools.GOLD else None
                )
                for atom, spec in zip(new_atoms, specs)
            ]
            Item.objects.bulk_create(items, batch_size=2000)
            report.items = len(items)
            report.gold_items = sum(item.is_gold for item in items)
    return report


# The tables an import fills, whose planner statistics it refreshes.
IMPORTED_TABLES = (Example, Atom, Item, Annotation)


def _analyzed(report: ImportReport) -> ImportReport:
    if report.created or report.items:
        analyze_imported_tables()
    return report


def analyze_imported_tables() -> None:
    """Fresh PostgreSQL planner statistics for the tables an import fills. Without them the planner
    guesses from the empty tables it last saw: right after an import it expects one claimable item, and
    the claim query scans the worker's whole history for every item instead of reading the index.
    Only these tables: the claim and page tables of a new deployment must stay never-analysed rather than
    analysed empty, or the plans that pooled connections prepare for the first claims (seq scans of an
    "empty" claim table) are kept while the table grows, and each claim reads the worker's whole history
    until autovacuum analyses it (docs/benchmarks.md)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "ANALYZE " + ", ".join(connection.ops.quote_name(model._meta.db_table) for model in IMPORTED_TABLES)
        )


def _write_qualification(project: Project, rows: list[ExampleRow], skipped: list[Skipped]) -> ImportReport:
    from annotation.models import QualificationItem
    from annotation.services.qualification import (
        QualificationError,
        _next_order,
        _refuse_once_taken,
        project_test,
    )

    with transaction.atomic():
        test = project_test(project)
        try:
            _refuse_once_taken(test)
        except QualificationError as error:
            raise ImportFileError([(0, "(file)", str(error))]) from None
        start = _next_order(test)
        QualificationItem.objects.bulk_create(
            [
                QualificationItem(
                    test=test,
                    premise=row.premise,
                    hypothesis=row.hypothesis,
                    update=row.update,
                    order=start + number,
                    reference=row.gold,
                )
                for number, row in enumerate(rows)
            ]
        )
    return ImportReport(skipped=len(skipped), qualification_items=len(rows))


def _explained(project: Project, fmt: str, report: ImportReport) -> ImportReport:
    """Say why a good file added no items, so that "0 new items" is never left unexplained."""
    task = project.task
    if report.items:
        return report
    if report.created and task.per_atom and fmt != "atoms":
        report.notes.append(
            f"These {report.created} rows are examples; a {task.label} project annotates their atoms, one item "
            "per atom. Import the atoms next (format atoms, matching the examples by id or hypothesis)."
        )
    elif report.already_present and not report.created:
        report.notes.append(f"All {report.already_present} rows were imported before: nothing is new.")
    elif not report.created and not report.already_present:
        reasons = ", ".join(f"{count} {reason}" for reason, count in report.skipped_reasons.items())
        report.notes.append("The file has no rows to import" + (f" ({reasons} skipped)." if reasons else "."))
    return report
