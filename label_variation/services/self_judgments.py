"""The authors' self-check (VariErr NLI's round 2): an explanation's author judges whether each of their own
label-explanation pairs makes sense, kept apart from the validators' votes (`SelfJudgment`).

A study whose task type `explains_labels` sends each (answer, label) pair to its linked validation project,
where other workers judge it and the author never does (linking gives the author a claim on the pair).
Here the author judges their own pairs instead, once each: a self-judgment is human work and is never
replaced, so judging a pair again is refused as already judged. A judgment is spelt as the validation
project's task type reads its validators' answers (`parse_answer`: makes sense, true or false).

label_variation.services.variation reads the self-judgments into `Explanation.self_judgment`, so VariErr's rule
(metrics.variation.classify_item) decides an item by its authors' own judgments once they gave them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from django.db import IntegrityError, transaction
from django.db.models import Count, F, QuerySet

from annotation.models import Example, Project
from annotation.tasktypes.base import AnswerError
from common.errors import FieldError
from label_variation.models import SelfJudgment

MAX_PAGE = 200  # pairs shown (and judged) at once
MAX_ID = 2**63 - 1  # the largest id the database stores


class SelfJudgmentError(FieldError):
    """A page of self-judgments is refused, nothing stored; `field` names the pair (or the page) at fault."""


def has_self_check(project: Project) -> bool:
    """Whether the study's authors can judge their own pairs: its answers explain labels and a linked
    validation project holds the pairs."""
    return project.task.explains_labels and project.validation_project_id is not None


def self_check_open(project: Project) -> bool:
    """Whether the study's writers can still judge their own pairs: it has a self-check and is not closed.
    While it is open, a label its writer has not judged waits for them (metrics.variation's "pending")."""
    return has_self_check(project) and project.status != Project.Status.CLOSED


def _own_pairs(project: Project, worker) -> QuerySet:
    return Example.objects.filter(
        project_id=project.validation_project_id, origin__item__project=project, origin__worker=worker
    ).order_by("origin_id", "position", "id")


def pending_pairs(project: Project, worker, limit: int = MAX_PAGE) -> list[Example]:
    """The worker's pairs in the validation project they have not judged yet, in the order written."""
    if not has_self_check(project):
        return []
    return list(_own_pairs(project, worker).exclude(self_judgments__worker=worker)[:limit])


def pending_count(project: Project, worker) -> int:
    """How many of the worker's pairs wait for their judgment (0 where the study has no self-check)."""
    if not has_self_check(project):
        return 0
    return _own_pairs(project, worker).exclude(self_judgments__worker=worker).count()


def waiting_by_project(worker, projects) -> dict[int, int]:
    """{project id: the worker's pairs still to judge} over these studies (only those with some), in one
    query: the writers' home list shows each study's self-check to do."""
    rows = (
        Example.objects.filter(
            origin__worker=worker,
            origin__item__project__in=projects,
            project_id=F("origin__item__project__validation_project_id"),
        )
        .exclude(self_judgments__worker=worker)
        .values("origin__item__project_id")
        .annotate(waiting=Count("id"))
        .values_list("origin__item__project_id", "waiting")
    )
    return dict(rows)


def studies_to_self_check(project: Project, worker) -> list[tuple[Project, int]]:
    """[(study, the worker's pairs still to judge)] for the self-checks open to this worker from `project`'s
    pages: its own, and those of the studies whose pairs it validates (a writer who validates others' pairs
    there judges their own on the study they wrote in). Only studies where some wait; two queries."""
    candidates = [
        study
        for study in (project, *Project.objects.filter(validation_project=project).order_by("id"))
        if self_check_open(study)
    ]
    if not worker.is_authenticated or not candidates:
        return []
    waiting = waiting_by_project(worker, [study.pk for study in candidates])
    return [(study, waiting[study.pk]) for study in candidates if waiting.get(study.pk)]


def judged_count(project: Project, worker) -> int:
    """How many of their pairs the worker has judged."""
    if not has_self_check(project):
        return 0
    return SelfJudgment.objects.filter(
        worker=worker, example__project_id=project.validation_project_id, example__origin__item__project=project
    ).count()


def pair_record(example: Example) -> dict:
    """One of the worker's pairs as the API lists it: its id (what a judgment names), the pair, the label and
    the explanation with its highlighted spans, as the self-check page shows them."""
    data = example.source_data or {}
    return {
        "pair": example.pk,
        "premise": example.premise,
        "hypothesis": example.hypothesis,
        "label": data.get("label") or example.source_label,
        "explanation": data.get("explanation", ""),
        "premise_spans": data.get("premise_spans", []),
        "hypothesis_spans": data.get("hypothesis_spans", []),
    }


def own_pairs(project: Project, worker) -> dict:
    """The self-check as the API gives it: {"pending", "judged" (counts), "pairs" (the first MAX_PAGE pending
    ones, `pair_record`s)}."""
    return {
        "pending": pending_count(project, worker),
        "judged": judged_count(project, worker),
        "pairs": [pair_record(example) for example in pending_pairs(project, worker)],
    }


def judgments_from_list(entries) -> dict:
    """A page of judgments sent as a list, [{"pair": id, "makes_sense": judgment}, ...] (the API's body), as
    `record_self_judgments` takes it. A list that is not one, an entry without its pair or judgment, or a
    pair given twice is a SelfJudgmentError naming the entry's field (judgments[2].pair)."""
    if not isinstance(entries, list):
        raise SelfJudgmentError("judgments", 'must be a list of {"pair": id, "makes_sense": true|false}')
    judgments: dict[int, object] = {}
    for index, entry in enumerate(entries):
        where = f"judgments[{index}]"
        if not isinstance(entry, dict):
            raise SelfJudgmentError(where, 'must be {"pair": id, "makes_sense": true|false}')
        for name in ("pair", "makes_sense"):
            if name not in entry:
                raise SelfJudgmentError(f"{where}.{name}", "is required")
        pair = entry["pair"]
        if isinstance(pair, bool) or not isinstance(pair, int):
            raise SelfJudgmentError(f"{where}.pair", "must be a pair id, a whole number")
        if pair in judgments:
            raise SelfJudgmentError(f"{where}.pair", f"pair {pair} is judged twice in this request")
        judgments[pair] = entry["makes_sense"]
    return judgments


def record_self_judgments(project: Project, worker, judgments: Mapping) -> int:
    """Store the worker's judgments of their own pairs, {validation example id: judgment}; returns how many.

    All or nothing: a pair that is not the worker's (or not this study's), one judged already, or a judgment
    that is not a yes or no refuses the whole page with a SelfJudgmentError naming the pair."""
    if not has_self_check(project):
        raise SelfJudgmentError("project", "this study has no validation round, so nothing to judge")
    if not judgments:
        raise SelfJudgmentError("judgments", "judge at least one of your explanations")
    if len(judgments) > MAX_PAGE:
        raise SelfJudgmentError("judgments", f"{len(judgments)} judgments; send at most {MAX_PAGE} at once")
    validation = project.validation_project
    parsed: dict[int, bool] = {}
    for given_id, given in judgments.items():
        field = f"pair {given_id}"
        try:
            example_id = int(given_id)
        except (TypeError, ValueError):
            raise SelfJudgmentError(field, "is not a pair id") from None
        if not 0 < example_id <= MAX_ID:  # the database's ids: a larger number would not even be looked up
            raise SelfJudgmentError(field, "is not a pair id")
        try:
            _, value = validation.task.parse_answer({"value": given}, validation.options)
        except AnswerError as error:
            raise SelfJudgmentError(field, error.message) from None
        parsed[example_id] = bool(value["makes_sense"])
    owned = set(_own_pairs(project, worker).filter(pk__in=parsed).values_list("pk", flat=True))
    for example_id in parsed:
        if example_id not in owned:
            raise SelfJudgmentError(
                f"pair {example_id}", "is not one of your explanations in this study: authors judge only their own"
            )
    with transaction.atomic():
        already = set(
            SelfJudgment.objects.filter(example__in=parsed, worker=worker).values_list("example_id", flat=True)
        )
        if already:
            raise SelfJudgmentError(
                f"pair {min(already)}", "you judged this explanation already; a judgment is kept, not replaced"
            )
        try:
            with transaction.atomic():
                SelfJudgment.objects.bulk_create(
                    SelfJudgment(example_id=example_id, worker=worker, makes_sense=makes_sense)
                    for example_id, makes_sense in parsed.items()
                )
        except IntegrityError:  # a second submit of the same page got there first
            raise SelfJudgmentError("judgments", "you judged these explanations already") from None
    return len(parsed)


def self_judgments(project: Project, keys: Collection[str] | None = None) -> dict[tuple[int, str], bool]:
    """{(origin answer id, label): the author's judgment} of the study's pairs (of the examples with these
    keys only, when given) in one query: the reader of explanations' view of the self-check."""
    if not has_self_check(project):
        return {}
    rows = SelfJudgment.objects.filter(
        example__project_id=project.validation_project_id,
        example__origin__item__project=project,
        worker=F("example__origin__worker"),
    )
    if keys is not None:
        rows = rows.filter(example__origin__item__example__key__in=keys)
    return {
        (origin, target): makes_sense
        for origin, target, makes_sense in rows.values_list(
            "example__origin_id", "example__origin_target", "makes_sense"
        )
    }
