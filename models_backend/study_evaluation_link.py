"""Where the models pages send a checkpoint to be scored on a study. The study evaluation lives in the
evaluation app, which this app may not import (the apps depend one way, pyproject.toml): when it starts, that
app registers here which studies take a checkpoint of a kind, and the pages link to its page by URL name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# (project, checkpoint kind) -> whether the study's evaluation takes checkpoints of that kind.
_TAKES: list[Callable[[Any, str], bool]] = []
PAGE = "evaluation:study_evaluate"  # its form, prefilled with ?model=<checkpoint key>


def register(takes: Callable[[Any, str], bool]) -> None:
    _TAKES.append(takes)


def studies_taking(projects, kind: str) -> list:
    """The projects (a user's studies) whose evaluation takes a checkpoint of this kind."""
    return [project for project in projects if any(takes(project, kind) for takes in _TAKES)]
