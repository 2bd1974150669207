"""Linked projects: a project whose answers another project validates (written hypotheses go to a 3-way
label project, written updates to a -2..+2 project), and the verdicts that come back.

The link is `Project.validation_project`; the task type says what validates its answers
(`validation_task`), which pairs an answer sends (`validation_pairs`) and how to read a verdict (`verdict`).
Every example made from an answer keeps its origin (the answer and the target it was written for), so a
second send creates nothing new and every verdict finds its writer.

The writer never validates their own sentence: the send gives the writer a submitted page in the
validation project with a claim on each item made from their answer (and their own vote first, where the
task type has one). The claim query already skips items a worker holds a claim on, so the claim path does
no extra work.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from annotation.live import announce_progress
from annotation.models import Annotation, Assignment, Atom, Claim, Example, Item, Project
from annotation.services.projects import (
    create_project,
    follow_writers,
    link_refusal,
    round_two_refusal,
    validators_per_pair,
    writers_needed,
)
from annotation.services.redundancy import settle_item, votes_in_order
from annotation.tasktypes.base import ValidationSetup, WrittenPair
from common.schema import SettingError

logger = logging.getLogger(__name__)
BATCH = 500


class LinkError(ValueError):
    """Nothing can be sent to validation; `field` names the setting (or the project) at fault."""

    def __init__(self, message: str, field: str = "validation_project"):
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass
class SendReport:
    validation_project: str
    created: int
    already_sent: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def send_to_validation(project: Project, assignment: Assignment | None = None) -> SendReport:
    """Send the project's written pairs (only those of one submitted page, when given) that are not in its
    validation project yet, creating and linking that project on the first send."""
    setup = project.task.validation_task(project.options)
    if setup is None:
        raise LinkError(f"a {project.task.label} project sends nothing to validation", field="project")
    too_few = round_two_refusal(project)
    if too_few is not None:
        raise LinkError(too_few, field="redundancy")
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)  # one send at a time per project
        validation = locked.validation_project or _create_validation_project(locked, setup)
        project.validation_project = validation  # the caller's copy shows the link too
        refusal = link_refusal(project, validation)
        if refusal is not None:
            raise LinkError(refusal)
        follow_writers(project)
        validation.refresh_from_db()
        answers = _written_answers(project)
        if assignment is not None:
            answers = answers.filter(assignment=assignment)
        sent = set(
            Example.objects.filter(project=validation, origin__in=answers).values_list("origin_id", "origin_target")
        )
        pending = [
            (answer, pair)
            for answer in answers.select_related("item__example").iterator(chunk_size=BATCH)
            for pair in project.task.validation_pairs(answer.item.example, answer.value, project.options)
        ]
        new = [(answer, pair) for answer, pair in pending if (answer.id, pair.target) not in sent]
        _create_pairs(project, validation, new)
    if new:
        announce_progress(validation)
    return SendReport(validation.slug, created=len(new), already_sent=len(pending) - len(new))


def after_submit(project: Project, assignment: Assignment) -> None:
    """A project set to send on submit sends each submitted page's pairs at once. The page is stored
    already: a send that fails is logged, and the author's next send takes its pairs."""
    if not project.task.sends_on_submit(project.options):
        return
    try:
        send_to_validation(project, assignment)
    except LinkError as error:
        logger.warning("project %s: page %s was not sent to validation: %s", project.slug, assignment.pk, error)


def _written_answers(project: Project):
    return Annotation.objects.filter(item__project=project, item__is_gold=False, worker__isnull=False).order_by("id")


def _create_validation_project(project: Project, setup: ValidationSetup) -> Project:
    """A new validation project for `project`, owned by its owner, open to the same workers."""
    stem = f"{project.slug[:69]}-validation"
    slug, number = stem, 1
    while Project.objects.filter(slug=slug).exists():
        number += 1
        slug = f"{stem}-{number}"
    try:
        validation = create_project(
            slug,
            setup.task_type,
            project.owner,
            title=f"Validation: {project.title}"[:200],
            instructions="Other workers wrote these sentences for the premises shown. Judge each one as it stands.",
            redundancy=validators_per_pair(project),
            max_annotations=validators_per_pair(project),
            status=project.status,
            audience=project.audience,
            **setup.options,
        )
    except (SettingError, PermissionDenied) as error:
        raise LinkError(f"no validation project could be created: {error}") from None
    validation.members.set(project.members.all())
    validation.member_groups.set(project.member_groups.all())
    project.validation_project = validation
    project.save(update_fields=["validation_project"])
    return validation


