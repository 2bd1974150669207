"""Disagreement reasons (Jiang & de Marneffe, TACL 2022): people tag an item with the reasons its annotators
may disagree, picked from the study's taxonomy (setting `reason_taxonomy`; the paper's categories by
default), in rounds of two taggers like the taxonomy release.

Who tags (setting `reason_taggers`):
    authors       the study's managers (its author, admins) tag any item
    adjudicators  the managers tag the items that went to adjudication (a tie, a flag, or settled there)
    workers       workers tag the items they answered (round 1, role "worker"); managers tag as well

A round's result follows the release: the reconciliation where there is one, else what the two taggers
agree on (their intersection; the release's `agg` is exactly this on every round-2 row), else the one
tagger's set, else the reasons more than half of the workers who tagged chose. An item's reasons are those
of its latest round. Imported release rows (format "taxonomy") count through the same rule, never copied
into tags: the record stays in Example.source_data as it was (tags collected on such an item in the same
round replace the release's for that round).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.db import transaction

from annotation.models import Annotation, Item, Project, WorkerStatus
from annotation.services import access
from dataset_io.formats.base import STUDIO_KEY
from label_variation.models import ReasonTag

if TYPE_CHECKING:
    from metrics.reasons import SetAgreement

AUTHORS, ADJUDICATORS, WORKERS = "authors", "adjudicators", "workers"
TAGGERS = (
    (AUTHORS, "authors: the study's author and admins, on any item"),
    (ADJUDICATORS, "adjudicators: the study's author and admins, on items that went to adjudication"),
    (WORKERS, "workers: on the items they answered (the author and admins too)"),
)
ROUNDS = (1, 2)
# Imported rows name their taggers as the release does; `a2` marks a round-2 row.
RELEASE_FORMAT = "taxonomy"
RELEASE_FIRST, RELEASE_SECOND = "a1", "a2"
EXAMPLES_PER_REASON = 2
NONE_OF_THESE = "N/A"  # the release's tag for "no category applies": it goes with no other reason
MAX_NOTE = 2000
SHORTCUTS = "1234567890abcdefghijklmnopqrstuvwxyz"

# The categories as the release files spell them (tags are kept verbatim, so "Interrogative." keeps its
# full stop); the names and descriptions summarise the annotation guidelines.
TACL_2022_TAXONOMY = [
    {
        "tag": "Lexical",
        "key": "l",
        "description": "The label turns on what a word or phrase means: whether one expression entails another, "
        "or which sense or unstated argument a word has.",
    },
    {
        "tag": "Probabilistic",
        "name": "Probabilistic enrichment",
        "key": "p",
        "description": "The hypothesis (or its negation) is a likely inference from the premise but not a sure "
        "one; those who draw it and those who do not pick different labels.",
    },
    {
        "tag": "Presupposition",
        "key": "s",
        "description": "The hypothesis rests on something the premise presupposes, and annotators differ on "
        "whether that presupposition holds.",
    },
    {
        "tag": "Implicature",
        "key": "i",
        "description": "The label depends on an implicature of premise or hypothesis (\u201csome\u201d suggesting "
        "\u201cnot all\u201d) and on whether it is cancelled.",
    },
    {
        "tag": "Imperfection",
        "key": "m",
        "description": "Premise or hypothesis is garbled, truncated, mistyped or a disfluent transcript, so "
        "annotators guess at its meaning.",
    },
    {
        "tag": "Coreference",
        "key": "c",
        "description": "Whether premise and hypothesis speak of the same entity or the same event decides the label.",
    },
    {
        "tag": "Temporal",
        "name": "Temporal reference",
        "key": "t",
        "description": "The hypothesis is true at one time and not at another, and nothing says which time counts.",
    },
    {
        "tag": "Interrogative.",
        "name": "Interrogative hypothesis",
        "key": "q",
        "description": "The hypothesis is a question, and NLI does not say when a question is true.",
    },
    {
        "tag": "Accommodating",
        "name": "Accommodating added content",
        "key": "a",
        "description": "The hypothesis adds a small detail the premise never states; some annotators overlook "
        "it and choose entailment.",
    },
    {
        "tag": "High Overlap",
        "key": "o",
        "description": "Premise and hypothesis share most of their words but say different things on a close reading.",
    },
    {"tag": "N/A", "name": "None of these", "key": "n", "description": "No category above applies."},
]
TAXONOMY_FIELDS = ("tag", "name", "key", "description")


class ReasonError(Exception):
    """A tag was refused; nothing was stored. `field` names what is wrong."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message


