"""The dataset bundle: what a lab publishes, in one zip; unzipped, a Hugging Face dataset repository.

    README.md                     the dataset card: the Hub's YAML metadata (license, task, annotators, size,
                                  one config per format) and the data statement (dataset_io.services.dataset_card)
    data/<study>-<format>.<ext>   every export format that fits the study, streamed from the database
    data/<study>-<format>.parquet its Parquet copy, when asked or above a size (dataset_io.services.tables)
    croissant.json                Croissant metadata: every file with its SHA-256, a record set per format
    instrument_versions.json      every version of what workers saw (instructions, settings), with its text
    data_statement.json / .md     counts, annotators, redundancy reached, agreement with its interval, time per
                                  item, exclusions with reasons, the qualification and gold rules, and the
                                  fields of every file
    validation.json               each data file checked against its format's published shape

Each data file is written into the archive chunk by chunk and the figures come from database aggregates and
streams of plain values, so memory does not grow with the study, except for the agreement figures, which hold
what the agreement command holds: 16 bytes an answer and 8 per value two workers share, however large the
crowd (annotation.services.analysis.agreement).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from django.db.models import Count, Q, Sum

from annotation.models import Annotation, Item, Project, QualificationAttempt, WorkerStatus
from annotation.services import instrument
from dataset_io.formats import FORMATS, ExportOptions, exportable
from dataset_io.services import tables
from dataset_io.services.croissant import croissant
from dataset_io.services.dataset_card import CardDetails, card_markdown
from dataset_io.services.provenance import annotator_id
from dataset_io.services.validation import validate

POLICY = (
    "Aggregates count imported votes and the answers of workers who were not excluded. A tie is never broken: "
    "its label is null and flagged as a tie unless an author adjudicated the item (then the adjudicated label, "
    "flagged). Imported labels, probabilities and votes are kept in the format's own fields and never "
    "overwritten; collected ones travel beside them. Items with nothing to report are left out unless asked for "
    "(then flagged). Answers of excluded workers appear, flagged with the reason and who decided, in the "
    "per-annotation records only. Gold checks and qualification items are separate pools; gold checks appear "
    "only when asked for, flagged."
)


def write_bundle(
    project: Project,
    path: str | Path,
    progress=None,
    options: ExportOptions = ExportOptions(),
    card: CardDetails = CardDetails(),
    parquet: bool | None = None,
) -> dict:
    """Write the bundle to `path`; returns its data statement. progress(step, steps) after each step.
    card: the author's details for the dataset card (checked by dataset_card.card_details). parquet: a Parquet
    copy of every data file (True), of none (False), or of those above tables.PARQUET_ABOVE_BYTES (None)."""
    from annotation.services.analysis.agreement import project_agreement  # scipy and pandas: only when a bundle is made

    formats = exportable(project.task, project.options)
    steps = len(formats) * 2 + 2
    step = 0

    def advance():
        nonlocal step
        step += 1
        if progress:
            progress(step, steps)

    # The agreement figures first, while nothing else is held: their arrays grow with the study; the files are
    # written and read back a batch at a time.
    agreement = project_agreement(project, bootstrap=1000, seed=0)
    advance()
    names, digests = {}, {}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for fmt in formats:
            names[fmt] = f"data/{FORMATS[fmt].file_name(project)}"
            digest, size = hashlib.sha256(), 0
            with archive.open(names[fmt], "w", force_zip64=True) as member:
                for chunk in FORMATS[fmt].write(project, options):
                    data = chunk.encode("utf-8")
                    member.write(data)
                    digest.update(data)
                    size += len(data)
            digests[names[fmt]] = {"sha256": digest.hexdigest(), "bytes": size}
            advance()
    reports, shapes, copies = {}, {}, {}
    mixed = len({FORMATS[fmt].extension for fmt in formats}) > 1
    with tempfile.TemporaryDirectory() as scratch:
        with zipfile.ZipFile(path) as archive:
            for fmt in formats:
                opener = lambda name=names[fmt]: archive.open(name)  # noqa: E731
                reports[fmt] = validate(opener, fmt)
                extension = FORMATS[fmt].extension
                if tables.wants_parquet(parquet, digests[names[fmt]]["bytes"], mixed):
                    copies[fmt] = Path(scratch) / f"{fmt}.parquet"
                    shapes[fmt] = tables.write_parquet(opener, extension, copies[fmt])
                else:
                    shapes[fmt] = tables.shape(opener, extension)
                advance()
        statement = data_statement(
            project,
            agreement,
            files=[
                {
                    "name": names[fmt],
                    "format": fmt,
                    "title": FORMATS[fmt].title,
                    "records": reports[fmt].records,
                    "rows": shapes[fmt].rows,
                    "valid": reports[fmt].valid,
                    "parquet": parquet_name(names[fmt]) if fmt in copies else None,
                    "columns": [{"name": name, "type": str(kind)} for name, kind in shapes[fmt].columns.items()],
                    "fields": [field.__dict__ for field in FORMATS[fmt].fields],
                }
                for fmt in formats
            ],
            options=options,
        )
        with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
            for fmt, copy in copies.items():  # Parquet is compressed already
                archive.write(copy, parquet_name(names[fmt]), compress_type=zipfile.ZIP_STORED)
                digests[parquet_name(names[fmt])] = {"sha256": _sha256_file(copy), "bytes": copy.stat().st_size}
            texts = {
                "instrument_versions.json": _json(instrument.versions(project)),
                "data_statement.json": _json(statement),
                "DATA_STATEMENT.md": statement_markdown(statement),
                "validation.json": _json({names[fmt]: reports[fmt].as_dict(limit=100) for fmt in formats}),
            }
            configs = dataset_configs(statement["files"])
            texts["README.md"] = card_markdown(statement, card, project.task, configs, texts["DATA_STATEMENT.md"])
            for name, text in texts.items():
                data = text.encode("utf-8")
                archive.writestr(name, data)
                digests[name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            archive.writestr("croissant.json", _json(croissant(statement, card, digests)))  # every file but itself
    advance()
    return statement


def dataset_configs(files: list[dict]) -> list[dict]:
    """The card's configs, one per data file with rows (`datasets` cannot load an empty file), each reading its
    Parquet copy where there is one. `datasets` reads every config of a repository with the builder of the
    first one's files: without Parquet copies, a study whose formats mix CSV and JSON Lines gets configs for
    its JSON Lines files only (its CSV files load with `load_dataset("csv", data_files=...)`)."""
    readable = [file for file in files if file["rows"]]
    paths = [file["parquet"] or file["name"] for file in readable]
    kinds = {path.rsplit(".", 1)[1] for path in paths}
    return [
        {
            "config_name": file["format"],
            "path": path,
            "rows": file["rows"],
            "json_columns": [c["name"] for c in file["columns"] if c["type"] == tables.JSON_TEXT and file["parquet"]],
        }
        for file, path in zip(readable, paths)
        if len(kinds) == 1 or path.endswith(".jsonl")
    ]


def parquet_name(name: str) -> str:
    """A data file's Parquet copy, beside it: data/study-usnli.csv -> data/study-usnli.parquet."""
    return f"{name.rsplit('.', 1)[0]}.parquet"


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def data_statement(
    project: Project, agreement: dict, files: list[dict], options: ExportOptions = ExportOptions()
) -> dict:
    """What a reader of the dataset needs to know about how it was made, from the study as it stands and its
    agreement figures (annotation.services.analysis.agreement.project_agreement)."""

    items = Item.objects.filter(project=project)
    data = items.filter(is_gold=False)
    counts = data.aggregate(
        items=Count("id"),
        settled=Count("id", filter=~Q(status=Item.Status.OPEN)),
        tied=Count("id", filter=Q(status=Item.Status.ADJUDICATION, adjudicated__isnull=True, aggregate__isnull=True)),
        adjudicated=Count("id", filter=Q(adjudicated__isnull=False)),
    )
    answers = Annotation.objects.filter(item__project=project, item__is_gold=False)
    collected = answers.filter(imported=False)
    test = project.qualification
    return {
        "study": {
            "slug": project.slug,
            "title": project.title,
            "task_type": project.task_type,
            "task": project.task.label,
            "status": project.status,
            "created_at": project.created_at.isoformat(),
            "statement_written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        },
        "items": {
            "data": counts["items"],
            "settled": counts["settled"],
            "tied": counts["tied"],
            "adjudicated": counts["adjudicated"],
            "gold_checks": items.filter(is_gold=True).count(),
            "qualification": test.items.count() if test else 0,
        },
        "answers": {
            "collected": collected.filter(excluded=False).count(),
            "excluded": collected.filter(excluded=True).count(),
            "imported_votes": answers.filter(imported=True).aggregate(n=Sum("count"))["n"] or 0,
            "gold_check_answers": Annotation.objects.filter(item__project=project, item__is_gold=True).count(),
        },
        "annotators": {
            "with_counted_answers": collected.filter(excluded=False).values("worker").distinct().count(),
            "excluded": WorkerStatus.objects.filter(project=project, exclude_answers=True).count(),
        },
        "redundancy": _redundancy(project, data),
        "agreement": {
            name: agreement.get(name)
            for name in (
                "level",
                "krippendorff_alpha",
                "krippendorff_alpha_ci",
                "pairwise",
                "split_half_jsd",
                "bootstrap",
                "unavailable",
                "n_items",
                "n_workers",
            )
        },
        "time": _time(collected),
        "exclusions": _exclusions(project),
        "qualification": _qualification(project, test),
        "gold": {
            "rate": project.gold_rate,
            "checks_before_suspension": project.gold_min_checks,
            "suspend_below": project.suspend_below or None,
            "rule": "a gold check counts as passed when the answer matches its reference as the task type "
            "grades it; a reference a worker was shown is never used to check them",
        },
        "instrument_versions": [
            {key: version[key] for key in ("number", "digest", "created_at", "pages", "current")}
            for version in instrument.versions(project)
        ],
        "aggregation_policy": POLICY,
        "export_options": {"include_gold": options.include_gold, "include_unanswered": options.include_unanswered},
        "files": files,
    }


def _redundancy(project: Project, data) -> dict:
    per_item = np.fromiter(
        (count for count in data.values_list("annotation_count", flat=True).iterator(chunk_size=10_000)), dtype=np.int64
    )
    return {
        "planned": project.redundancy,
        "most": project.max_annotations,
        "answers_per_item": _spread(per_item),
        "share_reaching_planned": float((per_item >= project.redundancy).mean()) if per_item.size else None,
    }


def _time(collected) -> dict:
    seconds = np.fromiter(
        (
            s
            for s in collected.filter(excluded=False, seconds_spent__isnull=False)
            .values_list("seconds_spent", flat=True)
            .iterator(chunk_size=10_000)
        ),
        dtype=float,
    )
    return {
        "median_seconds_per_item": float(np.median(seconds)) if seconds.size else None,
        "answers_timed": int(seconds.size),
    }


def _spread(values: np.ndarray) -> dict | None:
    if not values.size:
        return None
    return {
        "min": int(values.min()),
        "median": float(np.median(values)),
        "mean": float(values.mean()),
        "max": int(values.max()),
    }


def _exclusions(project: Project) -> list[dict]:
    rows = []
    statuses = WorkerStatus.objects.filter(project=project, exclude_answers=True).select_related("blocked_by")
    for status in statuses.order_by("blocked_at"):
        rows.append(
            {
                "annotator": annotator_id(project, status.worker_id),
                "answers": Annotation.objects.filter(
                    item__project=project, worker_id=status.worker_id, excluded=True
                ).count(),
                "reason": status.block_reason or None,
                "decided_by": status.blocked_by.username if status.blocked_by else None,
                "at": status.blocked_at.isoformat() if status.blocked_at else None,
            }
        )
    return rows


def _qualification(project: Project, test) -> dict | None:
    if test is None:
        return None
    attempts = QualificationAttempt.objects.filter(test=test)
    from annotation.services.qualification import RULES

    rules = {setting.name: getattr(test, setting.name) for setting in RULES if hasattr(test, setting.name)}
    return {
        "items": test.items.count(),
        "rules": rules,
        "feedback_shown": bool(test.options.get("show_feedback")),
        "score": project.task.qualification_score,
        "workers_tried": attempts.values("worker").distinct().count(),
        "workers_passed": attempts.filter(passed=True).values("worker").distinct().count(),
    }


def statement_markdown(statement: dict) -> str:
    """The data statement for people: the same facts as data_statement.json, as Markdown."""
    study, items, answers = statement["study"], statement["items"], statement["answers"]
    agreement, redundancy = statement["agreement"], statement["redundancy"]
    lines = [
        f"# Data statement: {study['title']}",
        "",
        f"Study `{study['slug']}` ({study['task']}), {study['status']}; statement written {study['statement_written_at']}.",
        "",
        "## What it holds",
        "",
        f"- {items['data']} data items ({items['settled']} settled, {items['tied']} tied, {items['adjudicated']} "
        f"adjudicated); {items['gold_checks']} gold checks and {items['qualification']} qualification items, kept apart.",
        f"- {answers['collected']} collected answers that count, {answers['excluded']} excluded, "
        f"{answers['imported_votes']} imported votes.",
        f"- {statement['annotators']['with_counted_answers']} annotators with answers that count; "
        f"{statement['annotators']['excluded']} excluded.",
    ]
    spread = redundancy["answers_per_item"]
    if spread:
        share = redundancy["share_reaching_planned"]
        lines.append(
            f"- Answers per item: median {spread['median']:g} (from {spread['min']} to {spread['max']}); "
            f"planned {redundancy['planned']}, at most {redundancy['most']}; {share:.0%} of items reached the plan."
        )
    median = statement["time"]["median_seconds_per_item"]
    lines.append(f"- Median time per item: {median:.1f} s." if median is not None else "- No answer was timed.")
    lines += ["", "## Agreement", ""]
    alpha = agreement.get("krippendorff_alpha")
    if alpha is not None:
        ci = agreement.get("krippendorff_alpha_ci")
        interval = f" (95% interval {ci[0]:.3f} to {ci[1]:.3f}, bootstrap over items)" if ci else ""
        lines.append(f"- Krippendorff's alpha ({agreement['level']}): {alpha:.3f}{interval}.")
    pairwise = agreement.get("pairwise")
    if pairwise:
        ci = pairwise.get("ci")
        interval = f" (95% interval {ci[0]:.3f} to {ci[1]:.3f})" if ci else ""
        lines.append(
            f"- Mean pairwise {pairwise['statistic']} over {pairwise['pairs']} annotator pairs: "
            f"{pairwise['value']:.3f}{interval}."
        )
    for name, reason in (agreement.get("unavailable") or {}).items():
        lines.append(f"- {name}: not reported ({reason}).")
    lines += ["", "## Exclusions", ""]
    lines += [
        f"- {row['annotator']}: {row['answers']} answers left out by {row['decided_by'] or 'an author'}"
        f"{': ' + row['reason'] if row['reason'] else ''}."
        for row in statement["exclusions"]
    ] or ["- None."]
    lines += ["", "## Quality control", ""]
    qualification = statement["qualification"]
    if qualification:
        lines.append(
            f"- Qualification test of {qualification['items']} items ({qualification['score']}); rules "
            f"{json.dumps(qualification['rules'])}; feedback shown: {'yes' if qualification['feedback_shown'] else 'no'}; "
            f"{qualification['workers_passed']} of {qualification['workers_tried']} workers passed."
        )
    else:
        lines.append("- No qualification test.")
    gold = statement["gold"]
    lines.append(
        f"- Gold checks on {gold['rate']:.0%} of pages; {gold['rule']}"
        + (
            f"; workers below {gold['suspend_below']:g} gold accuracy after {gold['checks_before_suspension']} "
            "checks are suspended."
            if gold["suspend_below"]
            else "."
        )
    )
    lines.append(
        f"- Instrument versions: {len(statement['instrument_versions'])} (instrument_versions.json holds "
        "their text; every answer names its version)."
    )
    lines += ["", "## How labels were made", "", POLICY, "", "## Files", ""]
    for file in statement["files"]:
        lines += [
            f"### {file['name']} ({file['title']}, {file['records']} records, "
            f"{'valid' if file['valid'] else 'NOT valid: see validation.json'})",
            "",
            "| field | type | meaning |",
            "|---|---|---|",
        ]
        lines += [
            f"| `{field['name']}`{' (added)' if field['added'] else ''} | {field['type']} | {field['meaning']} |"
            for field in file["fields"]
        ]
        lines.append("")
    return "\n".join(lines) + "\n"
