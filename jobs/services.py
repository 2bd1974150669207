"""Start, run, follow and cancel jobs. Every background run goes through here, whatever its kind.

start_job   store the job and copies of its input files (with sizes and sha256) in the default storage, then
            queue it (or run it here and now with background=False, as the command line does with --save)
execute     what a task worker does: claim the job atomically (a job delivered twice runs once), run its
            kind, publish the file it wrote to the storage, record the result or the failure
cancel      a queued job never starts; a running one stops at its next progress step
log         a line in the job's log (its page shows the log as the job runs)
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import zipfile
from pathlib import Path

from django.conf import settings
from django.db.models import F, TextField, Value
from django.db.models.functions import Concat
from django.utils import timezone
from django.utils.text import get_valid_filename

from jobs import files, workers
from jobs.kinds import Cancelled, get_kind
from jobs.models import Job

logger = logging.getLogger(__name__)
PROGRESS_WRITE_INTERVAL = 0.5  # seconds between progress writes to the database
CHUNK = 1 << 20


class JobError(ValueError):
    """A job that cannot be started as asked; nothing was stored. Also the base of the errors a kind
    raises for bad input, whose message is shown to the job's owner as it is."""


def start_job(
    kind: str,
    params: dict,
    user=None,
    *,
    project=None,
    inputs: dict | None = None,
    queue: str = "default",
    background: bool = True,
) -> Job:
    """Store a job and queue it. inputs: role -> a path on disk or an uploaded file (anything with `.name`
    and `.chunks()`); each is copied into the job's folder, so the job can be checked and run again later."""
    get_kind(kind)
    for role, source in (inputs or {}).items():
        if not hasattr(source, "chunks") and not Path(source).is_file():
            raise JobError(f"{source}: no such file ({role})")
    job = Job.objects.create(
        kind=kind,
        params=params,
        queue=queue,
        project=project,
        created_by=user if user is not None and user.is_authenticated else None,
    )
    # Copied outside a transaction: a large upload must not hold the database's write lock.
    try:
        job.inputs = [store_input(job, role, source) for role, source in (inputs or {}).items()]
    except files.StorageError as error:
        job.delete()
        raise JobError(f"the job was not started: {error}") from None
    except BaseException:
        job.delete()  # also removes the partial copies
        raise
    job.save(update_fields=["inputs"])
    if background:
        from jobs.tasks import run_job

        run_job.using(queue_name=queue).enqueue(job.pk)
    else:
        execute(job.pk)
    job.refresh_from_db()
    return job


def store_input(job: Job, role: str, source) -> dict:
    """Copy one input into the job's storage folder, hashing it on the way; its entry for `job.inputs`."""
    name = get_valid_filename(Path(source.name if hasattr(source, "chunks") else source).name) or role
    key = f"{job.storage_prefix}/input/{role}/{name}"
    size, sha256 = files.save_chunks(key, _chunks(source))
    return {"role": role, "name": name, "size": size, "sha256": sha256, "path": key}


def _chunks(source):
    if hasattr(source, "chunks"):
        source.seek(0)
        yield from source.chunks()
        return
    with open(source, "rb") as handle:
        while chunk := handle.read(files.CHUNK):
            yield chunk


def remove_stale_files(max_age_days: float, now=None) -> int:
    """Remove the input copies and output files of jobs that finished more than `max_age_days` ago (their
    settings, result and log stay); returns how many jobs lost their files. The expiry loop runs it."""
    cutoff = (now or timezone.now()) - timezone.timedelta(days=max_age_days)
    cleared = 0
    for job in Job.objects.filter(status__in=Job.FINISHED, finished_at__lt=cutoff).exclude(inputs=[], output=""):
        files.delete_tree(job.storage_prefix)
        Job.objects.filter(pk=job.pk).update(output="", inputs=[])
        log(job, f"input and output files removed after {max_age_days:g} days (JOB_FILES_MAX_AGE_DAYS)")
        cleared += 1
    return cleared


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


def log(job: Job, message: str) -> None:
    """Append a timestamped line to the job's log (in the database: the page may be served by another host)."""
    Job.objects.filter(pk=job.pk).update(
        log=Concat(F("log"), Value(f"{timezone.now():%H:%M:%S} {message}\n"), output_field=TextField())
    )


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
            log(job, f"{done} of {total} steps")
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
    log(job, f"started: {job.title}" + (f" on {workers.current_worker}" if workers.current_worker else ""))
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
        log(job, f"{status}{': ' + error if error else ''}")
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
    for folder in (Path(settings.MEDIA_ROOT), scratch_folder(job) / "input"):
        for entry in job.inputs:
            message = message.replace(str(folder / entry["path"]), entry["name"])
            message = message.replace(str(folder / entry["role"] / entry["name"]), entry["name"])
    return message.replace(str(scratch_folder(job)) + "/", "")


def cancel(job: Job) -> Job:
    """Ask a job to stop: a queued job will not start, a running one stops at its next progress step."""
    if not job.finished:
        Job.objects.filter(pk=job.pk).update(cancel_requested=True)
        job.refresh_from_db()
    return job
