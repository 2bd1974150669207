"""The registry of job kinds. Each app registers its own (evaluation: "evaluate"; models_backend:
"predict", "train_unli", ...; dataset_io: "import", "export", "bundle") from its AppConfig.ready, so a task
worker knows every kind and this module knows none by name.

A kind declares how long a job of it may run (`time_limit`, seconds; the setting JOB_TIME_LIMITS overrides it
per kind) and whether running it again after a transient fault is safe (`repeatable`: it rewrites its output
whole and calls nothing outside the app that must happen once)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

HOUR = 3600
# A limit outside these bounds is a typo (seconds taken for minutes, a missing zero), not a plan.
SHORTEST_LIMIT, LONGEST_LIMIT = 1, 7 * 24 * HOUR
QUEUES = ("default", "gpu")


class Cancelled(Exception):
    """Raised inside a job's progress callback when someone asked the job to stop."""


class JobError(ValueError):
    """A job that cannot be started as asked; nothing was stored. Also the base of the errors a kind
    raises for bad input, whose message is shown to the job's owner as it is."""


class Stopped(Exception):
    """Raised inside a job's progress callback when the job must end for a reason already recorded on it
    (its time limit passed, or it was failed for a dead worker): the job's row says why."""


@dataclass(frozen=True)
class JobKind:
    name: str
    title: str
    # run(job, progress) -> a JSON-ready result dict; progress(done, total) records progress and raises
    # Cancelled when the job should stop.
    run: Callable
    # The kinds a page groups together ("evaluation", "models", "data").
    group: str
    describe_job: Callable | None = None
    # present(job) -> extra context for a finished job's page (tables, a plot); None: the result as a table.
    present: Callable | None = None
    time_limit: int = HOUR
    repeatable: bool = False

    def describe(self, job) -> str:
        return self.describe_job(job) if self.describe_job else self.title


KINDS: dict[str, JobKind] = {}


def register(kind: JobKind) -> JobKind:
    KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> JobKind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown job kind {name!r}; known: {', '.join(sorted(KINDS))}") from None


def time_limit_of(name: str) -> int:
    """How many seconds a job of this kind may run: JOB_TIME_LIMITS' entry for it, else the kind's own."""
    seconds = settings.JOB_TIME_LIMITS.get(name, get_kind(name).time_limit)
    check_time_limit(seconds, f"JOB_TIME_LIMITS {name}")
    return int(seconds)


def check_time_limit(seconds, where: str) -> None:
    if not isinstance(seconds, int | float) or not SHORTEST_LIMIT <= seconds <= LONGEST_LIMIT:
        raise JobError(
            f"{where}: a time limit is {SHORTEST_LIMIT} to {LONGEST_LIMIT} seconds (a week), not {seconds!r}"
        )


def describe_seconds(seconds: float) -> str:
    """172800 -> "48 h", 5400 -> "1 h 30 min", 3 -> "3 s"."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{hours} h" if hours else "", f"{minutes} min" if minutes else "", f"{seconds} s" if seconds else ""]
    return " ".join(part for part in parts if part) or "0 s"


def check_queue(queue: str) -> None:
    if queue not in QUEUES:
        raise JobError(f"no queue {queue!r}; the queues are {', '.join(QUEUES)}")


def kinds_of(group: str) -> list[str]:
    return [kind.name for kind in KINDS.values() if kind.group == group]
