"""The atoms pipeline linked: an atom validity study's valid atoms go on to a defeasible atom study, where
each (premise, hypothesis, update, atom) is rated -2..+2 (REFERENCE.md, "Defeasible atom effect").

A valid atom is one the validity study settled as valid: the item is no longer open and its final label
(adjudicated, else the aggregate, as every export reads it) is "valid". Open items and ties are left out and
counted; so are invalid atoms, and valid atoms whose example has no update, since a defeasible item needs one.
The update travels with the example: a validity study's examples carry it when they were imported from rows
with an `update` (delta-NLI style rows, the demo's, a generate_atoms input with an update column).

The target example keeps the validity study's key for it, so a study that imported the same rows meets the
same examples, and each atom is one item there: sending again adds only atoms settled valid since, and never
touches the answers a target study has. Each send is written to the audit log on the validity study.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count
from django.utils.text import slugify

from annotation.live import announce_progress
from annotation.models import Atom, AuditEntry, Example, Item, Project
from annotation.services import access, audit
from annotation.services.projects import create_project
from annotation.tasktypes import TASK_TYPES
from common.schema import SettingError

# What a per-atom task type's items are judged for (TaskType.atom_reference_field): the chain reads it, never
# a task type's name, so another task type of either kind takes part as the built-in ones do.
SOURCE_REFERENCE, TARGET_REFERENCE = "validity", "effect"
VALID = "valid"
OPERATION = "send_valid_atoms"
NEW_STUDY_INSTRUCTIONS = (
    "Each item shows a premise, an update and one atom (a small fact the hypothesis states). "
    "Rate how the update changes the likelihood of the atom, given the premise, from -2 to +2."
)


class ChainError(ValueError):
    """Nothing was sent; `field` names what is at fault (source, to, new_title)."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass
class ChainReport:
    """What one send did. valid = created + already_sent + no_update; every atom item of the validity study
    is one of valid, invalid or unsettled."""

    target: str
    target_title: str
    new_study: bool
    valid: int
    created: int
    already_sent: int
    no_update: int
    invalid: int
    unsettled: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    def summary(self) -> str:
        text = (
            f"{self.created} new valid atom{'s' * (self.created != 1)} sent to {self.target} "
            f"({self.already_sent} sent before)"
        )
        left_out = [
            f"{count} {what}"
            for count, what in (
                (self.unsettled, "not settled yet"),
                (self.invalid, "invalid"),
                (self.no_update, "valid but without an update"),
            )
            if count
        ]
        return f"{text}; left out: {', '.join(left_out)}" if left_out else text


def atom_verdicts(source: Project) -> Counter:
    """How many of the validity study's atom items are settled valid, settled invalid and not settled yet
    (counted in the database by status and labels: a study page asks on every load)."""
    counts: Counter = Counter(valid=0, invalid=0, unsettled=0)
    groups = _atom_items(source).values("status", "aggregate", "adjudicated").annotate(items=Count("id"))
    for group in groups:
        counts[_verdict(group["status"], group["aggregate"], group["adjudicated"])] += group["items"]
    return counts


def send_valid_atoms(source: Project, *, to: str = "", new_title: str = "", user=None) -> ChainReport:
    """Send `source`'s settled valid atoms that are not there yet to the defeasible study `to` (a slug), or
    to a new one titled `new_title` (a draft owned by `user`, or by the validity study's author from the
    command line, open to the same workers). `user`: who sends (they must manage both studies); None for the
    command line."""
    if not _judges(source, SOURCE_REFERENCE):
        raise ChainError(
            f"{source.slug} is a {source.task.label} study: valid atoms come from an atom validity study", "source"
        )
    if user is not None:
        access.ensure_can_manage(user, source)
    if bool(to) == bool(new_title.strip()):
        raise ChainError("name the defeasible study to fill, or give a title for a new one (not both)", "to")
    with transaction.atomic():
        target = _existing_target(to, user) if to else _new_target(source, new_title.strip(), user)
        target = Project.objects.select_for_update().get(pk=target.pk)  # one send at a time per target
        report = _send(source, target, new_study=not to)
        audit.record(user, AuditEntry.Action.LINK, source, operation=OPERATION, **report.as_dict())
    if report.created:
        announce_progress(target)
    return report


def page_state(source: Project, user) -> dict | None:
    """What a validity study's page shows about sending (None for other task types): the atoms' verdicts,
    the defeasible studies `user` manages, the last target and the latest sends."""
    if not _judges(source, SOURCE_REFERENCE):
        return None
    past = list(
        AuditEntry.objects.filter(project=source, action=AuditEntry.Action.LINK, details__operation=OPERATION).order_by(
            "-created_at", "-id"
        )[:5]
    )
    return {
        "verdicts": atom_verdicts(source),
        "defeasible_studies": access.managed_projects(user)
        .filter(task_type__in=_task_types_judging(TARGET_REFERENCE))
        .order_by("title", "slug"),
        "last_target": past[0].details.get("target") if past else "",
        "suggested_title": f"Defeasible: {source.title}"[:200],
        "past": past,
    }


def _task_types_judging(reference: str) -> list[str]:
    """The installed per-atom task types whose items are judged for `reference`, in registration order."""
    return [name for name, task in TASK_TYPES.items() if task.per_atom and task.atom_reference_field == reference]


def _judges(project: Project, reference: str) -> bool:
    return project.task_installed and project.task.per_atom and project.task.atom_reference_field == reference


