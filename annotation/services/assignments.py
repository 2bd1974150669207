"""The worker loop: claim a page, submit it, release it, expire stale claims.

Invariants (checked by the concurrency tests on PostgreSQL):
- an item never has more active claims plus annotations than its target (late submits aside);
- a worker never gets an item twice (a unique (item, worker) claim);
- a submit is all or nothing, and a repeated identical submit stores nothing more.
On PostgreSQL the claim locks candidate items with FOR UPDATE SKIP LOCKED, so concurrent claimers take
different rows without waiting; SQLite runs each write transaction alone (BEGIN IMMEDIATE).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.live import announce_progress
from annotation.models import Annotation, Assignment, Claim, Item, PageDraft, Project
from annotation.services import access, extensions, instrument, pools
from annotation.services.answers import SubmissionError, check_against_items, parse_answers
from annotation.services.quality import is_gold_correct, record_gold_answers
from annotation.services.redundancy import settle_item
from annotation.services.study_settings import settings_schema
from common.compiled_queries import Write, compiled_rows, insert_rows, inserting, updating, write_together

CLAIM_ATTEMPTS = 5
MAX_LOCK_ROUNDS = 8  # batches of rows tried when coherence groups reject candidates
EXPIRE_BATCH = 100


@dataclass
class SubmitResult:
    assignment: Assignment
    created: int
    late: bool
    repeated: bool = False
    items: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "assignment": self.assignment.pk,
            "status": self.assignment.status,
            "annotations": len(self.items),
            "late": self.late,
            "repeated": self.repeated,
        }


def open_assignment(project: Project, worker) -> Assignment | None:
    known, page_id = access.known_open_page(project, worker)
    if known and page_id is None:  # read with the project for this request: the worker holds no page
        return None
    held = Assignment.objects.filter(
        project=project, worker=worker, status=Assignment.Status.OPEN, expires_at__gt=timezone.now()
    )
    return held.filter(pk=page_id).first() if known else held.order_by("created_at").first()


def claim_page(project: Project, worker) -> Assignment | None:
    """The worker's open page in this project, or a new one of up to k items; None when no work is left."""
    access.ensure_can_work(project, worker, new_page=False)
    current = open_assignment(project, worker)
    if current is not None:
        return current  # a paused study still lets the worker finish the page they hold
    refusal = access.new_page_refusal(project)
    if refusal is not None:
        raise refusal
    # Overdue pages are expired by the periodic loop (expire_claims --every), not here; only when the pool
    # looks empty does a claim expire this project's overdue pages itself, reading just those (an index
    # range over open pages past their deadline), so the last items are not held by abandoned pages.
    expired_here = False
    for _ in range(CLAIM_ATTEMPTS):
        assignment = _try_claim(project, worker)
        if assignment is not None:
            return assignment
        # Nothing unlocked was free; if rows are merely held by concurrent claimers, look again.
        if not Item.objects.filter(project=project, claimable=True).exists():
            if expired_here or not (expire_stale(project=project) + release_abandoned(project=project)):
                return None
            expired_here = True
            continue
        time.sleep(random.uniform(0.005, 0.05))
    return None


def _try_claim(project: Project, worker) -> Assignment | None:
    with transaction.atomic():
        chosen = _lock_page(project, worker)
        if not chosen:
            return None
        gold = _gold_check(project, worker)
        if gold is not None:  # hidden among the others, at a random place
            chosen.insert(random.randrange(len(chosen) + 1), gold)
        assignment = Assignment(
            project=project,
            worker=worker,
            expires_at=timezone.now() + timedelta(minutes=project.claim_timeout_minutes),
            instrument_id=instrument.current_id(project),
        )
        insert_rows([assignment], returning_pk=True)
        claims = [
            Claim(assignment=assignment, item=item, worker=worker, position=position)
            for position, item in enumerate(chosen)
        ]
        assignment.page_items = chosen  # what the page shows, already read: no query to serialise it
        taken = [item for item in chosen if not item.is_gold]
        for item in taken:  # the rows are locked: their counters are current
            item.active_claims += 1
            item.refresh_claimable()
        write_together([inserting(claims), *_counter_writes(taken, ["active_claims", "claimable"])])
    return assignment


