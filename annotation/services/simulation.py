"""Simulated answers for the demo studies, so that a newcomer's first run shows every page filled in: the
dashboard's figures, the worker table, the report's agreement and plots, the adjudication queue, the exports.

The answers come from simulated accounts (SIMULATED_GROUP, unusable passwords: nobody logs in as them), each
answer drawn by the task type (TaskType.simulated_answer) with a seeded random generator, and settled by the
study's own redundancy rule. Only the demo studies get them, and only their last items: the others stay
open for the people trying the demo. Pages and the exports say the answers are simulated.
"""

from __future__ import annotations

import random
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from annotation.models import Annotation, Assignment, Claim, Item, Project
from annotation.services import instrument
from annotation.services.redundancy import settle_item
from core.roles import WORKER, grant_role

SIMULATED_GROUP = "simulated"
SIMULATED_WORKERS = 4


def simulated_workers(count: int = SIMULATED_WORKERS) -> list:
    """The simulated accounts, made on first use."""
    group, _ = Group.objects.get_or_create(name=SIMULATED_GROUP)
    workers = []
    for number in range(1, count + 1):
        user, created = get_user_model().objects.get_or_create(username=f"simulated-worker-{number}")
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
            grant_role(user, WORKER)
            user.groups.add(group)
        workers.append(user)
    return workers


def simulated_worker_ids() -> set[int]:
    return set(get_user_model().objects.filter(groups__name=SIMULATED_GROUP).values_list("pk", flat=True))


def has_simulated_answers(project: Project) -> bool:
    """The few simulated accounts first, then their answers by the worker index: joined the other way round,
    a study of real workers had every answer scanned (0.45 s of the dashboard at 1,000,000 answers)."""
    simulated = simulated_worker_ids()
    return bool(simulated) and Annotation.objects.filter(worker_id__in=simulated, item__project=project).exists()


def simulate(project: Project, items: list[Item], seed: int) -> int:
    """Answer `items` with the simulated workers, as many per item as the redundancy rule asks (up to the
    workers there are), on one submitted page per worker; returns the answers stored."""
    rng = random.Random(seed)
    workers = simulated_workers()
    task, options = project.task, project.options
    now = timezone.now()
    version = instrument.current_id(project)
    pages: dict[int, Assignment] = {}

    def page_of(worker) -> Assignment:  # one submitted page per worker, made when they first answer
        if worker.pk not in pages:
            pages[worker.pk] = Assignment.objects.create(
                project=project,
                worker=worker,
                status=Assignment.Status.SUBMITTED,
                expires_at=now,
                submitted_at=now,
                instrument_id=version,
            )
        return pages[worker.pk]

    stored = 0
    for position, item in enumerate(items):
        item = Item.objects.select_related("example", "atom").get(pk=item.pk)
        for number, worker in enumerate(workers, start=1):
            if item.status != Item.Status.OPEN or item.annotation_count >= item.target:
                break
            raw, value = task.parse_answer({"value": task.simulated_answer(item, number, rng, options)}, options)
            page = page_of(worker)
            Claim.objects.create(assignment=page, item=item, worker=worker, position=position)
            Annotation.objects.create(
                item=item,
                worker=worker,
                assignment=page,
                raw=raw,
                value=value,
                seconds_spent=round(rng.uniform(3, 25), 1),
                started_at=now - timedelta(minutes=rng.randint(2, 30)),
            )
            item.annotation_count += 1
            settle_item(project, item)
            stored += 1
        item.refresh_claimable()
        item.save(update_fields=["annotation_count", "target", "status", "aggregate", "claimable", "priority"])
    return stored
