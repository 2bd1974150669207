"""What feature folders add to the study core: settings every study has and steps of a page's submit. A
feature registers them when the annotation app starts (AnnotationConfig.ready imports the features); the core
calls what is registered and imports no feature folder (an import-linter contract in pyproject.toml)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from common.schema import Setting

# A submit step's check: (project, worker, the page's items, the answers as sent) -> what to store with the
# answers (called inside the submit's transaction, after them), or None. It runs before anything is written
# and refuses a page by raising answers.SubmissionError.
SubmitCheck = Callable[[Any, Any, Iterable[Any], dict], Callable[[], None] | None]


@dataclass(frozen=True)
class SubmitStep:
    check: SubmitCheck
    after: Callable[[Any, Any], None] | None = None  # (project, the stored page), once the submit is committed


FEATURE_SETTINGS: list[Setting] = []
SUBMIT_STEPS: list[SubmitStep] = []


def add_settings(*settings: Setting) -> None:
    """Settings every study has, from a feature (after the core's own in the settings schema)."""
    FEATURE_SETTINGS.extend(settings)  # a feature registers once: Python imports its package once


def add_submit_step(step: SubmitStep) -> None:
    SUBMIT_STEPS.append(step)
