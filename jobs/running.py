"""What a task worker does with a job, whatever its kind.

execute            claim the job atomically (a job delivered twice runs once), run its kind in this host's
                   scratch folder beside its watch, publish the file it wrote to the storage, record the result
                   or the failure
progress_recorder  the progress callback a kind reports to (and through which a cancel or a stop reaches it)
Watch              the thread beside a running job: stops it at its time limit, and ends the process doing it
                   when its worker is gone or the job was ended for it (so no orphan keeps CPU, memory or a GPU)
output_file        where a kind writes its output; published only when the job succeeds
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import threading
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection
from django.db.models import F
from django.utils import timezone
from django.utils.text import get_valid_filename

from jobs import files, workers
from jobs.kinds import Cancelled, JobError, Stopped, get_kind
from jobs.models import Job, WorkerHeartbeat

logger = logging.getLogger(__name__)
PROGRESS_WRITE_INTERVAL = 0.5  # seconds between progress writes to the database
WATCH_SECONDS = 1.0  # how often the watch looks at its worker and the clock
STATE_CHECK_SECONDS = 5.0  # how often it reads the job's row (one query)
STOP_GRACE_SECONDS = 10.0  # a job told to stop has this long to reach its next step before its process is killed


def scratch_folder(job: Job) -> Path:
    """This host's working folder for the job (local copies, what it is writing); removed when the job ends."""
    return files.scratch("jobs", str(job.pk))


def output_file(job: Job, name: str) -> Path:
    """A local path for the file (or folder) the job writes; published to the storage when the job succeeds."""
    path = scratch_folder(job) / "output" / get_valid_filename(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    job.pending_output = path
    return path


def set_output(job: Job, key: str) -> None:
    """Record a file already in the storage as the job's output (a trained model's archive)."""
    job.pending_output = None
    job.output = key
    Job.objects.filter(pk=job.pk).update(output=key)


def _publish_output(job: Job) -> None:
    path = getattr(job, "pending_output", None)
    if path is None or not path.exists():
        return
    if path.is_dir():  # a folder (a trained model) is kept as one zip archive
        archive = path.with_name(path.name + ".zip")
        zip_folder(path, archive)
        path = archive
    set_output(job, files.publish(path, f"{job.storage_prefix}/output/{path.name}"))


def zip_folder(folder: Path, archive: Path) -> Path:
    """A folder as a zip archive, its files in name order (the same folder gives the same archive)."""
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped_folder:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                info = zipfile.ZipInfo(str(path.relative_to(folder)), date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                with path.open("rb") as source, zipped_folder.open(info, "w") as target:
                    shutil.copyfileobj(source, target, files.CHUNK)
    return archive


def reconnecting(write: Callable[[], object]):
    """Run a database call, once more on a fresh connection if the connection dropped (a database restart,
    pg_terminate_backend): a blip must not end a training hours in."""
    try:
        return write()
    except (OperationalError, InterfaceError):
        connection.close()
        time.sleep(1)
        return write()


def progress_recorder(job: Job, watch: Watch | None = None):
    """A progress(done, total) callback: writes progress at most twice a second (and at the end), logs each
    tenth of the way, raises Cancelled once someone asked the job to stop, and Stopped once the job must end
    for a reason already recorded (its time limit, its worker taken for dead)."""
    last_write, last_tenth = 0.0, -1

    def progress(done: int, total: int) -> None:
        nonlocal last_write, last_tenth
        if watch is not None and watch.stop_reason:
            raise Stopped(watch.stop_reason)
        now = time.monotonic()
        if now - last_write < PROGRESS_WRITE_INTERVAL and done < total:
            return
        last_write = now
        reconnecting(lambda: Job.objects.filter(pk=job.pk).update(done=done, total=total))
        tenth = 10 * done // total if total else 0
        if tenth > last_tenth:
            last_tenth = tenth
            reconnecting(lambda: job.write_log(f"{done} of {total} steps"))
        status, cancel_requested = reconnecting(
            lambda: Job.objects.values_list("status", "cancel_requested").get(pk=job.pk)
        )
        if status != Job.Status.RUNNING:
            raise Stopped(f"the job is {status} already")
        if cancel_requested:
            raise Cancelled()

    return progress


class Watch(threading.Thread):
    """Beside a running job, in the process doing it. Once the job passes its time limit, the watch records
    that it failed for it; once the job was ended for it (failed for a dead worker, stopped at its limit), the
    job's next progress step raises Stopped. In a process of its own (RQ forks one per job), the watch also ends
    that process, with whatever it started, when the job has not reached a step STOP_GRACE_SECONDS later, and
    at once when its worker's process is gone: nobody would read what it does."""

    def __init__(self, job: Job):
        super().__init__(name=f"watch-job-{job.pk}", daemon=True)
        self.job = job
        # A process of its own: forked by a worker (RQ), not the worker itself (the database worker, a command).
        self.forked = workers.worker_pid is not None and os.getpid() != workers.worker_pid
        self.parent = os.getppid()
        self.deadline = time.monotonic() + job.time_limit if job.time_limit else None
        self.stop_reason = ""
        self.finished = threading.Event()

    def run(self) -> None:
        stop_at, last_check = None, time.monotonic()
        try:
            while not self.finished.wait(WATCH_SECONDS):
                now = time.monotonic()
                if self.forked and os.getppid() != self.parent:
                    self.worker_gone()
                if not self.stop_reason and self.deadline is not None and now >= self.deadline:
                    workers.fail(self.job, workers.time_limit_reason(self.job))
                    self.stop_reason = "time limit"
                if not self.stop_reason and now - last_check >= STATE_CHECK_SECONDS:
                    last_check = now
                    status = Job.objects.values_list("status", flat=True).get(pk=self.job.pk)
                    if status != Job.Status.RUNNING:
                        self.stop_reason = f"the job is {status} already"
                if self.stop_reason and self.forked:
                    stop_at = stop_at or now + STOP_GRACE_SECONDS
                    if now >= stop_at:
                        self.end_process()
        except Exception:  # the database is away: the worker's heartbeat still looks after the job
            logger.exception("the watch of job %s stopped", self.job.pk)
        finally:
            connection.close()

    def worker_gone(self) -> None:
        try:
            workers.end_after_fault(self.job, f"its task worker ({self.job.worker}) ended while it ran")
            # Its heartbeat row would say it lives for DEAD_AFTER more: the pages and /readyz should know now.
            WorkerHeartbeat.objects.filter(name=self.job.worker).delete()
        finally:
            self.end_process()

    def end_process(self) -> None:
        shutil.rmtree(scratch_folder(self.job), ignore_errors=True)
        logger.warning("job %s: ending its process (%s)", self.job.pk, self.stop_reason or "worker gone")
        if os.getpgrp() == os.getpid():  # RQ's work process leads its own group: what it started goes too
            os.killpg(os.getpid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)


def execute(job_id: int) -> Job:
    """Run a queued job. The claim is one UPDATE on its status, so of two workers given the same job only
    one runs it; a job cancelled before it started is marked so and not run."""
    Job.objects.filter(pk=job_id, status=Job.Status.QUEUED, cancel_requested=True).update(
        status=Job.Status.CANCELLED, finished_at=timezone.now()
    )
    claimed = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING,
        started_at=timezone.now(),
        finished_at=None,
        worker=workers.current_worker,
        runner_pid=os.getpid(),
        attempts=F("attempts") + 1,
    )
    job = Job.objects.get(pk=job_id)
    if not claimed:
        return job
    run = f" (run {job.attempts} of {settings.JOB_MAX_ATTEMPTS})" if job.attempts > 1 else ""
    job.write_log(f"started: {job.title}{run}" + (f" on {workers.current_worker}" if workers.current_worker else ""))
    workers.log_state(job, Job.Status.RUNNING)
    watch = Watch(job)
    watch.start()
    try:
        result = get_kind(job.kind).run(job, progress_recorder(job, watch))
        _publish_output(job)
    except Cancelled:
        return _finish(job, Job.Status.CANCELLED)
    except Stopped:
        job.refresh_from_db()  # its row already says how it ended
        return job
    except (OperationalError, InterfaceError) as error:
        connection.close()  # the next statement opens a fresh one
        reason = f"its database connection was lost: {str(error).strip() or type(error).__name__}"
        reconnecting(lambda: workers.end_after_fault(job, reason))
        job.refresh_from_db()
        return job
    except Exception as error:
        if not isinstance(error, (JobError, OSError)):
            logger.exception("job %s (%s) failed", job.pk, job.kind)
        return _finish(job, Job.Status.FAILED, error=describe_error(error, job))
    finally:
        watch.finished.set()
        shutil.rmtree(scratch_folder(job), ignore_errors=True)
    return _finish(job, Job.Status.DONE, result=without_host_paths(result))


def _finish(job: Job, status: str, result=None, error: str = "") -> Job:
    """Record how the job ended, unless it was already ended for it (its worker was taken for dead, its time
    limit passed, or a cancel stopped it): then that stands."""
    values = {"status": status, "result": result, "error": error, "finished_at": timezone.now()}
    running = Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING)
    if status == Job.Status.DONE:
        values["done"] = F("total")
    if reconnecting(lambda: running.update(**values)):
        job.write_log(f"{status}{': ' + error if error else ''}")
        workers.log_state(job, status, error)
    job.refresh_from_db()
    return job