# ---------------------------------------------------------------------------- the taxonomy


# What check_taxonomy checks of the list's shape, as the API's schema states it (not: tags and keys unique).
TAXONOMY_SCHEMA = {
    "type": "array",
    "minItems": 1,
    "maxItems": len(SHORTCUTS),
    "items": {
        "type": "object",
        "properties": {
            "tag": {"type": "string", "pattern": "\\S", "maxLength": 60},
            "name": {"type": "string"},
            "key": {"type": "string", "pattern": f"^[{SHORTCUTS}{SHORTCUTS.upper()}]?$"},
            "description": {"type": "string"},
        },
        "required": ["tag"],
        "additionalProperties": False,
    },
}


def check_taxonomy(value) -> None:
    """The `reason_taxonomy` setting's check: a list of categories, each with a unique tag and key."""
    if not isinstance(value, list) or not value:
        raise ValueError("must be a non-empty list of categories")
    if len(value) > len(SHORTCUTS):
        raise ValueError(f"may list at most {len(SHORTCUTS)} categories")
    tags, keys = set(), set()
    for number, entry in enumerate(value, start=1):
        if not isinstance(entry, dict):
            raise ValueError(f"category {number} must be an object with a tag")
        unknown = sorted(set(entry) - set(TAXONOMY_FIELDS))
        if unknown:
            raise ValueError(
                f"category {number} has an unknown field {unknown[0]!r} (fields: tag, name, key, description)"
            )
        if any(not isinstance(text, str) for text in entry.values()):
            raise ValueError(f"category {number}: every field must be text")
        tag = entry.get("tag", "").strip()
        if not tag or len(tag) > 60:
            raise ValueError(f"category {number} needs a tag of 1 to 60 characters")
        if tag in tags:
            raise ValueError(f"category {number}: the tag {tag!r} is listed twice")
        tags.add(tag)
        key = entry.get("key", "")
        if key and (len(key) != 1 or key.lower() not in SHORTCUTS):
            raise ValueError(f"category {number}: key must be one letter or digit")
        if key and key.lower() in keys:
            raise ValueError(f"category {number}: the key {key!r} is used twice")
        keys.add(key.lower())


def taxonomy(project: Project) -> list[dict]:
    """The study's categories, each with tag, name, description and its keyboard key (given, or the first
    free one of 1..9, 0, a..z)."""
    entries = project.options.get("reason_taxonomy") or TACL_2022_TAXONOMY
    free = iter(key for key in SHORTCUTS if key not in {entry.get("key", "").lower() for entry in entries})
    return [
        {
            "tag": entry["tag"],
            "name": entry.get("name") or entry["tag"].rstrip("."),
            "description": entry.get("description", ""),
            "key": (entry.get("key") or next(free)).lower(),
        }
        for entry in entries
    ]


def taggers(project: Project) -> str:
    return project.options.get("reason_taggers") or AUTHORS


def clean_reasons(project: Project, reasons) -> list[str]:
    """The reasons in taxonomy order; refuses anything that is not a tag of this study's taxonomy."""
    known = [entry["tag"] for entry in taxonomy(project)]
    if not isinstance(reasons, list) or any(not isinstance(reason, str) for reason in reasons):
        raise ReasonError("reasons", "must be a list of the taxonomy's tags")
    unknown = [reason for reason in reasons if reason not in known]
    if unknown:
        raise ReasonError("reasons", f"unknown reason {unknown[0]!r}; this study's reasons are {', '.join(known)}")
    if not reasons:
        raise ReasonError("reasons", "pick at least one reason")
    if NONE_OF_THESE in reasons and len(set(reasons)) > 1:
        name = next(entry["name"] for entry in taxonomy(project) if entry["tag"] == NONE_OF_THESE)
        raise ReasonError("reasons", f"“{name}” says no reason applies: pick it alone, or the reasons without it")
    return [tag for tag in known if tag in reasons]


def clean_round(value) -> int:
    """A round number given as a number or as text (forms)."""
    text = str(value).strip() if isinstance(value, (int, str)) and not isinstance(value, bool) else ""
    if text not in {str(number) for number in ROUNDS}:
        raise ReasonError("round", f"must be one of {', '.join(map(str, ROUNDS))}")
    return int(text)


