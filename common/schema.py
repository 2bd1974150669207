"""Settings declared once: each `Setting` says its kind, default, bounds and help, and from that one
declaration come the web form field, the REST serializer field, the command-line option and the validation.

Project settings (per task type) and evaluation suite parameters are both schemas of settings, so the
HTML form, the API and the CLI accept and refuse exactly the same values with the same messages.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django import forms
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.utils import html

from common.api_fields import Text

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}
KINDS = ("int", "float", "bool", "str", "text", "choice", "json", "project")
IMPORT_SOURCES = ("", "label_set")
SLUG = re.compile(r"[-a-zA-Z0-9_]+")


class SettingError(ValueError):
    """One or more settings are wrong; `errors` maps each setting's name to what is wrong with it."""

    def __init__(self, errors: Mapping[str, str]):
        self.errors = dict(errors)
        super().__init__("; ".join(f"{name}: {message}" for name, message in self.errors.items()))


def _argparse_text(text: str) -> str:
    """Help text as argparse reads it: it formats help with %, so a default such as "99%" must be %%."""
    return text.replace("%", "%%")


def _choice_key(value) -> str:
    """How a choice value is written in forms and on the command line: lists as comma-separated text."""
    return ",".join(str(part) for part in value) if isinstance(value, (list, tuple)) else str(value)


