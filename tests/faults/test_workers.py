"""Job health without a live worker process: a running job of a worker that stopped beating ends failed,
and pages that show jobs look for dead workers at most once a beat."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import workers
from jobs.models import Job, WorkerHeartbeat

pytestmark = pytest.mark.django_db


def beat(name: str, seconds_ago: int) -> None:
    seen = timezone.now() - timedelta(seconds=seconds_ago)
    WorkerHeartbeat.objects.create(
        name=name, host=name.split(":")[0], pid=1, queues=["default"], backend="rq", started_at=seen, seen_at=seen
    )


def test_a_running_job_of_a_silent_worker_fails_and_a_live_workers_job_runs_on():
    beat("a:1", seconds_ago=workers.DEAD_AFTER.seconds + 1)
    beat("b:2", seconds_ago=1)
    orphan = Job.objects.create(kind="import", status=Job.Status.RUNNING, worker="a:1", attempts=1)
    running = Job.objects.create(kind="import", status=Job.Status.RUNNING, worker="b:2", attempts=1)

    assert workers.reap_dead() == 1

    orphan.refresh_from_db()
    running.refresh_from_db()
    assert orphan.status == Job.Status.FAILED and "a:1" in orphan.error and "stopped" in orphan.error
    assert running.status == Job.Status.RUNNING
    assert list(WorkerHeartbeat.objects.values_list("name", flat=True)) == ["b:2"]


def test_a_repeatable_job_of_a_silent_worker_goes_back_to_its_queue_until_its_runs_are_spent(settings):
    settings.JOB_MAX_ATTEMPTS = 2
    beat("a:1", seconds_ago=workers.DEAD_AFTER.seconds + 1)
    first = Job.objects.create(kind="export", status=Job.Status.RUNNING, worker="a:1", attempts=1, message_id="m1")
    last = Job.objects.create(kind="export", status=Job.Status.RUNNING, worker="a:1", attempts=2)

    assert workers.reap_dead() == 2

    first.refresh_from_db()
    last.refresh_from_db()
    # Back in the queue with its old message forgotten (jobs/durability.py sends a new one), and says why.
    assert (first.status, first.worker, first.message_id, first.message_seen_at) == (Job.Status.QUEUED, "", "", None)
    assert "run 2 of 2" in first.log and "a:1" in first.log
    assert last.status == Job.Status.FAILED and "a:1" in last.error


def test_looking_at_jobs_reaps_at_most_once_a_beat(monkeypatch):
    calls = []
    clock = [1000.0]
    monkeypatch.setattr(workers, "reap_dead", lambda: calls.append(clock[0]))
    monkeypatch.setattr(workers.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(workers, "_last_look", -float(workers.BEAT_SECONDS))

    for step in (0.0, 1.0, workers.BEAT_SECONDS - 0.5, workers.BEAT_SECONDS + 0.5, 2 * workers.BEAT_SECONDS):
        clock[0] = 1000.0 + step
        workers.reap_dead_when_looked_at()

    assert calls == [1000.0, 1000.0 + workers.BEAT_SECONDS + 0.5]
