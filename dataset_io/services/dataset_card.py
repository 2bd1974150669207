"""The bundle as a Hugging Face dataset repository: the dataset card (README.md with the YAML metadata the Hub
reads) written from the data statement, and the author's details the app cannot know (license, description,
citation, languages, source datasets), checked before anything is written.

The Hub's card metadata: https://huggingface.co/docs/hub/datasets-cards (license identifiers from its
licenses page; any other SPDX id is written as `license: other` with `license_name` and `license_link`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml
from packaging.licenses import _spdx

from common.errors import FieldError

# The license identifiers the Hub's repository cards take (its documented list).
HUB_LICENSES = [
    "apache-2.0",
    "mit",
    "openrail",
    "bigscience-openrail-m",
    "creativeml-openrail-m",
    "bigscience-bloom-rail-1.0",
    "bigcode-openrail-m",
    "afl-3.0",
    "artistic-2.0",
    "bsl-1.0",
    "bsd",
    "bsd-2-clause",
    "bsd-3-clause",
    "bsd-3-clause-clear",
    "c-uda",
    "cc",
    "cc0-1.0",
    "cc-by-2.0",
    "cc-by-2.5",
    "cc-by-3.0",
    "cc-by-4.0",
    "cc-by-sa-3.0",
    "cc-by-sa-4.0",
    "cc-by-nc-2.0",
    "cc-by-nc-3.0",
    "cc-by-nc-4.0",
    "cc-by-nd-4.0",
    "cc-by-nc-nd-3.0",
    "cc-by-nc-nd-4.0",
    "cc-by-nc-sa-2.0",
    "cc-by-nc-sa-3.0",
    "cc-by-nc-sa-4.0",
    "cdla-sharing-1.0",
    "cdla-permissive-1.0",
    "cdla-permissive-2.0",
    "wtfpl",
    "ecl-2.0",
    "epl-1.0",
    "epl-2.0",
    "etalab-2.0",
    "eupl-1.1",
    "agpl-3.0",
    "gfdl",
    "gpl",
    "gpl-2.0",
    "gpl-3.0",
    "lgpl",
    "lgpl-2.1",
    "lgpl-3.0",
    "isc",
    "lppl-1.3c",
    "ms-pl",
    "mpl-2.0",
    "odc-by",
    "odbl",
    "openrail++",
    "osl-3.0",
    "postgresql",
    "ofl-1.1",
    "ncsa",
    "unlicense",
    "zlib",
    "pddl",
    "lgpl-lr",
    "deepfloyd-if-license",
    "llama2",
    "gemma",
    "unknown",
    "other",
]
# Every license the card takes: the Hub's identifiers, then the SPDX ids packaging ships (its list is the
# module packaging.licenses reads; no public name for it), each once. A schema enum and a form's datalist show
# them; card_details matches them whatever their case.
LICENSES = HUB_LICENSES + sorted(entry["id"] for key, entry in _spdx.LICENSES.items() if key not in HUB_LICENSES)
_LICENSE_BY_KEY = {name.lower(): name for name in LICENSES}
LANGUAGE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8})*")  # an ISO 639 code, with a region or script if wanted
SOURCE_DATASET = re.compile(r"original|extended(\|[\w.\-/]+)?")  # the Hub's values: original, extended|<dataset>
PRETTY_NAME_MAX = 200


def comma_list_pattern(part: re.Pattern) -> str:
    """A text of comma-separated `part`s (blank ones left out, each trimmed), as the API's schema states it."""
    item = rf"(?:{part.pattern})\s*"
    return rf"^\s*(?:{item})?(?:,\s*(?:{item})?)*$"


MISSING = "**Missing:**"  # how the card marks what the author has not given yet


class CardError(FieldError):
    """A detail of the card the Hub would refuse; names the field (as the bundle page and command call it)."""


