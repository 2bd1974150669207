"""Prolific's prescreening by place and language: the filter ids, and the fixed lists of names the Prolific
page takes for them.

The filter ids are those of Prolific's filter list (GET /api/v1/filters/, docs.prolific.com, API reference >
Filters), as public create-study payloads use them; they were not checked against a live account here. A
"select" filter is sent with Prolific's choice ids, not names: the ids are Prolific's (its filter list maps
each id to a name), so they are read from Prolific when the study is created (studies.create_draft) rather
than kept here. The names below are meant to be the ones Prolific's list shows; a name Prolific does not offer
stops the creation with a message naming the field."""

from __future__ import annotations

# Our field: (Prolific's filter id, what the page calls it).
FILTERS = {
    "countries": ("current-country-of-residence", "Current country of residence"),
    "first_languages": ("first-language", "First language"),
    "fluent_languages": ("fluent-languages", "Fluent languages"),
}

# Countries where Prolific has participants (its help centre lists them; check there before adding one),
# under short English names.
COUNTRIES = (
    "Australia",
    "Austria",
    "Belgium",
    "Canada",
    "Chile",
    "Czech Republic",
    "Denmark",
    "Estonia",
    "Finland",
    "France",
    "Germany",
    "Greece",
    "Hungary",
    "Iceland",
    "Ireland",
    "Israel",
    "Italy",
    "Japan",
    "Latvia",
    "Luxembourg",
    "Mexico",
    "Netherlands",
    "New Zealand",
    "Norway",
    "Poland",
    "Portugal",
    "Slovakia",
    "Slovenia",
    "South Africa",
    "South Korea",
    "Spain",
    "Sweden",
    "Switzerland",
    "United Kingdom",
    "United States",
)

# Languages by their English names (ISO 639 names), as Prolific's language filters show them.
LANGUAGES = (
    "Arabic",
    "Bengali",
    "Catalan",
    "Chinese",
    "Czech",
    "Danish",
    "Dutch",
    "English",
    "Estonian",
    "Finnish",
    "French",
    "German",
    "Greek",
    "Hebrew",
    "Hindi",
    "Hungarian",
    "Icelandic",
    "Italian",
    "Japanese",
    "Korean",
    "Latvian",
    "Lithuanian",
    "Norwegian",
    "Persian",
    "Polish",
    "Portuguese",
    "Romanian",
    "Russian",
    "Slovak",
    "Slovenian",
    "Spanish",
    "Swedish",
    "Tagalog",
    "Turkish",
    "Ukrainian",
    "Urdu",
    "Vietnamese",
)

CHOICES = {"countries": COUNTRIES, "first_languages": LANGUAGES, "fluent_languages": LANGUAGES}


class PrescreeningError(ValueError):
    """A value not in the fixed list; the message names the field."""


def parse(field: str, text: str) -> list[str]:
    """Comma-separated names (any case) as the list's own spelling, in the order given, each once."""
    known = {name.casefold(): name for name in CHOICES[field]}
    chosen = []
    for part in text.split(","):
        name = part.strip()
        if not name:
            continue
        if name.casefold() not in known:
            raise PrescreeningError(
                f"{field}: {name!r} is not in Prolific's list (for example {', '.join(CHOICES[field][:3])})"
            )
        if known[name.casefold()] not in chosen:
            chosen.append(known[name.casefold()])
    return chosen


def check(field: str, names) -> None:
    """What a saved field must hold: a list of names of the fixed list."""
    if not isinstance(names, list) or any(name not in CHOICES[field] for name in names):
        raise PrescreeningError(f"{field}: names from Prolific's list, comma-separated")
