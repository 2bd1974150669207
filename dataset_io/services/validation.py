"""Checking a dataset file against the published shape of its format (dataset_io.formats): what the
validate_dataset command, the dataset bundle and the tests run on every file the app writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from common.readers import RowError
from dataset_io.formats import get_format

MAX_ERRORS_KEPT = 1000


@dataclass
class ValidationReport:
    format: str
    records: int = 0
    errors: list[RowError] = field(default_factory=list)  # the first MAX_ERRORS_KEPT
    errors_total: int = 0

    @property
    def valid(self) -> bool:
        return self.errors_total == 0

    def as_dict(self, limit: int = MAX_ERRORS_KEPT) -> dict:
        return {
            "format": self.format,
            "valid": self.valid,
            "records": self.records,
            "errors_total": self.errors_total,
            "errors": [{"line": e.line, "field": e.field, "message": e.message} for e in self.errors[:limit]],
        }


def validate(open_stream, fmt: str) -> ValidationReport:
    """Check a file; `open_stream()` opens it (binary), twice: once to check, once to count its records."""
    checker = get_format(fmt)
    report = ValidationReport(fmt)
    with open_stream() as stream:
        for error in checker.validate(stream):
            report.errors_total += 1
            if len(report.errors) < MAX_ERRORS_KEPT:
                report.errors.append(error)
    with open_stream() as stream:
        report.records = checker.count(stream)
    return report


def validate_file(path: str | Path, fmt: str) -> ValidationReport:
    return validate(lambda: open(path, "rb"), fmt)