class ChoiceValueField(serializers.JSONField):
    """A choice setting's value: as given in a JSON body; in a form body, its text or that text as JSON
    (Setting.clean reads both). DRF's JSONField would refuse a form's plain `label` as JSON that is not."""

    def get_value(self, dictionary):
        value = dictionary.get(self.field_name, empty)
        if html.is_html_input(dictionary) and isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str
    default: Any = None
    help: str = ""
    label: str = ""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple = ()  # (value, shown name) pairs; a value may be a list (stored as a list)
    max_length: int | None = None
    # Where a project keeps it: a column of its own (True) or a key of Project.options (False).
    column: bool = False
    # A further check of the cleaned value; raises ValueError with the message to show.
    check: Callable[[Any], None] | None = None
    # Workers see it or answer with it (the instructions, the labels, a slider's ticks): it is part of the
    # instrument a page records (annotation.services.instrument) and of a project as workers see it.
    worker_visible: bool = False
    # It says what collected answers mean (the labels, the scale): refused once a project has answers.
    fixed_once_answered: bool = False
    # Where an import may set it: "label_set" takes the label set the imported rows carry (ChaosNLI's
    # alpha-NLI files bring 1/2); "" for never.
    import_source: str = ""
    # The protocol fixes it (a task type's built-in worker guidance): always its default, shown to the author
    # read-only; a different value is refused, and a cleaned result leaves it out (nobody stores a copy).
    fixed: bool = False
    # A "json" setting's value as JSON Schema states it (published in the API's schema, common.api_schema):
    # its shape; `check` still has the last word on what no schema can say (two entries with one tag).
    json_schema: dict | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"setting {self.name}: unknown kind {self.kind!r}")
        if self.import_source not in IMPORT_SOURCES:
            raise ValueError(f"setting {self.name}: unknown import source {self.import_source!r}")

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ").capitalize()

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    # ------------------------------------------------------------------ validation (the one rule)

    def clean(self, value):
        """The value in its stored form; raises SettingError({name: message})."""
        try:
            cleaned = self._clean(value)
            if self.fixed and cleaned != self.default:
                raise ValueError("is fixed by the task type's protocol and cannot be changed")
            if self.check is not None and cleaned is not None:
                self.check(cleaned)
            return cleaned
        except (TypeError, ValueError, OverflowError) as error:
            if isinstance(error, SettingError):
                raise
            raise SettingError({self.name: str(error)}) from None

    def _clean(self, value):
        if value is None or (isinstance(value, str) and not value.strip()):
            return self.default  # a field left empty in a form means "not given"
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in TRUE_WORDS | FALSE_WORDS:
                return text in TRUE_WORDS
            raise ValueError(f"{value!r} is not true or false")
        if self.kind in ("int", "float"):
            return self._number(value)
        if self.kind == "project":  # another project, named by its slug; the caller looks it up
            if not isinstance(value, str) or not SLUG.fullmatch(value.strip()):
                raise ValueError("must be the slug of a project")
            return value.strip()
        if self.kind in ("str", "text"):
            if not isinstance(value, str):
                raise ValueError("must be text")
            text = value.strip() if self.kind == "str" else value
            if self.max_length is not None and len(text) > self.max_length:
                raise ValueError(f"must be at most {self.max_length} characters")
            if "\x00" in text:
                raise ValueError("contains a NUL character")
            return text
        if self.kind == "choice":
            wanted = _choice_key(value).replace(" ", "")
            for choice, _ in self.choices:
                if _choice_key(choice).replace(" ", "") == wanted:
                    return list(choice) if isinstance(choice, (list, tuple)) else choice
            raise ValueError(f"must be one of {', '.join(_choice_key(c) for c, _ in self.choices)}")
        # json: a structure given as such (API) or as JSON text (form, command line)
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as error:
                raise ValueError(f"is not valid JSON ({error.msg})") from None
        if _holds_nul(value):  # PostgreSQL's jsonb cannot store \u0000, in a key or a value
            raise ValueError("contains a NUL character")
        return value

    def _number(self, value):
        if isinstance(value, bool):
            raise ValueError("must be a number")
        if self.kind == "int":
            if isinstance(value, float) and not value.is_integer():
                raise ValueError("must be a whole number")
            try:
                number = int(str(value).strip()) if not isinstance(value, (int, float)) else int(value)
            except ValueError:
                raise ValueError(f"must be a whole number, got {str(value)[:20]!r}") from None
        else:
            try:
                number = float(value)
            except ValueError:
                raise ValueError(f"must be a number, got {str(value)[:20]!r}") from None
            if not math.isfinite(number):
                raise ValueError("must be a finite number")
        if self.minimum is not None and number < self.minimum:
            raise ValueError(f"must be at least {self.minimum:g}")
        if self.maximum is not None and number > self.maximum:
            raise ValueError(f"must be at most {self.maximum:g}")
        return number

    # ------------------------------------------------------------------ the three entry points

    def form_field(self) -> forms.Field:
        # A fixed setting's field shows its default and ignores whatever a request sends for it.
        common: dict[str, Any] = {
            "label": self.title,
            "help_text": self.help,
            "required": False,
            "disabled": self.fixed,
        }
        if self.kind == "bool":
            return forms.BooleanField(initial=self.default, **common)
        if self.kind == "choice":
            return forms.ChoiceField(
                choices=[(_choice_key(value), name) for value, name in self.choices],
                initial=_choice_key(self.default) if self.default is not None else None,
                **common,
            )
        if self.kind in ("int", "float"):
            attrs = {"inputmode": "numeric" if self.kind == "int" else "decimal"}
            if self.minimum is not None:
                attrs["min"] = f"{self.minimum:g}"
            if self.maximum is not None:
                attrs["max"] = f"{self.maximum:g}"
            field = forms.CharField(initial=self.default, widget=forms.NumberInput(attrs=attrs), **common)
            if self.kind == "float":
                field.widget.attrs["step"] = "any"
            return field
        if self.kind == "text" or self.kind == "json":
            initial = json.dumps(self.default, ensure_ascii=False, indent=1) if self.kind == "json" else self.default
            return forms.CharField(initial=initial, widget=forms.Textarea(attrs={"rows": 4}), strip=False, **common)
        return forms.CharField(initial=self.default, max_length=self.max_length, **common)

    def serializer_field(self) -> serializers.Field:
        # The bounds are declared for the OpenAPI schema; the messages are the schema's own, so the API
        # refuses a value in the very words the form and the command line use.
        common: dict[str, Any] = {"help_text": self.help, "required": False}
        messages: dict[str, Any] = {"invalid": "must be a whole number" if self.kind == "int" else "must be a number"}
        if self.minimum is not None:
            messages["min_value"] = f"must be at least {self.minimum:g}"
        if self.maximum is not None:
            messages["max_value"] = f"must be at most {self.maximum:g}"
        if self.kind == "bool":
            return serializers.BooleanField(**common)
        if self.kind == "int":
            return serializers.IntegerField(
                min_value=None if self.minimum is None else int(self.minimum),
                max_value=None if self.maximum is None else int(self.maximum),
                error_messages=messages,
                **common,
            )
        if self.kind == "float":
            return serializers.FloatField(
                min_value=self.minimum, max_value=self.maximum, error_messages=messages, **common
            )
        if self.kind == "choice":
            keys = [_choice_key(value) for value, _ in self.choices]
            return ChoiceValueField(help_text=f"{self.help} One of: {'; '.join(keys)}", required=False)
        if self.kind == "json":
            return serializers.JSONField(**common)
        if self.kind == "project":  # null or "" clears the link
            return Text(allow_blank=True, allow_null=True, **common)
        length: dict[str, Any] = (
            {"max_length": f"must be at most {self.max_length} characters"} if self.max_length else {}
        )
        return Text(
            allow_blank=True,
            trim_whitespace=self.kind == "str",
            max_length=self.max_length,
            error_messages=length,
            **common,
        )

    def add_argument(self, parser: argparse.ArgumentParser) -> None:
        if self.kind == "bool" and self.default is False:  # a flag; left out it stays None (not given)
            parser.add_argument(
                self.option,
                dest=self.name,
                action="store_const",
                const=True,
                default=None,
                help=_argparse_text(self.help),
            )
            return
        extra = f" (default: {_choice_key(self.default) if self.default not in (None, '') else 'none'})"
        if self.kind == "choice":
            extra = f" ({' | '.join(_choice_key(c) for c, _ in self.choices)}){extra}"
        parser.add_argument(
            self.option, dest=self.name, default=None, metavar=self.kind.upper(), help=_argparse_text(self.help + extra)
        )