def pair_id(project: Project, answer: Annotation, target: str) -> str:
    """SNLI's pairID shape (caption#n r-round label letter): <writing project>#<item>r<answer><target letter>."""
    return f"{project.slug}#{answer.item_id}r{answer.id}{target[0]}"


def _create_pairs(project: Project, validation: Project, pairs: list[tuple[Annotation, WrittenPair]]) -> None:
    """One example and item per pair, and for each answer the writer's submitted page in `validation`."""
    if not pairs:
        return
    start = validation.examples.count()
    examples = Example.objects.bulk_create(
        Example(
            project=validation,
            key=f"origin:{answer.id}:{pair.target}",
            source_id=pair_id(project, answer, pair.target),
            premise=pair.premise,
            hypothesis=pair.hypothesis,
            update=pair.update,
            update_type=pair.update_type,
            # Written pairs take SNLI's shape (the premise's caption id, the pair's id after it), unless the
            # pair brings what its validators are shown (an explanation and its highlights).
            source_label=pair.target,
            source_data=pair.data or {"captionID": f"{project.slug}#{answer.item_id}"},
            source_format="" if pair.data else "snli",
            position=start + offset,
            origin=answer,
            origin_target=pair.target,
        )
        for offset, (answer, pair) in enumerate(pairs)
    )
    atoms = [None] * len(pairs)
    if validation.task.per_atom:
        atoms = Atom.objects.bulk_create(
            Atom(example=example, text=pair.atom) for example, (_, pair) in zip(examples, pairs)
        )
    items = Item.objects.bulk_create(
        Item(
            project=validation,
            example=example,
            atom=atom,
            target=validation.redundancy,
            annotation_count=int(pair.vote is not None),
            claimable=int(pair.vote is not None) < validation.redundancy,
        )
        for example, atom, (_, pair) in zip(examples, atoms, pairs)
    )
    now = timezone.now()
    by_answer: dict[int, list[tuple[Item, WrittenPair]]] = {}
    writers: dict[int, int] = {}
    for item, (answer, pair) in zip(items, pairs):
        by_answer.setdefault(answer.id, []).append((item, pair))
        writers[answer.id] = answer.worker_id
    pages = Assignment.objects.bulk_create(
        Assignment(
            project=validation,
            worker_id=writers[answer_id],
            status=Assignment.Status.SUBMITTED,
            expires_at=now,
            submitted_at=now,
        )
        for answer_id in by_answer
    )
    Claim.objects.bulk_create(
        Claim(assignment=page, item=item, worker_id=page.worker_id, position=position)
        for page, written in zip(pages, by_answer.values())
        for position, (item, _) in enumerate(written)
    )
    Annotation.objects.bulk_create(
        Annotation(
            item=item,
            worker_id=page.worker_id,
            assignment=page,
            raw={"value": pair.vote},
            value=pair.vote,
            started_at=now,
        )
        for page, written in zip(pages, by_answer.values())
        for item, pair in written
        if pair.vote is not None
    )
    complete = [item for item in items if item.annotation_count >= item.target]  # a redundancy of 1: the writer's vote
    for item in complete:
        settle_item(validation, item)
    Item.objects.bulk_update(complete, ["target", "status", "aggregate", "claimable", "priority"])


# ---------------------------------------------------------------- verdicts coming back


@dataclass
class WrittenRecord:
    """One written pair of a project and what its validation made of it so far."""

    answer: Annotation  # with item__example and worker
    pair: WrittenPair
    validation_pair_id: str | None  # None: not sent yet
    votes: list  # the validation item's votes in order (the writer's first, where there is one)
    verdict: object  # the task type's reading of a settled validation item; None while unsettled

    @property
    def sent(self) -> bool:
        return self.validation_pair_id is not None


