"""A stored background run: what was asked (kind, settings, input files with checksums), how far it got,
and how it ended (result, output file, or the error)."""

import logging
from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models import F, Value
from django.db.models.functions import Concat
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone


class Job(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.DONE, Status.FAILED, Status.CANCELLED)
    LOG_LINES = 200  # the page shows the log's last lines

    kind = models.CharField(max_length=32)  # a name in jobs.kinds.KINDS
    params = models.JSONField(default=dict, blank=True)
    # One entry per input file: {"role", "name", "size", "sha256", "path" (its key in the default storage)}.
    inputs = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveBigIntegerField(default=0)
    total = models.PositiveBigIntegerField(default=0)
    # Checked by the running job at each progress step; it stops at the next one.
    cancel_requested = models.BooleanField(default=False)
    result = models.JSONField(null=True, blank=True)
    # The file the job wrote (predictions, an export, a trained model's archive): its key in the default storage.
    output = models.CharField(max_length=500, blank=True)
    error = models.TextField(blank=True)
    # Kept in the database, not beside the job's files: the worker writing it and the page reading it may be
    # on different hosts.
    log = models.TextField(blank=True, default="")
    queue = models.CharField(max_length=20, default="default")
    # Seconds it may run (its kind's limit or JOB_TIME_LIMITS'), fixed when it is started.
    time_limit = models.PositiveIntegerField(null=True, blank=True)
    # Runs started: more than one when a transient fault ended one and the kind is safe to repeat.
    attempts = models.PositiveSmallIntegerField(default=0)
    # The queue message that carries it (the task backend's id), and when that message was sent or last found
    # in the queue: a queued job whose message the queue lost is sent again (jobs/durability.py).
    message_id = models.CharField(max_length=64, blank=True, default="")
    message_seen_at = models.DateTimeField(null=True, blank=True)
    # Which task worker runs it (a WorkerHeartbeat's name) and the process doing the work, so that a job whose
    # worker died is marked failed (jobs/workers.py).
    worker = models.CharField(max_length=200, blank=True, default="")
    runner_pid = models.IntegerField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    project = models.ForeignKey(
        "annotation.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["created_by", "kind", "-created_at"], name="job_owner_kind_created"),
            models.Index(fields=["status"], name="job_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk} ({self.status})"

    @property
    def storage_prefix(self) -> str:
        """Where this job keeps its copies of its inputs and the file it writes, in the default storage."""
        return f"jobs/{self.pk}"

    def input_path(self, role: str) -> Path:
        """A local copy of one input (jobs/files.py fetches it when the storage is not this host's disk)."""
        from jobs.files import fetch, scratch

        entry = next(entry for entry in self.inputs if entry["role"] == role)
        return fetch(entry["path"], scratch("jobs", str(self.pk), "input", role) / entry["name"], entry.get("sha256"))

    @property
    def output_name(self) -> str:
        return Path(self.output).name if self.output else ""

    @property
    def log_lines(self) -> list[str]:
        """The last lines of the job's log (write_log writes it)."""
        return self.log.splitlines()[-self.LOG_LINES :]

    def write_log(self, message: str) -> None:
        """Append a timestamped line to the job's log: one UPDATE in the database, where every host reads it
        (the page may be served by another host than the worker's)."""
        Job.objects.filter(pk=self.pk).update(
            log=Concat(F("log"), Value(f"{timezone.now():%H:%M:%S} {message}\n"), output_field=models.TextField())
        )

    @property
    def finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def percent(self) -> float:
        return (
            round(100.0 * self.done / self.total, 1)
            if self.total
            else (100.0 if self.status == self.Status.DONE else 0.0)
        )

    @property
    def seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None

    @property
    def time_limit_text(self) -> str:
        from jobs.kinds import describe_seconds

        return describe_seconds(self.time_limit) if self.time_limit else ""

    @property
    def title(self) -> str:
        from jobs.kinds import get_kind

        return get_kind(self.kind).describe(self)


@receiver(post_delete, sender=Job)
def _remove_files(sender, instance, **kwargs):
    # A job's copies of its inputs and its output are only reachable through the job.
    from jobs.files import StorageError, delete_tree

    try:
        delete_tree(instance.storage_prefix)
    except StorageError as error:  # the row goes all the same; the files are left for the stale-file sweep
        logging.getLogger(__name__).warning("job %s: files not removed: %s", instance.pk, error)


class WorkerHeartbeat(models.Model):
    """A live task worker: which host and process, which queues it takes, when it last said so. Each worker
    writes its row every few seconds (jobs/workers.py); a row left unrefreshed is a dead worker."""

    name = models.CharField(max_length=200, unique=True)
    host = models.CharField(max_length=200)
    pid = models.IntegerField()
    queues = models.JSONField(default=list)
    backend = models.CharField(max_length=20)
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["host", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({', '.join(self.queues)})"
