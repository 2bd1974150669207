"""Start, follow and cancel jobs. Every background run goes through here, whatever its kind.

start_job   store the job and copies of its input files (with sizes and sha256) in the default storage, then
            queue it for a task worker (jobs/tasks.py, which runs it with jobs/running.py) or run it here and
            now with background=False, as the command line does with --save
cancel      a queued job never starts; a running one stops at its next progress step
"""

from __future__ import annotations

from pathlib import Path

from django.utils import timezone
from django.utils.text import get_valid_filename

from jobs import files, running, tasks
from jobs.kinds import JobError, get_kind
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
        tasks.run_job.using(queue_name=queue).enqueue(job.pk)
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
    """Ask a job to stop: a queued job will not start, a running one stops at its next progress step."""
    if not job.finished:
        Job.objects.filter(pk=job.pk).update(cancel_requested=True)
        job.refresh_from_db()
    return job