@dataclass(frozen=True)
class CardDetails:
    """What the author tells about the dataset. Every part may be left empty: the card then says it is missing.
    Build it with `card_details`, which checks each part."""

    license: str = ""  # a Hub license identifier, or an SPDX id (then `other` with its name and link)
    pretty_name: str = ""
    description: str = ""
    citation: str = ""  # BibTeX, as the author wants it cited
    languages: tuple[str, ...] = ()
    source_datasets: tuple[str, ...] = ()
    spdx_license: str = field(default="", compare=False)  # set by card_details for a license the Hub does not list

    def as_params(self) -> dict:
        """JSON-ready, for a job's parameters (card_details(**params) reads it back)."""
        return {
            "license": self.spdx_license or self.license,  # card_details turns an SPDX id back into `other`
            "pretty_name": self.pretty_name,
            "description": self.description,
            "citation": self.citation,
            "languages": list(self.languages),
            "source_datasets": list(self.source_datasets),
        }


def card_details(
    license: str = "",
    pretty_name: str = "",
    description: str = "",
    citation: str = "",
    languages=(),
    source_datasets=(),
) -> CardDetails:
    """The author's details, checked: CardError naming the first field the Hub would refuse."""
    chosen, spdx = license.strip(), ""
    if chosen:
        known = _LICENSE_BY_KEY.get(chosen.lower())
        if known is None:
            raise CardError(
                "license",
                f"{chosen[:60]!r} is neither a license identifier the Hub lists (apache-2.0, mit, cc-by-4.0, ...) "
                "nor an SPDX license id (one license, not an expression)",
            )
        # An SPDX id the Hub does not list is written as `other`, with its name and link.
        chosen, spdx = (known, "") if known in HUB_LICENSES else ("other", known)
    languages = tuple(code.strip() for code in _listed(languages))
    for code in languages:
        if not LANGUAGE.fullmatch(code):
            raise CardError("language", f"{code[:20]!r} is not a language code such as en or pt-BR")
    sources = tuple(source.strip() for source in _listed(source_datasets))
    for source in sources:
        if not SOURCE_DATASET.fullmatch(source):
            raise CardError(
                "source_datasets", f"{source[:60]!r} must be original or extended|<dataset> (e.g. extended|snli)"
            )
    if len(pretty_name) > PRETTY_NAME_MAX:
        raise CardError("pretty_name", f"must be at most {PRETTY_NAME_MAX} characters")
    return CardDetails(
        license=chosen,
        pretty_name=pretty_name.strip(),
        description=description.strip(),
        citation=citation.strip(),
        languages=languages,
        source_datasets=sources,
        spdx_license=spdx,
    )


def card_from(params) -> CardDetails:
    """The card's details from a form or query string (the bundle page, the API), checked by card_details."""
    return card_details(
        license=params.get("license", ""),
        pretty_name=params.get("pretty_name", ""),
        description=params.get("description", ""),
        citation=params.get("citation", ""),
        languages=params.get("language", ""),
        source_datasets=params.get("source_datasets", ""),
    )


def parquet_from(params) -> bool | None:
    """The Parquet choice of a form or query string: "yes", "no", or empty for the default (tables.wants_parquet)."""
    word = str(params.get("parquet", "")).strip().lower()
    if word not in ("", "yes", "no"):
        raise CardError("parquet", f"must be yes, no or empty (the default), not {word[:20]!r}")
    return None if not word else word == "yes"


def _listed(value) -> list[str]:
    """A list given as a list, or as one text of comma-separated parts (a form field, a command option)."""
    parts = value.split(",") if isinstance(value, str) else list(value)
    return [part for part in parts if part.strip()]


def size_category(rows: int) -> str:
    """The Hub's size bucket for this many rows."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")]
    bounds += [(10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]
    for bound, name in bounds:
        if rows < bound:
            return name
    return "n>1T" if rows > 10**12 else "1B<n<10B"


def tasks_of(task) -> tuple[list[str], list[str]]:
    """The Hub's task categories and task ids for a study of this task type (asked of its flags)."""
    categories, ids = ["text-classification"], ["natural-language-inference"]
    if task.probability_answers:
        ids.append("text-scoring")
    if task.agreement_level is None:  # answers are written texts, not labels (hypothesis writing)
        categories.append("text-generation")
    return categories, ids