def _lock_page(project: Project, worker) -> list[Item]:
    """Lock up to k free items for the worker: at most one per coherence group, none of a group the
    worker holds (or, if the project says so, ever held). Rows are locked a page at a time, so
    concurrent claimers skip only what others really take."""
    # Where the worker's claims stopped: without it a worker who answered 10,000 items would pass over
    # each of them again (an index probe apiece) on every claim. Items are served in id order unless the
    # project is adaptive, so the worker looks past their last claimed item first, and from the start
    # only when nothing is left ahead (items released or reopened behind them).
    sources = [False] if project.adaptive else [True, False]  # after the worker's last claimed item?
    chosen: list[Item] = []
    considered: list[int] = []
    blocked: set[str] | None = None
    for _ in range(MAX_LOCK_ROUNDS):
        wanted = project.items_per_page - len(chosen)
        if considered:  # a later round (rare): skips the rows already looked at
            batch = list(
                _free_items(sources[0], project_id=project.pk, worker_id=worker.pk).exclude(id__in=considered)[:wanted]
            )
        else:
            batch = compiled_rows(_free_page, sources[0], wanted, project_id=project.pk, worker_id=worker.pk)
        if not batch and len(sources) > 1:
            sources.pop(0)
            continue
        if not batch:
            break
        considered += [item.id for item in batch]
        if blocked is None and any(item.coherence_group for item in batch):
            blocked = _held_groups(project, worker)
        for item in batch:
            if item.annotation_count + item.active_claims >= item.target:
                continue  # filled since the index said otherwise
            if item.coherence_group:
                if item.coherence_group in blocked:
                    continue
                blocked.add(item.coherence_group)
            chosen.append(item)
        if len(chosen) == project.items_per_page:
            break
    return chosen


def _free_items(after_last_claim: bool, *, project_id: int, worker_id: int):
    """The project's claimable items the worker never had, locked as they are read (rows others hold are
    skipped), in serving order."""
    already_seen = Claim.objects.filter(item=OuterRef("pk"), worker=worker_id)
    free = (
        Item.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(project=project_id, claimable=True, is_gold=False)
        .exclude(Exists(already_seen))
        .order_by("priority", "id")
        # The page's texts come with the lock (joined, not locked), so answering the claim reads nothing more.
        .select_related("example", "atom")
        .only(
            "id",
            "status",
            "coherence_group",
            "annotation_count",
            "active_claims",
            "target",
            "is_gold",
            "example__premise",
            "example__hypothesis",
            "example__update",
            "atom__text",
        )
    )
    if after_last_claim:
        last_claimed = Claim.objects.filter(worker=worker_id, item__project=project_id).order_by("-item_id")
        free = free.filter(id__gt=Coalesce(Subquery(last_claimed.values("item_id")[:1]), Value(0)))
    return free


def _free_page(after_last_claim: bool, limit: int, *, project_id: int, worker_id: int):
    # The first round's statement, compiled once per process (common/compiled_queries.py): every claim runs it.
    return _free_items(after_last_claim, project_id=project_id, worker_id=worker_id)[:limit]


def _gold_check(project: Project, worker) -> Item | None:
    """With probability gold_rate, one gold item this worker has not seen yet and was never shown the
    reference answer of (a worked example, a qualification item whose feedback they saw)."""
    if project.gold_rate <= 0 or random.random() >= project.gold_rate:
        return None
    already_seen = Claim.objects.filter(item=OuterRef("pk"), worker=worker)
    candidates = Item.objects.filter(project=project, is_gold=True).exclude(Exists(already_seen))
    shown = pools.shown_to(project, worker)
    if shown is not None:
        candidates = candidates.exclude(shown)
    return candidates.select_related("example", "atom").order_by("?").first()


def _held_groups(project: Project, worker) -> set[str]:
    held = Claim.objects.filter(worker=worker, item__project=project).exclude(item__coherence_group="")
    if not project.options.get("coherence_exclusive_per_worker"):
        held = held.filter(assignment__status=Assignment.Status.OPEN)
    return set(held.values_list("item__coherence_group", flat=True))


def _counter_writes(items, fields: list[str]) -> list[Write]:
    """What a claim, submit or expiry changed on its locked items, an UPDATE per item, to send with the
    request's other writes (write_together)."""
    return [updating(item, fields) for item in items]


def _digest(answers: dict) -> str:
    return hashlib.sha256(json.dumps(answers, sort_keys=True, default=str).encode()).hexdigest()


