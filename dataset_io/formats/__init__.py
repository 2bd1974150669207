"""Registry of dataset formats: one module each (reader, writer, validator, field docs), like task types.
Adding a format means adding its module and naming it here (or, from a feature app, calling `register` in its
AppConfig.ready, as the label-variation app does for its three); docs/formats.md is written from the registry's
field docs (tests/design checks it is current)."""

from collections.abc import Iterator, Sequence

from dataset_io.formats import (
    annotations,
    atoms,
    chaosnli,
    dnli,
    jsonl,
    snli,
    spreadsheet,
    usnli,
)
from dataset_io.formats.base import ExportOptions, Format, ReadContext

FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> None:
    if fmt.name in FORMATS:
        raise ValueError(f"a format named {fmt.name!r} is registered already")
    FORMATS[fmt.name] = fmt


for module in (usnli, chaosnli, snli, dnli, atoms, jsonl, spreadsheet, annotations):
    register(module.FORMAT)


class Names(Sequence[str]):
    """The registered formats' names (with reads=True, those that import files) as a live view of the registry,
    read each time it is asked: a choice list built when a module loads (an argparse option, a serializer
    field, the OpenAPI schema) must still offer the formats a feature app registers later, in its
    AppConfig.ready."""

    def __init__(self, reads: bool = False):
        self.reads = reads

    def _names(self) -> list[str]:
        return [name for name, fmt in FORMATS.items() if fmt.reads or not self.reads]

    def __getitem__(self, index):
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __repr__(self) -> str:
        return repr(self._names())


def get_format(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; choose one of {', '.join(FORMATS)}") from None


def fields_markdown() -> str:
    """Every format's fields as Markdown tables: the part of docs/formats.md that `manage.py describe_formats`
    writes (a design test checks the page is current)."""
    from annotation.tasktypes import TASK_TYPES

    def variants(task):  # the task type's defaults, and each choice its settings offer
        yield task.default_options()
        for setting in task.settings:
            for value, _ in setting.choices:
                yield {**task.default_options(), setting.name: value}

    lines = []
    for name, fmt in FORMATS.items():
        taken = [task.name for task in TASK_TYPES.values() if any(fmt.importable(task, o) for o in variants(task))]
        given = [task.name for task in TASK_TYPES.values() if any(fmt.exportable(task, o) for o in variants(task))]
        lines += [
            f"### `{name}`: {fmt.title}",
            "",
            f"One record: {fmt.summary}. Imported by {', '.join(taken) or 'no task type'}; exported by "
            f"{', '.join(given) or 'no task type'}{'' if fmt.round_trips else '; does not round-trip'}.",
            "",
            "| field | type | meaning |",
            "|---|---|---|",
        ]
        lines += [
            f"| `{field.name}`{' *(added)*' if field.added else ''} | {field.type} | {field.meaning} |"
            for field in fmt.fields
        ]
        lines.append("")
    return "\n".join(lines)


def importable(task, options: dict) -> list[str]:
    """The formats a study of this task type and settings imports, in the registry's order."""
    return [name for name, fmt in FORMATS.items() if fmt.importable(task, options)]


def exportable(task, options: dict) -> list[str]:
    return [name for name, fmt in FORMATS.items() if fmt.exportable(task, options)]


__all__ = [
    "FORMATS",
    "ExportOptions",
    "Format",
    "Names",
    "ReadContext",
    "exportable",
    "get_format",
    "importable",
    "register",
]
