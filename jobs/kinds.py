"""The registry of job kinds. Each app registers its own (evaluation: "evaluate"; models_backend:
"predict", "train_unli", ...; annotation: "import", "export") from its AppConfig.ready, so a task worker
knows every kind and this module knows none by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


class Cancelled(Exception):
    """Raised inside a job's progress callback when someone asked the job to stop."""


class JobError(ValueError):
    """A job that cannot be started as asked; nothing was stored. Also the base of the errors a kind
    raises for bad input, whose message is shown to the job's owner as it is."""


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


def kinds_of(group: str) -> list[str]:
    return [kind.name for kind in KINDS.values() if kind.group == group]