# ---------------------------------------------------------------------------- who tags


def went_to_adjudication(item: Item) -> bool:
    return item.status == Item.Status.ADJUDICATION or item.flagged or item.adjudicated is not None


def tagging_role(user, item: Item) -> str:
    """ "manager" or "worker": how this user may tag this item; PermissionDenied (with the reason) when they
    may not. The caller has checked that the user may see the project (access.project_for)."""
    project = item.project
    setting = taggers(project)
    if access.can_manage(user, project):
        if setting == ADJUDICATORS and not went_to_adjudication(item):
            raise PermissionDenied("this study tags reasons while adjudicating: this item did not go to adjudication")
        return "manager"
    if setting != WORKERS:
        raise PermissionDenied("in this study, the author and admins tag reasons, not workers")
    if WorkerStatus.objects.filter(project=project, worker=user, blocked=True).exists():
        raise PermissionDenied("the author blocked you in this study: you cannot tag reasons")
    if not Annotation.objects.filter(item=item, worker=user).exists():
        raise PermissionDenied("workers tag the reasons of items they answered")
    return "worker"


# ---------------------------------------------------------------------------- tagging


def tag_item(item: Item, user, reasons, round_number=1, note: str = "", reconcile: bool = False) -> ReasonTag:
    """Store (or change) this user's reasons for the item in a round.

    Managers are the round's first tagger, then its second; `reconcile` writes the round's reconciliation,
    which only a round whose two taggers disagree takes. Workers tag round 1 only. Refusals raise
    ReasonError (what is wrong) or PermissionDenied (who may not); nothing is stored then.
    """
    role = tagging_role(user, item)
    if item.is_gold:
        raise ReasonError("item", "gold check items are not tagged")
    cleaned = clean_reasons(item.project, reasons)
    round_number = clean_round(round_number)
    if role == "worker" and (round_number != 1 or reconcile):
        raise ReasonError("round", "workers tag round 1 only")
    if not isinstance(note, str) or len(note) > MAX_NOTE:
        raise ReasonError("note", f"must be text of at most {MAX_NOTE} characters")
    with transaction.atomic():
        Item.objects.select_for_update().filter(pk=item.pk).first()  # one tagger at a time takes a role
        tags = {
            tag.role: tag for tag in item.reason_tags.filter(round=round_number).exclude(role=ReasonTag.Role.WORKER)
        }
        if role == "worker":
            tag_role = ReasonTag.Role.WORKER
            existing = item.reason_tags.filter(round=1, role=tag_role, tagger=user).first()
        elif reconcile:
            first, second = tags.get(ReasonTag.Role.FIRST), tags.get(ReasonTag.Role.SECOND)
            if first is None or second is None or set(first.reasons) == set(second.reasons):
                raise ReasonError(
                    "reconcile", f"round {round_number} needs two taggers who disagree before a reconciliation"
                )
            tag_role, existing = ReasonTag.Role.RECONCILIATION, tags.get(ReasonTag.Role.RECONCILIATION)
        else:
            mine = [
                tag for tag in tags.values() if tag.tagger_id == user.pk and tag.role != ReasonTag.Role.RECONCILIATION
            ]
            free = [role for role in (ReasonTag.Role.FIRST, ReasonTag.Role.SECOND) if role not in tags]
            if mine:
                tag_role, existing = mine[0].role, mine[0]
            elif free:
                tag_role, existing = free[0], None
            else:
                raise ReasonError(
                    "round",
                    f"round {round_number} of this item has two taggers already; reconcile or tag another round",
                )
        if existing is None:
            return ReasonTag.objects.create(
                item=item, tagger=user, round=round_number, role=tag_role, reasons=cleaned, note=note
            )
        existing.tagger, existing.reasons, existing.note = user, cleaned, note
        existing.save(update_fields=["tagger", "reasons", "note"])
        return existing


# ---------------------------------------------------------------------------- tagging with a page of answers


def work_page_taxonomy(project: Project) -> list[dict] | None:
    """The categories a work page offers with each item (optional, ticked with the answer), or None when this
    study does not ask workers for reasons."""
    return taxonomy(project) if taggers(project) == WORKERS else None


