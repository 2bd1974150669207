"""What a task worker does with a job, whatever its kind.

execute            claim the job atomically (a job delivered twice runs once), run its kind in this host's
                   scratch folder, publish the file it wrote to the storage, record the result or the failure
progress_recorder  the progress callback a kind reports to (and through which a cancel reaches it)
output_file        where a kind writes its output; published only when the job succeeds
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import zipfile
from pathlib import Path

from django.db.models import F
from django.utils import timezone
from django.utils.text import get_valid_filename

from jobs import files, workers
from jobs.kinds import Cancelled, JobError, get_kind
from jobs.models import Job

logger = logging.getLogger(__name__)
PROGRESS_WRITE_INTERVAL = 0.5  # seconds between progress writes to the database


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


def progress_recorder(job: Job):
    """A progress(done, total) callback: writes progress at most twice a second (and at the end), logs each
    tenth of the way, and raises Cancelled once someone asked the job to stop."""
    last_write, last_tenth = 0.0, -1

    def progress(done: int, total: int) -> None:
        nonlocal last_write, last_tenth
        now = time.monotonic()
        if now - last_write < PROGRESS_WRITE_INTERVAL and done < total:
            return
        last_write = now
        Job.objects.filter(pk=job.pk).update(done=done, total=total)
        tenth = 10 * done // total if total else 0
        if tenth > last_tenth:
            last_tenth = tenth
            job.write_log(f"{done} of {total} steps")
        if Job.objects.filter(pk=job.pk, cancel_requested=True).exists():
            raise Cancelled()

    return progress


def execute(job_id: int) -> Job:
    """Run a queued job. The claim is one UPDATE on its status, so of two workers given the same job only
    one runs it; a job cancelled before it started is marked so and not run."""
    Job.objects.filter(pk=job_id, status=Job.Status.QUEUED, cancel_requested=True).update(
        status=Job.Status.CANCELLED, finished_at=timezone.now()
    )
    claimed = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING, started_at=timezone.now(), worker=workers.current_worker, runner_pid=os.getpid()
    )
    job = Job.objects.get(pk=job_id)
    if not claimed:
        return job
    job.write_log(f"started: {job.title}" + (f" on {workers.current_worker}" if workers.current_worker else ""))
    try:
        result = get_kind(job.kind).run(job, progress_recorder(job))
        _publish_output(job)
    except Cancelled:
        return _finish(job, Job.Status.CANCELLED)
    except Exception as error:
        if not isinstance(error, (JobError, OSError)):
            logger.exception("job %s (%s) failed", job.pk, job.kind)
        return _finish(job, Job.Status.FAILED, error=describe_error(error, job))
    finally:
        shutil.rmtree(scratch_folder(job), ignore_errors=True)
    return _finish(job, Job.Status.DONE, result=result)


def _finish(job: Job, status: str, result=None, error: str = "") -> Job:
    """Record how the job ended, unless it was already ended for it (its worker was taken for dead, or a
    cancel stopped it): then that stands."""
    values = {"status": status, "result": result, "error": error, "finished_at": timezone.now()}
    running = Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING)
    if status == Job.Status.DONE:
        values["done"] = F("total")
    if running.update(**values):
        job.write_log(f"{status}{': ' + error if error else ''}")
    job.refresh_from_db()
    return job


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
