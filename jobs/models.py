"""A stored background run: what was asked (kind, settings, input files with checksums), how far it got,
and how it ended (result, output file, or the error)."""

import shutil
from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models.signals import post_delete
from django.dispatch import receiver


class Job(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.DONE, Status.FAILED, Status.CANCELLED)
    LOG_NAME = "log.txt"
    LOG_LINES = 200  # the page shows the log's last lines

    kind = models.CharField(max_length=32)  # a name in jobs.kinds.KINDS
    params = models.JSONField(default=dict, blank=True)
    # One entry per input file: {"role", "name", "size", "sha256", "path" (relative to MEDIA_ROOT)}.
    inputs = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveBigIntegerField(default=0)
    total = models.PositiveBigIntegerField(default=0)
    # Checked by the running job at each progress step; it stops at the next one.
    cancel_requested = models.BooleanField(default=False)
    result = models.JSONField(null=True, blank=True)
    # A file the job wrote (predictions, a trained model's card, an export), relative to MEDIA_ROOT.
    output = models.CharField(max_length=500, blank=True)
    error = models.TextField(blank=True)
    queue = models.CharField(max_length=20, default="default")
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
    def folder(self) -> Path:
        """Where this job keeps its copies of its inputs and the files it writes."""
        return Path(settings.MEDIA_ROOT) / "jobs" / str(self.pk)

    def input_path(self, role: str) -> Path:
        entry = next(entry for entry in self.inputs if entry["role"] == role)
        return Path(settings.MEDIA_ROOT) / entry["path"]

    @property
    def output_path(self) -> Path | None:
        return Path(settings.MEDIA_ROOT) / self.output if self.output else None

    @property
    def log_lines(self) -> list[str]:
        """The last lines of the job's log (jobs.services.log writes it)."""
        try:
            with (self.folder / self.LOG_NAME).open(encoding="utf-8") as handle:
                return [line.rstrip("\n") for line in handle.readlines()[-self.LOG_LINES :]]
        except FileNotFoundError:
            return []

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
    def title(self) -> str:
        from jobs.kinds import get_kind

        return get_kind(self.kind).describe(self)


@receiver(post_delete, sender=Job)
def _remove_files(sender, instance, **kwargs):
    # A job's copies of its inputs and its outputs are only reachable through the job.
    shutil.rmtree(instance.folder, ignore_errors=True)