def without_host_paths(result):
    """A job's result with every path on this host (its scratch folder, NLI_STUDIO_VAR) cut to the file's
    name: the result is shown to people on other hosts, who have no use for a worker's folders."""
    if isinstance(result, dict):
        return {key: without_host_paths(value) for key, value in result.items()}
    if isinstance(result, list):
        return [without_host_paths(value) for value in result]
    if isinstance(result, str) and result.startswith((str(settings.SCRATCH_DIR), str(settings.VAR_DIR))):
        return Path(result).name
    return result


def describe_error(error: Exception, job: Job) -> str:
    """The error as the owner should read it: stored input paths shown as the uploaded files' names."""
    if isinstance(error, files.StorageError):
        message = str(error)  # names the storage and what it answered
    elif isinstance(error, OSError) and error.filename:
        message = f"{Path(error.filename).name}: {error.strerror}"
    elif isinstance(error, ValueError) and type(error) is not ValueError:
        message = str(error)  # the project's own input errors (RowError, JobError, ...) speak for themselves
    else:
        message = f"{type(error).__name__}: {error}"
    scratch = scratch_folder(job)
    for entry in job.inputs:
        # Where the input may be named: the storage's folder on this host, or the copy Job.input_path fetched.
        for path in (files.local_path(entry["path"]), scratch / "input" / entry["role"] / entry["name"]):
            if path is not None:
                message = message.replace(str(path), entry["name"])
    return message.replace(f"{scratch}/", "")