def page_tags(project: Project, worker, items: Iterable[Item], answers: dict) -> list[ReasonTag]:
    """The reasons sent with a page of answers (an optional "reasons" list per answer), checked before anything
    is stored and returned as the worker's round-1 tags, unsaved (save_page_tags stores them); no query.

    The same rules as tag_item: the study's setting must be `workers` (the worker has answered these items:
    the page's submit stores the answers in the same transaction) and every reason a tag of its taxonomy.
    Refusals raise ReasonError whose field is `answers[<id>].reasons`. An absent or empty list tags nothing;
    reasons sent with a gold check item are not kept (the page shows them like any other item, so a worker
    cannot tell which items check them)."""
    by_id = {}
    for key, answer in answers.items():  # keyed as parse_answers reads them ("7", 7)
        try:
            by_id[int(key)] = answer
        except (TypeError, ValueError):
            continue  # parse_answers refuses such a key
    tags = []
    for item in items:
        answer = by_id.get(item.pk)
        given = answer.get("reasons") if isinstance(answer, dict) else None
        if given is None or given == []:
            continue
        where = f"answers[{item.pk}].reasons"
        if taggers(project) != WORKERS:
            raise ReasonError(
                where,
                "this study does not ask workers for disagreement reasons "
                f"(its reason_taggers setting is {taggers(project)!r}); send the answers without them",
            )
        try:
            cleaned = clean_reasons(project, given)
        except ReasonError as exc:
            raise ReasonError(where, exc.message) from None
        if not item.is_gold:
            tags.append(ReasonTag(item=item, tagger=worker, round=1, role=ReasonTag.Role.WORKER, reasons=cleaned))
    return tags


def save_page_tags(tags: list[ReasonTag]) -> None:
    """Store a page's tags (page_tags) in one statement, none when there are none."""
    if tags:
        ReasonTag.objects.bulk_create(tags)


# ---------------------------------------------------------------------------- reading tags


@dataclass
class Round:
    """One round's tags of one item: the two taggers, the reconciliation, the workers' sets."""

    first: frozenset[str] | None = None
    second: frozenset[str] | None = None
    reconciliation: frozenset[str] | None = None
    workers: list[frozenset[str]] = field(default_factory=list)

    @property
    def final(self) -> frozenset[str] | None:
        return final_reasons(self.first, self.second, self.reconciliation, self.workers)


def final_reasons(first, second, reconciliation=None, workers: Iterable[Iterable[str]] = ()) -> frozenset[str] | None:
    """A round's reasons by the release's rule (module docstring); None when nobody tagged."""
    if reconciliation is not None:
        return frozenset(reconciliation)
    if first is not None and second is not None:
        return frozenset(first) & frozenset(second)
    if first is not None or second is not None:
        return frozenset(first if first is not None else second)
    sets = [frozenset(tags) for tags in workers]
    if not sets:
        return None
    chosen = Counter(tag for tags in sets for tag in tags)
    return frozenset(tag for tag, count in chosen.items() if count * 2 > len(sets))


@dataclass
class TaggedItem:
    item_id: int
    premise: str
    hypothesis: str
    imported: bool
    rounds: dict[int, Round]
    # The release's own result (`agg`) on an imported round-2 row, to compare the rule with.
    release_final: frozenset[str] | None = None

    @property
    def final(self) -> frozenset[str] | None:
        for number in sorted(self.rounds, reverse=True):
            if self.rounds[number].final is not None:
                return self.rounds[number].final
        return None


def release_rounds(record: dict) -> tuple[int, Round]:
    """A taxonomy row's own fields as (round, its tags): the round an export of this app says they hold
    (nli_studio.round), else the release's (2 where there is an a2)."""
    number = (record.get(STUDIO_KEY) or {}).get("round") or (2 if RELEASE_SECOND in record else 1)
    return number, _release_round(record)


def imported_rounds(record: dict) -> dict[int, Round]:
    """Every round an imported taxonomy row holds: its own fields' round, and the rounds tagged in the study
    an export of this app came from (nli_studio.reasons, which the import keeps)."""
    number, own = release_rounds(record)
    carried = (record.get(STUDIO_KEY) or {}).get("reasons") or {}
    return dict(sorted({number: own, **{int(key): _release_round(fields) for key, fields in carried.items()}}.items()))


def _release_round(fields: dict) -> Round:
    """One round in the release's fields (a1, a2, reconciliation) as tags; a round tagged by workers alone
    comes back as its a1 (the tags any worker gave), as its export wrote it."""

    def tags(name):
        value = fields.get(name)
        return frozenset(value) if isinstance(value, list) else None

    return Round(first=tags(RELEASE_FIRST), second=tags(RELEASE_SECOND), reconciliation=tags("reconciliation"))


