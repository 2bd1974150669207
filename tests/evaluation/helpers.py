"""Helpers shared by the evaluation tests."""

import io
import json

from django.core.management import call_command


def evaluate(*args) -> dict:
    """Run `manage.py evaluate ... --json` and parse the last line of stdout."""
    out = io.StringIO()
    call_command("evaluate", *[str(a) for a in args], "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def evaluate_text(*args) -> str:
    """Run `manage.py evaluate ...` without --json and return stdout."""
    out = io.StringIO()
    call_command("evaluate", *[str(a) for a in args], stdout=out)
    return out.getvalue()


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