def submit_page(assignment_id: int, worker, answers: dict) -> SubmitResult:
    """Store a page of answers atomically; late pages are kept and marked; repeats store nothing."""
    with transaction.atomic():
        claims = compiled_rows(_page_to_submit, assignment_id=assignment_id, worker_id=worker.pk)
        # Another worker's page answers as if it did not exist: page ids are not to be probed.
        if not claims or claims[0].assignment.worker_id != worker.pk:
            raise SubmissionError("assignment", "no such page", status=404)
        assignment = claims[0].assignment
        project = assignment.project
        access.remember_work_state(project, worker, claims[0])
        access.ensure_can_work(project, worker, new_page=False)
        items = {claim.item_id: claim.item for claim in claims}
        item_ids = list(items)
        digest = _digest(answers)
        if assignment.status == Assignment.Status.SUBMITTED:
            if digest != assignment.submission_digest:
                raise SubmissionError("assignment", "this page was already submitted with other answers", status=409)
            return SubmitResult(assignment, created=0, late=assignment.late, repeated=True, items=item_ids)
        if assignment.status == Assignment.Status.RELEASED:
            raise SubmissionError("assignment", "this page was released and can no longer be submitted", status=409)
        parsed = parse_answers(project.task, project.options, item_ids, answers)
        now = timezone.now()
        late = assignment.status == Assignment.Status.EXPIRED or now > assignment.expires_at
        check_against_items(project.task, project.options, list(items.values()), parsed, worker.pk)
        # What the features check before anything is written, and what they store with the answers.
        stores = [
            step.check(project, worker, items.values(), answers) for step in extensions.SUBMIT_STEPS if step.check
        ]
        annotations = [
            Annotation(
                item_id=item_id,
                worker=worker,
                assignment=assignment,
                raw=parsed[item_id][0],
                value=parsed[item_id][1],
                reason=parsed[item_id][2],
                seconds_spent=parsed[item_id][3],
                started_at=assignment.created_at,
                late=late,
            )
            for item_id in item_ids
        ]
        gold_results = []
        claims_count = assignment.status == Assignment.Status.OPEN  # an expired page gave its slots back
        for item in items.values():
            item.annotation_count += 1
            if claims_count and not item.is_gold:
                item.active_claims -= 1
            if item.is_gold:
                gold_results.append(is_gold_correct(project, item, parsed[item.id][1]))
            else:
                settle_item(project, item, just_given=parsed[item.id][:2])  # before the answer is stored
        if gold_results:
            record_gold_answers(project, worker, gold_results)
        assignment.status = Assignment.Status.SUBMITTED
        assignment.submitted_at = now
        assignment.late = late
        assignment.submission_digest = digest
        # The answers, the items' counters and the page's state in one statement on PostgreSQL.
        write_together(
            [
                inserting(annotations),
                *_counter_writes(
                    items.values(),
                    ["annotation_count", "active_claims", "target", "status", "aggregate", "claimable", "priority"],
                ),
                updating(assignment, ["status", "submitted_at", "late", "submission_digest"]),
            ]
        )
        for store in stores:
            if store is not None:
                store()
        _delete_draft(assignment)
    announce_progress(project)
    for step in extensions.SUBMIT_STEPS:
        if step.after is not None:
            step.after(project, assignment)
    return SubmitResult(assignment, created=len(item_ids), late=late, items=item_ids)


def _page_to_submit(*, assignment_id: int, worker_id: int):
    """The page's claims, each with the page (its project, the worker's standing in it) and the item, in one
    statement compiled once per process (common/compiled_queries.py): every submit runs it. Page and items
    are locked, the page first (FOR UPDATE OF names it first) and the items in id order, the order that
    expiry and release lock them in too, so no two of them deadlock. Every page has at least one claim."""
    claims = (
        Claim.objects.select_for_update(of=("assignment", "item"))
        .select_related(
            "assignment__project", "item__example"
        )  # some task types check an answer against the example's texts
        .filter(assignment=assignment_id)
        .order_by("item_id")
    )
    return access.with_work_state(claims, worker_id, "assignment__project_id")


def release_page(assignment_id: int, worker) -> Assignment:
    """Give a page back unanswered: its items return to the pool (the worker will not see them again)."""
    with transaction.atomic():
        mine = Assignment.objects.filter(worker=worker, project__in=access.installed_projects())
        assignment = mine.select_for_update().get(pk=assignment_id)
        if assignment.status == Assignment.Status.OPEN:
            _close(assignment, Assignment.Status.RELEASED)
    return assignment


