"""Benchmark: time and peak memory of the jsonl export (every raw annotation) of a big project, or of its
dataset bundle (--what bundle: every format, the data statement with its agreement figures, validation).

Builds an unli_slider project holding --annotations worker annotations (--per-item workers answered each
of annotations / per-item items, drawn in rotation from a crowd of --workers, default --per-item; all items
done) with INSERT ... SELECT statements, on SQLite in a
temporary NLI_STUDIO_VAR folder (default) or in a scratch PostgreSQL database (--database postgres).
Then a fresh Python process (so its memory is the export's alone) loads Django and runs
`write_export(project, "jsonl", path)`, the code behind the export_dataset command and the API download (or
`write_bundle(project, path)`, behind `export_dataset --bundle` and the bundle job).

Memory figures of that export process:
  peak_mb            its peak resident set size (getrusage ru_maxrss): interpreter, Django and the export
  rss_before_mb      its resident set size just before the export started (Django loaded, connected)
  peak_above_start_mb  the difference: what the export itself added at its peak
  agreement_peak_above_start_mb  (a bundle) peak_above_start_mb once the agreement figures, the bundle's
                     first step, are done (they hold the answers as arrays; the files come after them)
  tracemalloc_peak_mb  (with --tracemalloc, a second export run) peak of Python allocations during it
Afterwards the file is read back: every line must parse and the annotations in it must add up (a bundle:
its jsonl file, and every file valid by its validation.json).

Usage: python benchmarks/export.py [--annotations 1000000] [--per-item 5] [--workers W]
                                   [--database sqlite|postgres] [--what jsonl|bundle] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from _common import (
    PYTHON,
    analyze,
    argument_parser,
    bulk_items,
    django_on_scratch_database,
    emit,
    insert_select,
    load_average,
    log,
    make_author,
    make_workers,
    series_sql,
    setup_django,
)

SLUG = "export-bench"


def build_project(annotations: int, per_item: int, crowd: int) -> int:
    """The project with annotations // per_item done items and per_item annotations each, item i's from workers
    i * per_item + k (k < per_item) modulo the crowd; returns how many."""
    from django.db import connection, transaction

    from annotation.models import Annotation
    from annotation.services.projects import create_project

    items = annotations // per_item
    workers = make_workers(crowd)
    first_id = int(workers[0].pk)
    if [int(worker.pk) for worker in workers] != list(range(first_id, first_id + crowd)):
        raise RuntimeError("the crowd's user ids are not consecutive; the rotation below needs them to be")
    project = create_project(SLUG, "unli_slider", make_author(), redundancy=per_item, max_annotations=per_item)
    postgres = connection.vendor == "postgresql"
    worker = f"({first_id} + (i.id * {per_item} + s.n - 1) %% {crowd})"
    # Slider positions spread by item and worker; the value is position / 10000 (a stand-in for the map).
    position = f"((i.id * 7919 + {worker} * 104729) %% 10001)"  # %% : the statement takes parameters
    if postgres:
        raw, value = f"jsonb_build_object('position', {position})", f"to_jsonb({position} / 10000.0)"
        aggregate, started = "to_jsonb(0.5)", "now() - interval '40 seconds'"
    else:
        raw, value = f"json_object('position', {position})", f"json_quote({position} / 10000.0)"
        aggregate, started = "json_quote(0.5)", "datetime('now', '-40 seconds')"
    start = time.perf_counter()
    bulk_items(
        project,
        items,
        status="'done'",
        claimable="false",
        annotation_count=str(per_item),
        aggregate=aggregate,
    )
    log(f"{items} items in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    with transaction.atomic():
        created = insert_select(
            Annotation,
            {
                "item_id": "i.id",
                "worker_id": worker,
                "raw": raw,
                "value": value,
                "seconds_spent": f"1.5 + (i.id + {worker}) %% 30",
                "started_at": started,
            },
            f"annotation_item i CROSS JOIN {series_sql()} WHERE i.project_id = {int(project.pk)} ORDER BY i.id, s.n",
            [per_item],
        )
    analyze()
    log(f"{created} annotations in {time.perf_counter() - start:.1f} s")
    return created


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def export_child(args) -> None:
    """Runs in the fresh process: one export, its figures as one JSON line on stdout."""
    setup_django(os.environ["DATABASE_URL"], os.environ["NLI_STUDIO_VAR"])
    import tracemalloc

    from django.db import connection

    from annotation.models import Project
    from dataset_io.services.exporters import write_export

    project = Project.objects.get(slug=SLUG)
    connection.ensure_connection()
    if args.what == "bundle":  # its modules (scipy, pandas for the figures) count as start-up, not as the bundle
        import annotation.services.analysis.agreement  # noqa: F401
        from dataset_io.services.bundle import write_bundle
    before = rss_mb()
    if args.trace:
        tracemalloc.start()
    start = time.perf_counter()
    agreement_peak = None
    if args.what == "bundle":

        def progress(step, steps):  # the agreement figures are the first step, the files come after
            nonlocal agreement_peak
            if step == 1:
                agreement_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        statement = write_bundle(project, args.out, progress=progress)
        records = sum(file["records"] for file in statement["files"])
    else:
        records = write_export(project, "jsonl", args.out)
    seconds = time.perf_counter() - start
    traced = tracemalloc.get_traced_memory()[1] / 2**20 if args.trace else None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB
    print(
        json.dumps(
            {
                "records": records,
                "seconds": seconds,
                "peak_mb": peak,
                "rss_before_mb": before,
                "agreement_peak_mb": agreement_peak,
                "tracemalloc_peak_mb": traced,
            }
        )
    )


def run_export(out: Path, database_url: str, var_dir: str, trace: bool, what: str) -> dict:
    command = [PYTHON, __file__, "--child", "--out", str(out), "--what", what] + (["--trace"] if trace else [])
    # As bin/serve runs it: DEBUG off, or Django's development log keeps the text of the last 9,000 statements
    # (0.84 MB of SQL for a 50,000-answer bundle, and it grows with the study).
    env = dict(
        os.environ, DATABASE_URL=database_url, NLI_STUDIO_VAR=var_dir, DEBUG="false", SECRET_KEY="benchmark-only"
    )
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"the export process failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def count_file(path: Path) -> tuple[int, int]:
    """(lines, annotations) of a jsonl export; every line must be a JSON object."""
    lines = annotations = 0
    with open(path, encoding="utf-8") as records:
        for line in records:
            annotations += len(json.loads(line)["nli_studio"]["annotations"])
            lines += 1
    return lines, annotations


def check_bundle(path: Path, folder: Path) -> tuple[int, int]:
    """(lines, annotations) of the bundle's jsonl file; every file of the bundle must be valid, and the
    annotations' Parquet copy must hold every answer."""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        validation = json.loads(archive.read("validation.json"))
        invalid = [name for name, report in validation.items() if not report["valid"]]
        if invalid:
            raise RuntimeError(f"the bundle holds invalid files: {invalid}")
        import pyarrow.parquet as pq

        with archive.open(f"data/{SLUG}-annotations.parquet") as copy:  # one row per answer
            parquet_rows = pq.ParquetFile(copy).metadata.num_rows
        lines, annotations = count_file(Path(archive.extract(f"data/{SLUG}-jsonl.jsonl", folder)))
        if parquet_rows != annotations:
            raise RuntimeError(f"the annotations' Parquet copy holds {parquet_rows} rows, not {annotations}")
        return lines, annotations