def written_records(project: Project) -> Iterator[WrittenRecord]:
    """Every written pair of the project, in the order written, with its validation (if sent)."""
    task, options = project.task, project.options
    answers = _written_answers(project).select_related("item__example", "worker", "assignment__instrument")
    last_id = 0
    while True:
        batch = list(answers.filter(id__gt=last_id)[:BATCH])
        if not batch:
            return
        validated = Item.objects.none()
        if project.validation_project_id is not None:
            validated = Item.objects.filter(project_id=project.validation_project_id, example__origin__in=batch)
        items = {
            (item.example.origin_id, item.example.origin_target): item for item in validated.select_related("example")
        }
        votes = votes_in_order([item.id for item in items.values()])
        for answer in batch:
            for pair in task.validation_pairs(answer.item.example, answer.value, options):
                item = items.get((answer.id, pair.target))
                if item is None:
                    yield WrittenRecord(answer, pair, None, [], None)
                    continue
                settled = item.status != Item.Status.OPEN
                verdict = task.verdict(item, votes[item.id], options) if settled else None
                yield WrittenRecord(answer, pair, item.example.source_id, votes[item.id], verdict)
        last_id = batch[-1].id


def writer_figures(project: Project) -> list[dict]:
    """Per writer and target: pairs written, sent, judged (at least one validator's vote counts, settled or
    not), validated (their validation item settled) and confirmed (the verdict is the target they were written
    for), and the validation rate confirmed / validated."""
    counts: dict[tuple[str, str], dict] = {}
    target_order: dict[str, int] = {}  # the task type's order of targets, as its pairs come
    for record in written_records(project):
        target_order.setdefault(record.pair.target, len(target_order))
        key = (record.answer.worker.username, record.pair.target)
        entry = counts.setdefault(key, {"written": 0, "sent": 0, "judged": 0, "validated": 0, "confirmed": 0})
        entry["written"] += 1
        entry["sent"] += record.sent
        entry["judged"] += len(record.votes) > (record.pair.vote is not None)  # the writer's own vote is no judgment
        if record.verdict is not None:
            entry["validated"] += 1
            entry["confirmed"] += record.verdict == record.pair.target
    return [
        {
            "writer": writer,
            "target": target,
            **entry,
            "rate": entry["confirmed"] / entry["validated"] if entry["validated"] else None,
        }
        for (writer, target), entry in sorted(counts.items(), key=lambda pair: (pair[0][0], target_order[pair[0][1]]))
    ]


def report_tables(project: Project) -> list[dict]:
    """The report's table of writers for a project whose answers are validated in a linked project (in the
    shape of TaskType.report_tables); none for other projects."""
    task = project.task
    if task.validation_task(project.options) is None:
        return []
    rows = [
        [
            f["writer"],
            task.target_name(f["target"]),
            f["written"],
            f["sent"],
            f["validated"],
            f["confirmed"],
            "—" if f["rate"] is None else f"{f['rate']:.0%}",
            f["judged"],
        ]
        for f in writer_figures(project)
    ]
    return [
        {
            "title": "Writers: validation rate per target",
            "columns": ["Writer", "Target", "Written", "Sent", "Validated", "Confirmed", "Validation rate", "Judged"],
            "rows": rows,
            "empty": "Nothing written yet.",
            "note": "Every pair written counts: Written, all of them; Sent, those in the validation project; "
            "Validated, those it settled; Confirmed, the validated ones where "
            f"{task.confirmation_rule(project.options)}. Validation rate: confirmed of validated. Judged: the "
            "sent pairs with at least one validator's judgment, settled or not.",
        }
    ]


def validation_status(project: Project) -> dict | None:
    """What the dashboard shows about sending: the linked project and how many pairs went there; None for
    a task type whose answers are not validated elsewhere."""
    if project.task.validation_task(project.options) is None:
        return None
    linked = project.validation_project
    sent = Example.objects.filter(project=linked, origin__item__project=project).count() if linked else 0
    return {
        "project": linked,
        "answers": _written_answers(project).count(),
        "sent": sent,
        "sends_on_submit": project.task.sends_on_submit(project.options),
        "validators_per_pair": validators_per_pair(project),
        "writers_needed": writers_needed(project),
        "refusal": round_two_refusal(project),
    }