def annotation_creators(statement: dict) -> list[str]:
    """Who made the labels, in the Hub's words: collected answers are crowdsourced, imported votes found."""
    answers = statement["answers"]
    creators = ["crowdsourced"] if answers["collected"] or answers["excluded"] else []
    return creators + (["found"] if answers["imported_votes"] else []) or ["no-annotation"]


def front_matter(statement: dict, details: CardDetails, task, configs: list[dict]) -> dict:
    """The card's YAML metadata; configs: [{"config_name", "path", "rows"}] (the first is the default)."""
    categories, ids = tasks_of(task)
    meta: dict = {"license": details.license or "unknown"}
    if details.spdx_license:
        meta["license_name"] = details.spdx_license.lower()
        meta["license_link"] = f"https://spdx.org/licenses/{details.spdx_license}.html"
    meta["pretty_name"] = details.pretty_name or statement["study"]["title"]
    if details.languages:
        meta["language"] = list(details.languages)
    meta["task_categories"] = categories
    meta["task_ids"] = ids
    meta["annotations_creators"] = annotation_creators(statement)
    if details.source_datasets:
        meta["source_datasets"] = list(details.source_datasets)
    meta["size_categories"] = [size_category(max((config["rows"] for config in configs), default=0))]
    meta["configs"] = [
        {
            "config_name": config["config_name"],
            "data_files": [{"split": "train", "path": config["path"]}],
            **({"default": True} if index == 0 else {}),
        }
        for index, config in enumerate(configs)
    ]
    return meta


def card_markdown(statement: dict, details: CardDetails, task, configs: list[dict], body: str) -> str:
    """README.md: the YAML front matter, then what the author said, what is missing, how to load each config,
    and `body` (the data statement as Markdown, its title left off)."""
    meta = front_matter(statement, details, task, configs)
    title = meta["pretty_name"]
    missing = [
        name
        for name, given in (
            ("license (`license` in the metadata above is `unknown`)", details.license),
            ("description", details.description),
            ("citation", details.citation),
            ("language", details.languages),
            ("source datasets", details.source_datasets),
        )
        if not given
    ]
    lines = ["---", yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).rstrip(), "---", "", f"# {title}", ""]
    lines += [details.description or f"{MISSING} a description of the dataset (the author has not given one).", ""]
    if missing:
        lines += [f"{MISSING} {', '.join(missing)}. Give them on the bundle page or to `export_dataset --bundle`.", ""]
    lines += ["## Loading", "", "```python", "from datasets import load_dataset", ""]
    lines += [
        f'{config["config_name"]} = load_dataset("path/to/this/folder", "{config["config_name"]}")'
        for config in configs
    ]
    lines += ["```", ""]
    for config in configs:
        kept = ", ".join(f"`{name}`" for name in config["json_columns"])
        lines.append(
            f"- `{config['config_name']}`: `{config['path']}`, {config['rows']} rows"
            + (f"; JSON text (lists, objects, values of mixed types: `json.loads` them): {kept}" if kept else "")
        )
    lines += ["", "`croissant.json` describes the same files and record sets as Croissant metadata.", ""]
    lines += [
        "## Citation",
        "",
        f"```bibtex\n{details.citation}\n```" if details.citation else f"{MISSING} a citation.",
        "",
    ]
    lines += ["## License", "", _license_line(details), ""]
    lines += ["## Data statement", "", body.split("\n", 1)[1].lstrip("\n")]  # the statement less its title
    return "\n".join(lines)


def _license_line(details: CardDetails) -> str:
    if details.spdx_license:
        return f"{details.spdx_license} (SPDX), https://spdx.org/licenses/{details.spdx_license}.html"
    return f"`{details.license}`" if details.license else f"{MISSING} a license."