def expire_all_stale(now=None) -> int:
    """Expire every overdue page and every abandoned one, a batch per transaction; what the periodic expiry
    loop runs."""
    total = 0
    while expired := expire_stale(now=now) + release_abandoned(now=now):
        total += expired
    return total


def expire_stale(project: Project | None = None, now=None, limit: int = EXPIRE_BATCH) -> int:
    """Expire open pages past their deadline and return their items to the pool; returns how many."""
    now = now or timezone.now()
    expired = 0
    with transaction.atomic():
        stale = Assignment.objects.select_for_update(skip_locked=True).filter(
            status=Assignment.Status.OPEN, expires_at__lte=now
        )
        if project is not None:
            stale = stale.filter(project=project)
        for assignment in stale.order_by("expires_at")[:limit]:
            _close(assignment, Assignment.Status.EXPIRED)
            expired += 1
    return expired


def _close(assignment: Assignment, status: str) -> None:
    """Close an open page: its claims stop counting, their slots go back to the items."""
    item_ids = list(assignment.claims.filter(item__is_gold=False).values_list("item_id", flat=True))
    items = list(Item.objects.select_for_update().filter(id__in=item_ids).order_by("id"))
    for item in items:
        item.active_claims -= 1
        item.refresh_claimable()
    write_together(_counter_writes(items, ["active_claims", "claimable"]))
    assignment.status = status
    assignment.save(update_fields=["status"])
    _delete_draft(assignment)


def _delete_draft(assignment: Assignment) -> None:
    # Only a page that showed a sign of life can have a draft (saving one notes it): an API client's pages
    # never do, and their submits cost no extra statement.
    if assignment.last_seen_at is not None:
        PageDraft.objects.filter(assignment=assignment).delete()


def locked_open_page(assignment_id: int, worker, now) -> Assignment:
    """The worker's page, locked until the transaction ends, with its project; refused (404) when it is not
    theirs, as if it did not exist, and (409) when it is no longer open."""
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("project")
        .filter(pk=assignment_id, worker=worker)
        .first()
    )
    if assignment is None:
        raise SubmissionError("assignment", "no such page", status=404)
    access.ensure_can_work(assignment.project, worker, new_page=False)
    if assignment.status != Assignment.Status.OPEN or assignment.expires_at <= now:
        raise SubmissionError("assignment", "this page is no longer open", status=409)
    return assignment


def extend_page(assignment_id: int, worker, now=None) -> Assignment:
    """Give an open page more time, once per page: its deadline moves on by the project's page timeout."""
    now = now or timezone.now()
    with transaction.atomic():
        assignment = locked_open_page(assignment_id, worker, now)
        if assignment.extended:
            raise SubmissionError("assignment", "this page has already been given more time once", status=409)
        assignment.expires_at += timedelta(minutes=assignment.project.claim_timeout_minutes)
        assignment.extended = True
        assignment.last_seen_at = now
        assignment.save(update_fields=["expires_at", "extended", "last_seen_at"])
    return assignment


def abandon_minutes(project: Project) -> int:
    return (
        project.options.get("abandon_after_minutes")
        or settings_schema(project.task).get("abandon_after_minutes").default
    )


def note_seen(assignment: Assignment, now=None) -> None:
    """The page was shown in a browser: from now on it must keep showing signs of life (draft saves)."""
    assignment.last_seen_at = now or timezone.now()
    Assignment.objects.filter(pk=assignment.pk).update(last_seen_at=assignment.last_seen_at)


def release_abandoned(now=None, project: Project | None = None, limit: int = EXPIRE_BATCH) -> int:
    """Expire open pages shown in a browser that then sent no sign of life (draft save or heartbeat) for the
    project's abandon_after_minutes, long before their deadline: a worker who walked away does not hold
    items for the whole page timeout. Pages taken through the API send no heartbeats and keep their
    deadline. Like any expired page, one submitted later is still kept (marked late). Returns how many
    pages were released."""
    now = now or timezone.now()
    projects = (
        [project]
        if project is not None
        else Project.objects.filter(assignments__status=Assignment.Status.OPEN).distinct()
    )
    released = 0
    for each in projects:
        cutoff = now - timedelta(minutes=abandon_minutes(each))
        with transaction.atomic():
            silent = Assignment.objects.select_for_update(skip_locked=True).filter(
                project=each, status=Assignment.Status.OPEN, last_seen_at__lte=cutoff
            )
            for assignment in silent.order_by("pk")[:limit]:
                _close(assignment, Assignment.Status.EXPIRED)
                released += 1
    return released
