"""A study's data as a model job's input file: written by the study's own exporter (the first of the formats
the job accepts that fits the study's task type), then copied into the job like an upload."""

from __future__ import annotations

import csv
from pathlib import Path

from dataset_io.formats import ExportOptions, exportable
from dataset_io.services import exporters
from jobs.services import JobError

# The export that carries gold probabilities, and the column holding them.
PROBABILITY_FORMAT, PROBABILITY_COLUMN = "usnli", "unli"
# A study as a model's gold: its own final labels, every item with one; as pairs to run on: every item.
STUDY_GOLD = ExportOptions(study_gold=True)
STUDY_PAIRS = ExportOptions(include_unanswered=True)


def fitting_format(project, formats: tuple[str, ...]) -> str | None:
    """The first of `formats` the study's task type exports, or None."""
    offered = exportable(project.task, project.options)
    return next((fmt for fmt in formats if fmt in offered), None)


def export_study(project, formats: tuple[str, ...], folder: Path, gold: bool = True) -> Path:
    """Write the study's export in the first fitting format into `folder` (gold: its final labels; else every
    pair); JobError when none fits or the export holds no usable row."""
    fmt = fitting_format(project, formats)
    if fmt is None:
        raise JobError(
            f"study {project.slug} ({project.task.label}) exports none of {', '.join(formats)}, which this job reads"
        )
    path = Path(folder) / exporters.file_name(project, fmt)
    written = exporters.write_export(project, fmt, path, options=STUDY_GOLD if gold else STUDY_PAIRS)
    if fmt == PROBABILITY_FORMAT and gold:
        written = keep_rows_with_probability(path)
    if written == 0:
        raise JobError(
            f"study {project.slug} has no rows to use yet"
            + (" (no item has a final probability)" if fmt == PROBABILITY_FORMAT else "")
        )
    return path


def keep_rows_with_probability(path: Path) -> int:
    """Drop the rows of a U-SNLI export whose probability is still empty (items not settled yet): a study's
    gold is what it has settled. Returns the rows kept."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    kept = [row for row in rows if (row.get(PROBABILITY_COLUMN) or "").strip()]
    if rows and len(kept) == len(rows):
        return len(kept)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(
            handle, fieldnames=list(rows[0]) if rows else ["id", "pre", "hyp", "nli", "unli"], lineterminator="\n"
        )
        writer.writeheader()
        writer.writerows(kept)
    return len(kept)