@dataclass(frozen=True)
class Schema:
    settings: tuple[Setting, ...]

    def __iter__(self):
        return iter(self.settings)

    def __contains__(self, name: str) -> bool:
        return any(setting.name == name for setting in self.settings)

    def get(self, name: str) -> Setting:
        return next(setting for setting in self.settings if setting.name == name)

    def defaults(self) -> dict:
        return {setting.name: setting.default for setting in self.settings}

    def clean(self, data: Mapping, partial: bool = False, allow_unknown: Iterable[str] = ()) -> dict:
        """Validate `data` (only the given names when partial, else every setting with defaults filled in).
        Raises SettingError listing every wrong setting at once."""
        known = {setting.name for setting in self.settings} | set(allow_unknown)
        errors = {name: "is not a setting here" for name in data if name not in known}
        cleaned = {}
        for setting in self.settings:
            if partial and setting.name not in data:
                continue
            try:
                value = setting.clean(data.get(setting.name))
            except SettingError as error:
                errors.update(error.errors)
                continue
            if not setting.fixed:  # checked, never kept: its value is the declaring code's, never a stale copy
                cleaned[setting.name] = value
        if errors:
            raise SettingError(errors)
        return cleaned

    def form_fields(self) -> dict[str, forms.Field]:
        return {setting.name: setting.form_field() for setting in self.settings}

    def serializer_fields(self) -> dict[str, serializers.Field]:
        return {setting.name: setting.serializer_field() for setting in self.settings}

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        for setting in self.settings:
            setting.add_argument(parser)

    def given(self, options: Mapping) -> dict:
        """The settings a command line set (argparse leaves the others None)."""
        return {
            setting.name: options[setting.name] for setting in self.settings if options.get(setting.name) is not None
        }


def _holds_nul(value) -> bool:
    """Whether a JSON structure has a NUL character in any of its texts or keys."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(key) or _holds_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False
