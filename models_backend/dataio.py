"""Reading premise/hypothesis rows from JSONL or CSV, with errors that name the file, line and field. The
files are read by the project's one JSONL and one CSV reader (common.readers)."""

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from common.readers import RowError, csv_rows, json_lines

ID_FIELDS = ("id", "uid", "pairID")
PREMISE_FIELDS = ("premise", "pre", "Premise", "sentence1")
HYPOTHESIS_FIELDS = ("hypothesis", "hyp", "Hypothesis", "sentence2")


class InputError(RowError):
    """A row of an input file is malformed; the message names file, line and field."""

    def __init__(self, message: str):
        super().__init__(None, message)


@dataclass
class PairRow:
    id: str
    premise: str
    hypothesis: str
    record: dict = field(default_factory=dict, repr=False)


def iter_records(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, record) for each row of a .csv file (header row) or a JSONL file (anything else)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    with path.open("rb") as handle:
        rows = csv_rows(handle, file=path) if path.suffix.lower() == ".csv" else json_lines(handle, file=path)
        for line_no, record in rows:
            if isinstance(record, RowError):
                raise record
            yield line_no, record


def _first_field(record: dict, names: tuple[str, ...], path: Path, line_no: int) -> str:
    for name in names:
        value = record.get(name)
        if value is not None and str(value).strip() != "":
            return str(value)
    raise InputError(f"{path}:{line_no}: field {names[0]!r} is missing or empty (also tried {', '.join(names[1:])})")


def read_pairs(path: str | Path) -> list[PairRow]:
    """Rows with an id, a premise and a hypothesis.

    Accepted spellings: id/uid/pairID, premise/pre/Premise/sentence1, hypothesis/hyp/Hypothesis/sentence2;
    a ChaosNLI row's nested ``example`` object is read in place of the row itself.
    """
    path = Path(path)
    rows = []
    for line_no, record in iter_records(path):
        source = record["example"] if isinstance(record.get("example"), dict) else record
        rows.append(
            PairRow(
                id=_first_field(source, ID_FIELDS, path, line_no),
                premise=_first_field(source, PREMISE_FIELDS, path, line_no),
                hypothesis=_first_field(source, HYPOTHESIS_FIELDS, path, line_no),
                record=record,
            )
        )
    if not rows:
        raise InputError(f"{path}: no rows")
    return rows


def read_usnli(path: str | Path, limit: int | None = None) -> tuple[list[PairRow], list[float]]:
    """U-SNLI CSV rows (id, pre, hyp, ..., unli) and their probabilities, checked to lie in [0, 1]."""
    path = Path(path)
    rows, targets = [], []
    for line_no, record in iter_records(path):
        if limit is not None and len(rows) >= limit:
            break
        row = PairRow(
            id=_first_field(record, ID_FIELDS, path, line_no),
            premise=_first_field(record, PREMISE_FIELDS, path, line_no),
            hypothesis=_first_field(record, HYPOTHESIS_FIELDS, path, line_no),
            record=record,
        )
        raw = _first_field(record, ("unli", "probability"), path, line_no)
        try:
            target = float(raw)
        except ValueError as exc:
            raise InputError(f"{path}:{line_no}: field 'unli' is not a number ({raw!r})") from exc
        if not 0.0 <= target <= 1.0:
            raise InputError(f"{path}:{line_no}: field 'unli' must lie in [0, 1], got {target}")
        rows.append(row)
        targets.append(target)
    if not rows:
        raise InputError(f"{path}: no rows")
    return rows, targets


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
