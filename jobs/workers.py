"""Task workers you can see: each writes a heartbeat row every few seconds naming its host, process and queues.

From those rows:
- a queued job whose queue no live worker takes says so at once ("no worker listens on queue gpu ...");
- a running job whose worker stopped beating (killed, host lost) is marked failed within DEAD_AFTER seconds
  plus one beat of any live worker or one look at the job (documented in docs/deploying.md);
- a job whose own process died while its worker lives (RQ runs each job in a forked process) is marked failed
  at the worker's next beat, and a cancelled job that does not reach its next progress step is stopped;
- a job ended by such a transient fault goes back to its queue instead when its kind is safe to repeat
  (end_after_fault), up to JOB_MAX_ATTEMPTS runs.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from jobs.kinds import KINDS, describe_seconds
from jobs.models import Job, WorkerHeartbeat

logger = logging.getLogger(__name__)
jobs_logger = logging.getLogger("nli.jobs")
BEAT_SECONDS = 5
DEAD_AFTER = timedelta(seconds=30)
CANCEL_GRACE_BEATS = 2  # beats a cancelled job has to reach its next progress step before it is killed

# The worker this process belongs to, and its process id (set by run_worker; inherited by the processes RQ forks
# for each job, which so know they are not the worker itself).
current_worker = ""
worker_pid: int | None = None
_on_start: list[Callable[[], None]] = []


def on_worker_start(hook: Callable[[], None]) -> None:
    """Run `hook` in every task worker as it starts (models_backend lists the checkpoints of the host's folder)."""
    _on_start.append(hook)


def worker_name() -> str:
    return f"{settings.HOST_NAME}:{os.getpid()}"


def live_workers():
    return WorkerHeartbeat.objects.filter(seen_at__gte=timezone.now() - DEAD_AFTER)


def listening(queue: str) -> bool:
    return any(queue in worker.queues or "*" in worker.queues for worker in live_workers())


def waiting_reason(job: Job) -> str:
    """Why a queued job has not started, when no live worker takes its queue; "" otherwise."""
    if job.status != Job.Status.QUEUED or listening(job.queue):
        return ""
    where = "a GPU host" if job.queue == "gpu" else "a worker host (bin/serve starts one unless TASK_WORKERS=0)"
    return f"no worker listens on queue {job.queue}: start bin/worker {job.queue} on {where}"


def reap_dead(now=None) -> int:
    """Fail the running jobs of workers that stopped beating, and forget those workers; how many jobs failed."""
    now = now or timezone.now()
    dead = WorkerHeartbeat.objects.filter(seen_at__lt=now - DEAD_AFTER)
    dead_names = list(dead.values_list("name", flat=True))
    live_names = WorkerHeartbeat.objects.filter(seen_at__gte=now - DEAD_AFTER).values_list("name", flat=True)
    orphans = Job.objects.filter(status=Job.Status.RUNNING).exclude(worker="").exclude(worker__in=list(live_names))
    failed = 0
    for job in orphans:
        failed += end_after_fault(
            job, f"its task worker ({job.worker}) stopped: no sign of life for {DEAD_AFTER.seconds} s"
        )
    if dead_names:
        WorkerHeartbeat.objects.filter(name__in=dead_names, seen_at__lt=now - DEAD_AFTER).delete()
    return failed


_last_look = -float(BEAT_SECONDS)


def reap_dead_when_looked_at() -> None:
    """reap_dead for a page or API call that shows jobs: at most once a beat per process, so that a page
    polled by many browsers adds no more queries than a worker's beat does."""
    global _last_look
    if time.monotonic() - _last_look >= BEAT_SECONDS:
        _last_look = time.monotonic()
        reap_dead()


def end_after_fault(job: Job, reason: str) -> int:
    """End a running job that a fault outside it stopped (its worker or process died, its database connection
    dropped): back to its queue when its kind is safe to repeat and it has runs left, else failed with the
    reason. Only while the same worker still holds it; 1 if this call ended it."""
    kind = KINDS.get(job.kind)
    held = Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, worker=job.worker)
    if kind is not None and kind.repeatable and job.attempts < settings.JOB_MAX_ATTEMPTS:
        # No message is sent from here: jobs/durability.py sends one for a queued job whose message is gone.
        changed = held.update(
            status=Job.Status.QUEUED, worker="", runner_pid=None, done=0, message_id="", message_seen_at=None
        )
        if changed:
            job.write_log(
                f"back to queue {job.queue} for run {job.attempts + 1} of {settings.JOB_MAX_ATTEMPTS}: {reason}"
            )
            log_state(job, Job.Status.QUEUED, reason)
        return changed
    return fail(job, reason, held)


