"""Benchmark: peak memory of the dataset bundle's Parquet copy (dataset_io/services/tables.py) of a big
per-answer file, the bundle's largest: --rows records shaped as the `annotations` format writes them for the
slider study of benchmarks/export.py (an answer each: its item, anonymised annotator, value, raw slider
position as an object, times, flags).

The file is written to a temporary folder, then a fresh Python process (so its memory is the copy's alone)
imports the module and runs `write_parquet` on it: both reads (column types, then the batches written).

  peak_mb              the copying process's peak resident set size (getrusage ru_maxrss)
  rss_before_mb        its resident set size just before the copy (pyarrow loaded)
  peak_above_start_mb  the difference: what the copy itself added at its peak
Afterwards the Parquet file's row count must equal --rows.

Usage: python benchmarks/parquet.py [--rows 1000000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import PYTHON, REPO_ROOT, argument_parser, emit, load_average, log


def write_answers(path: Path, rows: int) -> None:
    """rows answers as the annotations format writes them (5 per item, times a day apart from a start)."""
    with open(path, "w", encoding="utf-8") as out:
        for n in range(rows):
            item, worker = n // 5, n % 5
            position = (item * 7919 + worker * 104729) % 10001
            record = {
                "item": item + 1,
                "id": f"pair-{item}",
                "atom": None,
                "pool": "data",
                "annotator": f"a{worker:012x}",
                "imported": False,
                "count": 1,
                "value": position / 10000,
                "raw": {"position": position},
                "reason": "",
                "submitted_at": f"2026-11-{1 + n % 28:02d}T10:00:00+00:00",
                "started_at": f"2026-11-{1 + n % 28:02d}T09:59:20+00:00",
                "seconds_spent": 1.5 + (item + worker) % 30,
                "page": item // 5 + 1,
                "late": False,
                "instrument_version": "0123456789abcdef",
                "qualification_score": None,
                "worker_reliability": None,
                "worker_status": "active",
                "simulated": False,
                "excluded": False,
                "excluded_reason": None,
                "excluded_by": None,
            }
            out.write(json.dumps(record) + "\n")


def copy_child(source: str, target: str) -> None:
    """Runs in the fresh process: one copy, its figures as one JSON line on stdout."""
    sys.path.insert(0, str(REPO_ROOT))
    from dataset_io.services.tables import write_parquet

    before = _rss_mb()
    start = time.perf_counter()
    found = write_parquet(lambda: open(source, "rb"), "jsonl", target)  # noqa: SIM115 (opened in a with-block there)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB
    print(json.dumps({"rows": found.rows, "seconds": seconds, "peak_mb": peak, "rss_before_mb": before}))


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    parser = argument_parser(__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return copy_child(*args.child)
    load_before = load_average()
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "answers.jsonl", Path(folder) / "answers.parquet"
        log(f"writing {args.rows} answers")
        write_answers(source, args.rows)
        log(f"copying {source.stat().st_size / 2**20:.0f} MB to Parquet in a fresh process")
        result = subprocess.run(
            [PYTHON, __file__, "--child", str(source), str(target)],
            capture_output=True,
            text=True,
            env=dict(os.environ),
        )
        if result.returncode != 0:
            raise RuntimeError(f"the copying process failed:\n{result.stderr[-3000:]}")
        figures = json.loads(result.stdout.strip().splitlines()[-1])
        import pyarrow.parquet as pq

        written = pq.ParquetFile(target).metadata.num_rows
        if written != args.rows or figures["rows"] != args.rows:
            raise RuntimeError(f"the copy holds {written} rows; expected {args.rows}")
        emit(
            {
                "rows": written,
                "jsonl_mb": round(source.stat().st_size / 2**20, 1),
                "parquet_mb": round(target.stat().st_size / 2**20, 1),
                "seconds": round(figures["seconds"], 1),
                "peak_mb": round(figures["peak_mb"], 1),
                "rss_before_mb": round(figures["rss_before_mb"], 1),
                "peak_above_start_mb": round(figures["peak_mb"] - figures["rss_before_mb"], 1),
                "load_average_before": load_before,
            },
            args.json,
        )


if __name__ == "__main__":
    sys.exit(main())
