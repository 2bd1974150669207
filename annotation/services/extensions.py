"""What features add to the study core: settings every study has, steps of a page's submit, tables of the
report, panels on the core's pages and chores of the housekeeping loop. A feature registers them when its app
starts (its AppConfig.ready); the core calls what is registered and imports no feature (import-linter contracts
in pyproject.toml)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from common.schema import Setting

# A submit step's check: (project, worker, the page's items, the answers as sent) -> what to store with the
# answers (called inside the submit's transaction, after them), or None. It runs before anything is written
# and refuses a page by raising answers.SubmissionError.
SubmitCheck = Callable[[Any, Any, Iterable[Any], dict], Callable[[], None] | None]


@dataclass(frozen=True)
class SubmitStep:
    check: SubmitCheck | None = None
    after: Callable[[Any, Any], None] | None = None  # (project, the stored page), once the submit is committed


# A panel: a feature's template shown at a named place of a core page. `context` gets the page's template
# context (project, item, user ... as that page has them) and returns the template's extra variables, or None
# to show nothing there.
@dataclass(frozen=True)
class Panel:
    template: str
    context: Callable[[Mapping[str, Any]], dict | None]


PANEL_PLACES = (
    "study_page_validation",  # the study page's validation section
    "study_page_data",  # the study page's end: getting data in and out
    "report",  # the report page, after the agreement figures
    "adjudication_item",  # an item's adjudication page, before its history
    "work_item",  # under each item of a worker's page
    "worker_home_study",  # each study on a worker's home page
    "worker_study_end",  # a study's no-work, stopped and done pages
    "confirm_close",  # inside the form that asks an author to confirm closing a study
)

FEATURE_SETTINGS: list[Setting] = []
SUBMIT_STEPS: list[SubmitStep] = []
PANELS: dict[str, list[Panel]] = {place: [] for place in PANEL_PLACES}
# (project) -> the report's extra tables, as services.analysis.agreement.project_report lists its own.
REPORT_TABLES: list[Callable[[Any], list]] = []
# (item ids of a batch) -> {item id: {key: value}}: what a feature adds to those items' records in the
# studio's JSON Lines export (under nli_studio), read once per batch.
RECORD_PARTS: list[Callable[[list[int]], dict[int, dict]]] = []


# (project, worker) -> the address of what the worker still owes this study after its pages (a feature's
# follow-up: label_variation's self-check of one's own explanations), or None. While one is due, a study's end
# page sends nobody back to their platform by itself, and a participant who earned the study's code may come
# back from a new platform session for it (annotation.services.crowd.crowd.follow_up_due).
FOLLOW_UPS: list[Callable[[Any, Any], str | None]] = []


@dataclass(frozen=True)
class Chore:
    """Work the housekeeping loop (`expire_claims --every`, run by bin/serve) does every `every_seconds`."""

    run: Callable[[], object]
    every_seconds: float


CHORES: list[Chore] = []


def add_settings(*settings: Setting) -> None:
    """Settings every study has, from a feature (after the core's own in the settings schema)."""
    FEATURE_SETTINGS.extend(settings)  # a feature registers once: Python imports its package once


def add_submit_step(step: SubmitStep) -> None:
    SUBMIT_STEPS.append(step)


def add_panel(place: str, template: str, context: Callable[[Mapping[str, Any]], dict | None]) -> None:
    if place not in PANELS:
        raise ValueError(f"unknown panel place {place!r}; choose one of {', '.join(PANEL_PLACES)}")
    PANELS[place].append(Panel(template, context))


def add_report_tables(tables: Callable[[Any], list]) -> None:
    REPORT_TABLES.append(tables)


def add_record_parts(parts: Callable[[list[int]], dict[int, dict]]) -> None:
    RECORD_PARTS.append(parts)


def add_chore(chore: Chore) -> None:
    CHORES.append(chore)


def add_follow_up(due: Callable[[Any, Any], str | None]) -> None:
    FOLLOW_UPS.append(due)


def follow_up(project, worker) -> str | None:
    """The address of the first follow-up due from this worker in this study, or None."""
    return next((address for address in (due(project, worker) for due in FOLLOW_UPS) if address), None)


def record_parts(item_ids: list[int]) -> dict[int, dict]:
    """Every feature's parts of these items' export records, merged by item id (items without any left out)."""
    merged: dict[int, dict] = {}
    for parts in RECORD_PARTS:
        for item_id, part in parts(item_ids).items():
            merged.setdefault(item_id, {}).update(part)
    return merged