def main():
    parser = argument_parser(__doc__)
    parser.add_argument("--annotations", type=int, default=1_000_000)
    parser.add_argument("--per-item", type=int, default=5, help="annotations (workers) per item")
    parser.add_argument("--workers", type=int, help="the crowd the answers rotate through (default: --per-item)")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--what", choices=("jsonl", "bundle"), default="jsonl")
    parser.add_argument("--tracemalloc", action="store_true", help="export a second time under tracemalloc")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return export_child(args)
    args.workers = args.workers or args.per_item
    if not 1 <= args.per_item <= 100 or args.annotations < args.per_item:
        parser.error("--per-item must be 1..100 and --annotations at least --per-item")
    if not args.per_item <= args.workers <= 100_000:
        parser.error("--workers must be at least --per-item (each item's workers differ) and at most 100,000")

    load_before = load_average()
    with django_on_scratch_database("export", args.database) as (url, var_dir):
        from django.db import connections

        created = build_project(args.annotations, args.per_item, args.workers)
        connections.close_all()

        out = Path(var_dir) / ("export.jsonl" if args.what == "jsonl" else "bundle.zip")
        log(f"exporting ({args.what}) in a fresh process")
        figures = run_export(out, url, var_dir, trace=False, what=args.what)
        log(
            f"exported {figures['records']} records in {figures['seconds']:.1f} s; peak RSS {figures['peak_mb']:.0f} MB"
        )
        traced = None
        if args.tracemalloc:
            traced = run_export(out, url, var_dir, trace=True, what=args.what)["tracemalloc_peak_mb"]
            log(f"tracemalloc peak {traced:.1f} MB")
        file_mb = out.stat().st_size / 2**20
        lines, exported = count_file(out) if args.what == "jsonl" else check_bundle(out, Path(var_dir))
        if exported != created or (args.what == "jsonl" and lines != figures["records"]):
            raise RuntimeError(f"the file holds {lines} lines / {exported} annotations; expected {created}")

    result = {
        "what": args.what,
        "rows": exported,
        "workers": args.workers,
        "seconds": round(figures["seconds"], 1),
        "peak_mb": round(figures["peak_mb"], 1),
        "rss_before_mb": round(figures["rss_before_mb"], 1),
        "peak_above_start_mb": round(figures["peak_mb"] - figures["rss_before_mb"], 1),
        "lines": lines,
        "file_mb": round(file_mb, 1),
        "annotations_per_s": round(exported / figures["seconds"]),
        "database": "postgresql" if args.database == "postgres" else "sqlite",
        "load_average_before": load_before,
    }
    if figures["agreement_peak_mb"] is not None:  # a bundle: peak RSS once its agreement figures are done
        result["agreement_peak_above_start_mb"] = round(figures["agreement_peak_mb"] - figures["rss_before_mb"], 1)
    if traced is not None:
        result["tracemalloc_peak_mb"] = round(traced, 1)
    emit(result, args.json)


if __name__ == "__main__":
    sys.exit(main())
