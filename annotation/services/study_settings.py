"""A study's settings schema: the settings every study has (COMMON_SETTINGS and those features add through
extensions.add_settings) and its task type's own, each declared once (common.schema.Setting); the web form,
the API serializer, the command line and the instrument versions all read it from here."""

from __future__ import annotations

from dataclasses import replace

from annotation.models import Project
from annotation.services import extensions
from annotation.tasktypes import TASK_TYPES
from common.schema import Schema, Setting

WORKED_EXAMPLE_FIELDS = ("premise", "hypothesis", "update", "atom", "answer", "why")
# The codes a participant takes back to the platform: each wave has its own (a clone never copies them, or
# wave 1's participants would know wave 2's completion code before they start).
WAVE_CODES = ("completion_code", "returned_code", "screened_out_code")
GUIDANCE = "guidance"
GUIDANCE_HELP = "what workers read under your instructions: the task type's guidance"


def _check_worked_examples(value) -> None:
    if not isinstance(value, list):
        raise ValueError("must be a list of examples")
    for number, example in enumerate(value, start=1):
        if not isinstance(example, dict):
            raise ValueError(f"example {number} must be an object")
        unknown = sorted(set(example) - set(WORKED_EXAMPLE_FIELDS))
        if unknown:
            raise ValueError(
                f"example {number} has an unknown field {unknown[0]!r} (fields: {', '.join(WORKED_EXAMPLE_FIELDS)})"
            )
        for name in ("premise", "hypothesis", "answer"):
            if not isinstance(example.get(name), str) or not example[name].strip():
                raise ValueError(f"example {number} needs the text field {name!r}")
        if any(not isinstance(text, str) for text in example.values()):
            raise ValueError(f"example {number}: every field must be text")


# What _check_worked_examples checks of each example's shape, as the API's schema states it.
WORKED_EXAMPLES_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {name: {"type": "string"} for name in WORKED_EXAMPLE_FIELDS}
        | {name: {"type": "string", "pattern": "\\S"} for name in ("premise", "hypothesis", "answer")},
        "required": ["premise", "hypothesis", "answer"],
        "additionalProperties": False,
    },
}


# Settings every task type has. Task types add their own (TaskType.settings); defaults that depend on the
# task type are filled in by settings_schema().
COMMON_SETTINGS = (
    Setting(
        "title",
        "str",
        "",
        "shown to workers and in lists (default: from the slug)",
        max_length=200,
        column=True,
        worker_visible=True,
    ),
    Setting(
        "instructions",
        "text",
        "",
        "what workers read before they start",
        max_length=20000,
        column=True,
        worker_visible=True,
    ),
    # The task type's own text and whether its protocol lets the author rewrite it: filled in by settings_schema().
    Setting(
        GUIDANCE,
        "text",
        "",
        f"{GUIDANCE_HELP} (not given: the task type's own text; refused where its protocol fixes it)",
        label="Task guidance",
        max_length=20000,
        worker_visible=True,
    ),
    Setting("items_per_page", "int", 5, "items on one page", minimum=1, maximum=50, column=True, worker_visible=True),
    Setting(
        "redundancy",
        "int",
        2,
        "annotations every item gets before the disagreement rule is asked",
        minimum=1,
        maximum=100,
        column=True,
    ),
    Setting(
        "max_annotations",
        "int",
        3,
        "the most annotations one item may get when answers disagree",
        minimum=1,
        maximum=100,
        column=True,
    ),
    Setting(
        "claim_timeout_minutes",
        "int",
        30,
        "minutes a worker keeps a page before it returns to the pool",
        label="Page timeout (minutes)",
        minimum=1,
        maximum=24 * 60,
        column=True,
        worker_visible=True,
    ),
    Setting(
        "abandon_after_minutes",
        "int",
        10,
        "a page whose browser has sent no sign of life for this many "
        "minutes is released early, so its items return to the pool",
        label="Abandoned page (minutes)",
        minimum=1,
        maximum=24 * 60,
    ),
    Setting(
        "gold_rate",
        "float",
        0.0,
        "share of pages that carry one hidden gold check item",
        minimum=0,
        maximum=1,
        column=True,
    ),
    Setting(
        "gold_min_checks",
        "int",
        3,
        "gold answers a worker gives before suspension can apply",
        minimum=0,
        maximum=10000,
        column=True,
    ),
    Setting(
        "speeder_seconds",
        "float",
        2.0,
        "flag workers whose median seconds per item is below this (0: never)",
        label="Speeder threshold (seconds per item)",
        minimum=0,
        maximum=3600,
    ),
    Setting(
        "suspend_below",
        "float",
        0.0,
        "suspend a worker whose gold accuracy falls below this (0: never)",
        minimum=0,
        maximum=1,
        column=True,
    ),
    Setting(
        "status",
        "choice",
        Project.Status.DRAFT,
        "draft (invisible to workers), published, paused or closed",
        choices=tuple(Project.Status.choices),
        column=True,
    ),
    Setting(
        "audience",
        "choice",
        Project.Audience.EVERYONE,
        "who may work on it",
        choices=tuple(Project.Audience.choices),
        column=True,
    ),
    Setting(
        "worked_examples",
        "json",
        [],
        "examples shown with the instructions: a list of objects with "
        "premise, hypothesis, optional update and atom, answer and why",
        check=_check_worked_examples,
        json_schema=WORKED_EXAMPLES_SCHEMA,
        worker_visible=True,
    ),
    Setting(
        "completion_code",
        "str",
        "",
        "the code crowd workers get when they finish (empty: one derived per session)",
        max_length=40,
    ),
    Setting(
        "completion_pages",
        "int",
        0,
        "pages a crowd worker submits to earn the completion code; they are "
        "then sent back to the platform (0: they finish when they like, after one page)",
        minimum=0,
        maximum=1000,
        worker_visible=True,
    ),
    Setting(
        "returned_message",
        "text",
        "Please return this study on the platform you came from, so that someone else can take your place.",
        "what a crowd worker who stops without a completion code reads "
        "(after giving back, failing the qualification, or finding no work)",
        max_length=2000,
    ),
    Setting(
        "returned_code",
        "str",
        "",
        "the code a crowd worker who gives back and stops gets (e.g. a Prolific "
        "code for returned submissions; empty: none)",
        max_length=40,
    ),
    Setting(
        "screened_out_code",
        "str",
        "",
        "the code a crowd worker gets who may not take part: arrived through a platform the study does not "
        "take, or failed the qualification test (e.g. a Prolific screen-out code; empty: the returned code)",
        max_length=40,
    ),
    Setting(
        "coherence_exclusive_per_worker",
        "bool",
        False,
        "a worker never gets two items of one coherence group, even on different pages",
    ),
)


