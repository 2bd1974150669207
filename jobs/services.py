"""Start, follow and cancel jobs. Every background run goes through here, whatever its kind.

start_job   store the job, with its time limit, and copies of its input files (with sizes and sha256) in the
            default storage, then queue it for a task worker (jobs/durability.py sends it; jobs/running.py runs
            it) or run it here and now with background=False, as the command line does with --save
cancel      a queued job is cancelled at once and never starts; a running one stops at its next progress step
"""

from __future__ import annotations

from pathlib import Path

from django.utils import timezone
from django.utils.text import get_valid_filename

from jobs import durability, files, running, workers
from jobs.kinds import JobError, check_queue, check_time_limit, get_kind, time_limit_of
from jobs.models import Job

__all__ = ["JobError", "cancel", "remove_stale_files", "start_job", "store_input"]


def start_job(
    kind: str,
    params: dict,
    user=None,
    *,
    project=None,
    inputs: dict | None = None,
    queue: str = "default",
    background: bool = True,
    time_limit: int | None = None,
) -> Job:
    """Store a job and queue it. inputs: role -> a path on disk or an uploaded file (anything with `.name`
    and `.chunks()`); each is copied into the job's folder, so the job can be checked and run again later.
    time_limit: seconds, instead of the kind's limit (JOB_TIME_LIMITS or its own)."""
    try:
        get_kind(kind)
    except ValueError as error:
        raise JobError(str(error)) from None
    check_queue(queue)
    if time_limit is not None:
        check_time_limit(time_limit, "time_limit")
    limit = int(time_limit) if time_limit is not None else time_limit_of(kind)
    for role, source in (inputs or {}).items():
        if not hasattr(source, "chunks") and not Path(source).is_file():
            raise JobError(f"{source}: no such file ({role})")
    job = Job.objects.create(
        kind=kind,
        params=params,
        queue=queue,
        time_limit=limit,
        project=project,
        created_by=user if user is not None and user.is_authenticated else None,
    )
    # Copied outside a transaction: a large upload must not hold the database's write lock.
    try:
        job.inputs = [store_input(job, role, source) for role, source in (inputs or {}).items()]
    except files.StorageError as error:  # a 503 where it reaches a request: the storage, not the input
        job.delete()
        raise files.StorageError(f"the job was not started: {error}") from None
    except BaseException:
        job.delete()  # also removes the partial copies
        raise
    job.save(update_fields=["inputs"])
    workers.log_state(job, Job.Status.QUEUED)
    if background:
        durability.send(job)
    else:
        running.execute(job.pk)
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
        job.write_log(f"input and output files removed after {max_age_days:g} days (JOB_FILES_MAX_AGE_DAYS)")
        cleared += 1
    return cleared


def cancel(job: Job) -> Job:
    """Stop a job: a queued one is cancelled at once (whether or not its queue still holds its message; a worker
    that takes the message later finds nothing to run), a running one stops at its next progress step (or is
    stopped by its worker two beats later)."""
    if Job.objects.filter(pk=job.pk, status=Job.Status.QUEUED).update(
        status=Job.Status.CANCELLED, cancel_requested=True, finished_at=timezone.now()
    ):
        job.write_log("cancelled before it started")
        workers.log_state(job, Job.Status.CANCELLED)
    elif not job.finished:
        Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(cancel_requested=True)
    job.refresh_from_db()
    return job
