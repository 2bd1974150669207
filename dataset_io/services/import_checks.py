"""The checks every imported row passes before anything is written (dataset_io.services.importers
reads, these check, import_writing writes): the pool each row goes to and its gold reference, no text in two
pools of a study, column widths, repeated ids (kept as fingerprints, so a big file is never held whole), one
label set per file. A failed check is an ImportFileError naming the line and field; nothing is written."""

from __future__ import annotations

import hashlib
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from annotation.models import Atom, Example, Project
from annotation.services import pools
from annotation.services.answers import SubmissionError, parse_reference
from annotation.services.quality import gold_reference
from dataset_io.formats.base import CONTENT_KEY, ExampleRow, Skipped, content_key

MAX_ERRORS_REPORTED = 50


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
        # One error reads as one line (the command line's error, the API's detail); several, one a line.
        super().__init__("nothing was imported:" + (f" {lines[0]}" if len(lines) == 1 else "\n" + "\n".join(lines)))


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
        return gold_reference(self.project, Example.from_source(row, None, 0), None)


def keep_fields(rows: list[ExampleRow], fields: tuple[str, ...], skipped: list[Skipped]) -> list[ExampleRow]:
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


def fingerprint(text: str) -> int:
    """A deterministic 64-bit fingerprint: eight bytes a row where a big file's ids would take ~130."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def identity(row: ExampleRow) -> str:
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
            content = fingerprint(identity(row))
            self.occurrences[content] += 1
            row.key = f"{row.key}:{self.occurrences[content]}"
        else:
            self.id_fingerprints.append(fingerprint(identity(row)))
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
                    for name, value in options_changed_by(self.project, next(iter(self.label_sets))).items()
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


def options_changed_by(project: Project, label_set: tuple[str, ...]) -> dict:
    """The project's settings an import of rows voting with `label_set` would change (the task type says
    which settings an import sets)."""
    wanted = project.task.options_from_import(project.options, tuple(label_set))
    return {name: value for name, value in wanted.items() if project.options.get(name) != value}


def check_example_rows(project: Project, rows: list[ExampleRow], errors: list) -> None:
    checks = ExampleRowChecks(project)
    for row in rows:
        checks.check(row, errors)
    checks.finish(errors, lambda lines: {row.line: identity(row) for row in rows if row.line in lines})