def tagged_items(project: Project) -> Iterator[TaggedItem]:
    """Every item of the study with reasons: collected tags and imported release rows, item by item."""
    items: dict[int, TaggedItem] = {}
    imported = project.items.filter(is_gold=False, example__source_format=RELEASE_FORMAT).values_list(
        "id", "example__premise", "example__hypothesis", "example__source_data"
    )
    for item_id, premise, hypothesis, record in imported:
        agg = record.get("agg")
        items[item_id] = TaggedItem(
            item_id,
            premise,
            hypothesis,
            True,
            imported_rounds(record),
            frozenset(agg) if isinstance(agg, list) else None,
        )
    collected = ReasonTag.objects.filter(item__project=project, item__is_gold=False)
    pairs = {
        item_id: (premise, hypothesis)
        for item_id, premise, hypothesis in collected.values_list(
            "item_id", "item__example__premise", "item__example__hypothesis"
        ).distinct()
    }
    for item_id, rounds in collected_rounds(collected).items():
        entry = items.setdefault(item_id, TaggedItem(item_id, *pairs[item_id], False, {}))
        entry.rounds.update(rounds)  # tags collected in a round replace what a release said of it
    for item_id in sorted(items):
        yield items[item_id]


def collected_rounds(tags) -> dict[int, dict[int, Round]]:
    """The rounds of the tags collected here ({item id: {round: Round}}), from a ReasonTag queryset."""
    rounds: dict[int, dict[int, Round]] = {}
    for item_id, number, role, reasons in tags.order_by("item_id", "round", "id").values_list(
        "item_id", "round", "role", "reasons"
    ):
        round_tags = rounds.setdefault(item_id, {}).setdefault(number, Round())
        if role == ReasonTag.Role.WORKER:
            round_tags.workers.append(frozenset(reasons))
        else:
            setattr(round_tags, role, frozenset(reasons))
    return rounds


def round_fields(tags: Round) -> dict:
    """One round of reasons tagged here in the release's fields: a1 (the first tagger; without taggers, every
    tag a worker gave), and with a second tagger a2, reconciliation and agg (the round's result)."""
    workers = frozenset().union(*tags.workers)
    first = next((chosen for chosen in (tags.first, tags.second) if chosen is not None), workers)
    fields: dict = {"a1": sorted(first)}
    if tags.first is not None and tags.second is not None:
        reconciled = tags.reconciliation
        fields.update(a2=sorted(tags.second), reconciliation=sorted(reconciled) if reconciled is not None else None)
        fields["agg"] = sorted(tags.final or ())
    return fields


def export_rounds(item_ids: Iterable[int]) -> dict[int, dict[int, dict]]:
    """{item id: {round: the release's fields of that round (round_fields), with the round's result as
    "reasons" and the workers' tags with their counts as "worker_tags" where workers tagged}} of the reasons
    collected on these items, every round kept: what each export writes of an item's reasons."""
    rounds = collected_rounds(ReasonTag.objects.filter(item__in=list(item_ids)))
    return {
        item_id: {
            number: {
                **round_fields(tags),
                "reasons": sorted(tags.final) if tags.final is not None else None,
                **({"worker_tags": worker_tag_counts(tags)} if tags.workers else {}),
            }
            for number, tags in sorted(by_round.items())
        }
        for item_id, by_round in rounds.items()
    }


def worker_tag_counts(tags: Round) -> dict[str, int]:
    return dict(Counter(tag for chosen in tags.workers for tag in chosen).most_common())