def _atom_items(source: Project):
    return Item.objects.filter(project=source, is_gold=False, atom__isnull=False)


def _verdict(status: str, aggregate, adjudicated) -> str:
    """valid / invalid when the study settled the item, else unsettled (open, or tied and not adjudicated).
    The label is Item.final_value, as the exports read it (dataset_io.services.records)."""
    value = None if status == Item.Status.OPEN else adjudicated if adjudicated is not None else aggregate
    if value is None:
        return "unsettled"
    return VALID if value == VALID else "invalid"


def _kind(project: Project) -> str:
    return f"a {project.task.label} study" if project.task_installed else f"a {project.task_type} study"


def _existing_target(slug: str, user) -> Project:
    target = access.installed_projects().filter(slug=slug).first()
    # A study the sender may not manage is named as missing, as the access module answers for pages.
    if target is None or (user is not None and not access.can_manage(user, target)):
        raise ChainError(f"no study {slug!r} of yours", "to")
    if not _judges(target, TARGET_REFERENCE):
        raise ChainError(f"{slug} is {_kind(target)}: valid atoms go to a defeasible atom effect study", "to")
    return target


def _new_target(source: Project, title: str, user) -> Project:
    owner = source.owner if user is None else user
    stem = slugify(title)[:70] or f"{source.slug[:60]}-defeasible"
    slug, number = stem, 1
    while Project.objects.filter(slug=slug).exists():
        number += 1
        slug = f"{stem}-{number}"
    try:
        target = create_project(
            slug,
            _task_types_judging(TARGET_REFERENCE)[0],
            owner,
            title=title[:200],
            instructions=NEW_STUDY_INSTRUCTIONS,
            audience=source.audience,
        )
    except (SettingError, PermissionDenied) as error:
        field_errors = getattr(error, "errors", None)
        detail = next(iter(field_errors.values())) if field_errors else str(error)
        raise ChainError(f"no defeasible study could be created: {detail}", "new_title") from None
    target.members.set(source.members.all())
    target.member_groups.set(source.member_groups.all())
    return target


def _send(source: Project, target: Project, new_study: bool) -> ChainReport:
    verdicts: Counter = Counter(valid=0, invalid=0, unsettled=0)
    valid: list[Item] = []
    for item in (
        _atom_items(source)
        .select_related("example", "atom")
        .order_by("example__position", "example_id", "atom__order", "id")
    ):
        verdict = _verdict(item.status, item.aggregate, item.adjudicated)
        verdicts[verdict] += 1
        if verdict == VALID:
            valid.append(item)
    with_update = [item for item in valid if item.example.update.strip()]
    examples = _target_examples(target, [item.example for item in with_update])
    atoms = _target_atoms(examples, with_update)
    sent = set(Item.objects.filter(project=target, atom__in=atoms.values()).values_list("atom_id", flat=True))
    new = [atom for atom in atoms.values() if atom.id not in sent]
    Item.objects.bulk_create(
        Item(project=target, example_id=atom.example_id, atom=atom, target=target.redundancy) for atom in new
    )
    return ChainReport(
        target=target.slug,
        target_title=target.title,
        new_study=new_study,
        valid=verdicts[VALID],
        created=len(new),
        already_sent=len(atoms) - len(new),
        no_update=len(valid) - len(with_update),
        invalid=verdicts["invalid"],
        unsettled=verdicts["unsettled"],
    )


def _target_examples(target: Project, sources: list[Example]) -> dict[int, Example]:
    """The target's example for each source example (by the source's key), made where it has none; an
    example under the same key with other texts is refused, naming it."""
    by_key = {example.key: example for example in sources}
    found = {example.key: example for example in Example.objects.filter(project=target, key__in=list(by_key))}
    for key, example in found.items():
        source = by_key[key]
        if (example.premise, example.hypothesis, example.update) != (source.premise, source.hypothesis, source.update):
            raise ChainError(
                f"{target.slug} has an example {example.source_id or key!r} with other texts than the validity "
                "study's example of that id: send to another study",
                "to",
            )
    start = target.examples.count()
    made = Example.objects.bulk_create(
        Example.from_source(source, target, start + offset)
        for offset, source in enumerate(source for key, source in by_key.items() if key not in found)
    )
    found.update((example.key, example) for example in made)
    return {source.id: found[source.key] for source in sources}


def _target_atoms(examples: dict[int, Example], items: list[Item]) -> dict[int, Atom]:
    """The target's atom for each valid source atom (by example and text), made valid where it has none;
    an atom it has of unknown validity is marked valid: the validity study settled it."""
    wanted = {(examples[item.example_id].id, item.atom.text): item.atom for item in items}
    existing = {
        (atom.example_id, atom.text): atom
        for atom in Atom.objects.filter(example__in={example.id for example in examples.values()})
    }
    unknown = [atom for key, atom in existing.items() if key in wanted and atom.validity == Atom.Validity.UNKNOWN]
    Atom.objects.filter(pk__in=[atom.pk for atom in unknown]).update(validity=Atom.Validity.VALID)
    made = Atom.objects.bulk_create(
        Atom(example_id=example_id, text=text, order=source.order, validity=Atom.Validity.VALID, effect=source.effect)
        for (example_id, text), source in wanted.items()
        if (example_id, text) not in existing
    )
    existing.update(((atom.example_id, atom.text), atom) for atom in made)
    return {item.atom_id: existing[(examples[item.example_id].id, item.atom.text)] for item in items}