def fail(job: Job, reason: str, held=None) -> int:
    """Mark a running job failed with the reason (only while it is running, and held by `held`'s worker)."""
    held = held if held is not None else Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING)
    changed = held.update(status=Job.Status.FAILED, error=reason, finished_at=timezone.now())
    if changed:
        job.write_log(f"failed: {reason}")
        log_state(job, Job.Status.FAILED, reason)
    return changed


def log_state(job: Job, status: str, detail: str = "") -> None:
    """One log line per change of a job's state (JSON with LOG_FORMAT=json: docs/deploying.md)."""
    jobs_logger.info(
        "job %s (%s) %s%s",
        job.pk,
        job.kind,
        status,
        f": {detail}" if detail else "",
        extra={"job_id": job.pk, "kind": job.kind, "status": status, "queue": job.queue, "detail": detail},
    )


def time_limit_reason(job: Job) -> str:
    return (
        f"stopped at its time limit of {describe_seconds(job.time_limit or 0)} "
        f"(raise it with JOB_TIME_LIMITS={job.kind}=SECONDS)"
    )


def _kill_group(pid: int) -> None:
    """Kill a job's process and what it started: RQ's work process leads a process group of its own."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a forked job process that ended but was not yet reaped by its parent is a zombie: gone
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


class Heartbeat(threading.Thread):
    """The worker's heartbeat: refreshes its row, looks after the jobs its own processes run, reaps dead workers."""

    def __init__(self, queues: list[str], backend: str, chores: tuple[Callable[[], object], ...] = ()):
        super().__init__(name="heartbeat", daemon=True)
        self.queues, self.backend, self.chores = queues, backend, chores
        self.name_ = worker_name()
        self.stopping = threading.Event()
        self.cancel_seen: dict[int, int] = {}

    def register(self) -> None:
        now = timezone.now()
        WorkerHeartbeat.objects.update_or_create(
            name=self.name_,
            defaults={
                "host": settings.HOST_NAME,
                "pid": os.getpid(),
                "queues": self.queues,
                "backend": self.backend,
                "started_at": now,
                "seen_at": now,
            },
        )

    def run(self) -> None:
        while True:
            try:
                self.beat()
            except Exception:  # a database hiccup must not end the heartbeat: the next beat tries again
                logger.exception("heartbeat of %s failed", self.name_)
                connection.close()  # a new connection next time
            if self.stopping.wait(BEAT_SECONDS):
                break
        connection.close()

    def beat(self) -> None:
        if not WorkerHeartbeat.objects.filter(name=self.name_).update(seen_at=timezone.now()):
            self.register()  # reaped while this host was cut off: say so again
        self.look_after_own_jobs()
        reap_dead()
        for chore in self.chores:
            chore()

    def look_after_own_jobs(self) -> None:
        mine = Job.objects.filter(status=Job.Status.RUNNING, worker=self.name_).exclude(runner_pid=os.getpid())
        now = timezone.now()
        for job in mine.exclude(runner_pid=None):
            if not _alive(job.runner_pid):
                end_after_fault(job, f"the process running it ({job.runner_pid}) ended without finishing it")
            elif job.cancel_requested:
                seen = self.cancel_seen[job.pk] = self.cancel_seen.get(job.pk, 0) + 1
                if seen > CANCEL_GRACE_BEATS:
                    self.stop_cancelled(job)
            elif (
                job.time_limit
                and job.started_at
                and (now - job.started_at).total_seconds() > job.time_limit + (CANCEL_GRACE_BEATS * BEAT_SECONDS)
            ):  # its own watch did not stop it (a process stuck where no Python runs)
                _kill_group(job.runner_pid)
                fail(job, time_limit_reason(job))

    def stop_cancelled(self, job: Job) -> None:
        _kill_group(job.runner_pid)
        if Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(
            status=Job.Status.CANCELLED, finished_at=timezone.now()
        ):
            job.write_log("cancelled: stopped by its worker (it did not reach its next step in time)")
            log_state(job, Job.Status.CANCELLED)
        self.cancel_seen.pop(job.pk, None)

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=BEAT_SECONDS * 2)
        WorkerHeartbeat.objects.filter(name=self.name_).delete()


def start_heartbeat(queues: list[str], backend: str, chores: tuple[Callable[[], object], ...] = ()) -> Heartbeat:
    """Register this process as a worker of `queues`, run the start hooks, and start beating; `chores` run at
    every beat (run_worker gives jobs.durability.requeue_lost)."""
    global current_worker, worker_pid
    for hook in _on_start:  # first: a slow hook (reading checkpoints) must not age the heartbeat
        try:
            hook()
        except Exception:
            logger.exception("worker start hook %s failed", hook)
    heartbeat = Heartbeat(queues, backend, chores)
    heartbeat.register()
    current_worker, worker_pid = heartbeat.name_, os.getpid()
    heartbeat.start()
    return heartbeat