def item_reasons(item: Item, user) -> dict:
    """What the item page and the API show of one item: each round's tags and result, and the user's own;
    beside each list of tags, its categories' names ("names", "final_names"; a tag outside the taxonomy, as
    an imported one may be, by itself)."""
    known = {entry["tag"]: entry["name"] for entry in taxonomy(item.project)}

    def named(tags) -> list[str] | None:
        return None if tags is None else [known.get(tag, tag) for tag in sorted(tags)]

    rounds = []
    for number in ROUNDS:
        tags = list(item.reason_tags.filter(round=number).select_related("tagger"))
        if not tags:
            continue
        round_tags = Round()
        shown = []
        for tag in tags:
            if tag.role == ReasonTag.Role.WORKER:
                round_tags.workers.append(frozenset(tag.reasons))
            else:
                setattr(round_tags, tag.role, frozenset(tag.reasons))
            shown.append(
                {
                    "role": tag.role,
                    # Workers stay anonymous to everyone but themselves.
                    "tagger": tag.tagger.get_username()
                    if tag.role != ReasonTag.Role.WORKER or tag.tagger_id == user.pk
                    else "a worker",
                    "reasons": tag.reasons,
                    "names": named(tag.reasons),
                    "note": tag.note,
                    "mine": tag.tagger_id == user.pk,
                }
            )
        final = round_tags.final
        rounds.append(
            {
                "round": number,
                "tags": shown,
                "final": sorted(final) if final is not None else None,
                "final_names": named(final),
                "needs_reconciliation": round_tags.first is not None
                and round_tags.second is not None
                and round_tags.first != round_tags.second
                and round_tags.reconciliation is None,
            }
        )
    if item.example.source_format == RELEASE_FORMAT:
        number, round_tags = release_rounds(item.example.source_data)
        imported = {
            "round": number,
            **{
                name: sorted(tags) if tags is not None else None
                for name, tags in (
                    ("first", round_tags.first),
                    ("second", round_tags.second),
                    ("reconciliation", round_tags.reconciliation),
                    ("final", round_tags.final),
                )
            },
        }
        imported["names"] = {name: named(imported[name]) for name in ("first", "second", "reconciliation", "final")}
    else:
        imported = None
    return {"rounds": rounds, "imported": imported}


# ---------------------------------------------------------------------------- the report


def reasons_report(project: Project) -> dict:
    """The report's section: how many items carry each reason (with examples), and per round how far the
    two taggers agree (metrics.reasons.set_agreement) and how many items were reconciled."""
    categories = taxonomy(project)
    names = {entry["tag"]: entry["name"] for entry in categories}
    counts: Counter[str] = Counter()
    examples: dict[str, list[dict]] = {}
    pairs: dict[int, tuple[list, list]] = {number: ([], []) for number in ROUNDS}
    rounds: dict[int, Counter[str]] = {number: Counter() for number in ROUNDS}
    items = imported = release_checked = release_matched = 0
    for entry in tagged_items(project):
        final = entry.final
        if final is None:
            continue
        items += 1
        imported += entry.imported
        for tag in final:
            counts[tag] += 1
            if len(examples.setdefault(tag, [])) < EXAMPLES_PER_REASON:
                examples[tag].append(
                    {"item_id": entry.item_id, "premise": entry.premise, "hypothesis": entry.hypothesis}
                )
        for number, round_tags in entry.rounds.items():
            rounds[number]["items"] += 1
            rounds[number]["reconciled"] += round_tags.reconciliation is not None
            if round_tags.first is not None and round_tags.second is not None:
                pairs[number][0].append(round_tags.first)
                pairs[number][1].append(round_tags.second)
        if entry.release_final is not None:
            release_checked += 1
            release_matched += entry.release_final == final
    order = [entry["tag"] for entry in categories] + sorted(set(counts) - set(names))
    agreement: dict[int, SetAgreement] = {}
    if any(first for first, _ in pairs.values()):
        # Here, not at the top, and only with pairs to compare: the metric loads numpy, pandas and scipy,
        # which a web process showing a report without tagged reasons need not load.
        from metrics.reasons import set_agreement

        agreement = {
            number: set_agreement(first, second, list(names)) for number, (first, second) in pairs.items() if first
        }
    return {
        "project": project.slug,
        "taxonomy": categories,
        "items": items,
        "imported_items": imported,
        "reasons": [
            {
                "tag": tag,
                "name": names.get(tag, tag),
                "items": counts[tag],
                "share": counts[tag] / items if items else None,
                "examples": examples.get(tag, []),
                "in_taxonomy": tag in names,
            }
            for tag in sorted(order, key=lambda tag: (-counts[tag], order.index(tag)))
        ],
        "rounds": [
            {
                "round": number,
                "items": rounds[number]["items"],
                "reconciled": rounds[number]["reconciled"],
                "agreement": agreement.get(number),
            }
            for number in ROUNDS
            if rounds[number]["items"]
        ],
        "release_rule": {"checked": release_checked, "matched": release_matched} if release_checked else None,
    }