def settings_schema(task) -> Schema:
    """Every setting of a project of this task type, with the task type's defaults; its guidance setting only
    where the task type gives guidance (TaskType.guidance), fixed unless its protocol lets the author adjust it."""
    defaults = {
        "items_per_page": task.default_items_per_page,
        "redundancy": task.default_redundancy,
        "max_annotations": task.default_max_annotations,
        GUIDANCE: task.guidance,
    }
    common = tuple(
        _for_task_type(replace(s, default=defaults[s.name]) if s.name in defaults else s, task)
        for s in every_study_settings()
        if s.name != GUIDANCE or task.guidance
    )
    return Schema(common + tuple(task.settings))


def _for_task_type(setting: Setting, task) -> Setting:
    if setting.name != GUIDANCE:
        return setting
    if task.guidance_adjustable:
        return replace(setting, help=f"{GUIDANCE_HELP}; write your own to replace it (left empty: the task type's)")
    return replace(
        setting,
        help=f"{GUIDANCE_HELP}, which its protocol fixes: write your instructions so that they agree with it",
        fixed=True,
    )


def every_study_settings() -> tuple[Setting, ...]:
    """The settings every study has: the core's (COMMON_SETTINGS), then those the features add
    (extensions.add_settings)."""
    return COMMON_SETTINGS + tuple(extensions.FEATURE_SETTINGS)


def all_settings() -> Schema:
    """The union over task types (the command line offers every option; each task type checks its own). The
    settings every study has come as declared for all (the guidance: "the task type's"), not as the first
    task type fills them in."""
    settings = list(every_study_settings())
    seen = {setting.name for setting in settings}
    for task in TASK_TYPES.values():
        for setting in settings_schema(task):
            if setting.name not in seen:
                seen.add(setting.name)
                settings.append(setting)
    return Schema(tuple(settings))


def current_setting(project: Project, schema: Schema, name: str):
    """A project's value of one setting, wherever the project keeps it (a fixed one: the task type's)."""
    if name == "task_type":
        return project.task_type
    if name in schema and schema.get(name).fixed:
        return schema.get(name).default
    if name in schema and schema.get(name).column:
        return getattr(project, name)
    # A study made before the setting existed has its default (what its workers are shown).
    return project.options.get(name, schema.get(name).default if name in schema else None)


def task_guidance(project: Project) -> str:
    """The task type's guidance as the study's workers read it under its instructions (Markdown): the
    task type's text, or the author's where its protocol lets them rewrite it; "" for a task type without."""
    schema = settings_schema(project.task)
    return (current_setting(project, schema, GUIDANCE) or "") if GUIDANCE in schema else ""
