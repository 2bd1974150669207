"""Import a big JSONL file as the command line does, in a child process: rows per second and peak memory.

    python benchmarks/import_scale.py [--rows 1000000] [--json]

Writes a JSONL file of --rows rows (about 190 bytes each: 1,000,000 rows are about 190 MB, under the
200 MB import limit) into a temporary folder, then in a fresh child process (its own SQLite database in
that folder) runs `manage.py import_items` on it. The child's peak resident memory is read with
resource.getrusage(RUSAGE_CHILDREN) once it has exited. A second file with one bad row near its end is
imported the same way into another project: it must be refused naming the line and store nothing.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import PYTHON, REPO_ROOT, emit, log

GOAL_PEAK_MB = 500


def write_rows(path: Path, rows: int, bad_line: int | None = None) -> int:
    """rows lines of {"id", "premise", "hypothesis"}; line bad_line (1-based) lacks its hypothesis."""
    with open(path, "w", encoding="utf-8") as out:
        for number in range(1, rows + 1):
            record = {
                "id": f"r{number}",
                "premise": f"A person in a red coat walks a dog along the river, scene {number:07d}.",
                "hypothesis": f"Someone is outdoors with an animal near the water, case {number:07d}.",
            }
            if number == bad_line:
                del record["hypothesis"]
            out.write(json.dumps(record) + "\n")
    return path.stat().st_size


def manage(*args: str, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PYTHON, "manage.py", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=check
    )


def count_examples(slug: str, env: dict) -> int:
    code = f"from annotation.models import Example; print(Example.objects.filter(project__slug={slug!r}).count())"
    return int(manage("shell", "-v", "0", "-c", code, env=env).stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="import-scale-") as folder:
        folder = Path(folder)
        env = {**os.environ, "NLI_STUDIO_VAR": str(folder), "DATABASE_URL": "", "REDIS_URL": ""}
        manage("migrate", "--noinput", env=env)
        manage("create_user", "bench", "--role", "author", "--password", "bench-password", env=env)
        for slug in ("scale", "scale-bad"):
            manage("create_project", slug, "--task-type", "nli_label", "--owner", "bench", env=env)
        good, bad = folder / "rows.jsonl", folder / "bad.jsonl"
        log(f"writing {args.rows:,} rows")
        size = write_rows(good, args.rows)
        bad_line = args.rows - 5
        write_rows(bad, args.rows, bad_line=bad_line)

        log(f"importing {size / 1e6:.0f} MB in a child process")
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        started = time.perf_counter()
        imported = manage("import_items", "scale", str(good), "--format", "jsonl", "--json", env=env, check=False)
        seconds = time.perf_counter() - started
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if imported.returncode != 0:
            sys.exit(f"import failed: {imported.stderr[-2000:]}")
        report = json.loads(imported.stdout.strip().splitlines()[-1])

        log("importing the file with a bad row near its end")
        refused = manage("import_items", "scale-bad", str(bad), "--format", "jsonl", env=env, check=False)
        stored_after_refusal = count_examples("scale-bad", env)
        figures = {
            "rows": args.rows,
            "file_mb": round(size / 1e6, 1),
            "created": report["created"],
            "seconds": round(seconds, 1),
            "rows_per_s": round(args.rows / seconds),
            # ru_maxrss is the largest peak of any child so far (KiB on Linux): "baseline" is that of the
            # setup commands (migrate, create_project: Django and every app it loads, no rows), "peak" the
            # import's if it is larger.
            "baseline_mb": round(before / 1024),
            "peak_mb": round(max(peak_kb, before) / 1024),
            "goal_peak_mb": GOAL_PEAK_MB,
            "bad_row_refused": refused.returncode != 0 and f"line {bad_line}" in refused.stderr,
            "bad_row_message": refused.stderr.strip().splitlines()[-1][:200] if refused.stderr.strip() else "",
            "stored_after_refusal": stored_after_refusal,
        }
        emit(figures, args.json)


if __name__ == "__main__":
    main()
