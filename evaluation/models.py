"""Stored evaluation runs: which suite ran on which files (with checksums), with what settings, and the result."""
import shutil
from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models.signals import post_delete
from django.dispatch import receiver


class EvaluationRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    suite = models.CharField(max_length=32)
    parameters = models.JSONField(default=dict, blank=True)
    # One entry per input file: {"role", "name", "size", "sha256", "path" (relative to MEDIA_ROOT)}.
    inputs = models.JSONField(default=list, blank=True)
    results = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluation_runs"
    )
    # Set when the gold side of the run comes from an annotation project.
    project = models.ForeignKey(
        "annotation.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluation_runs"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["created_by", "-created_at"], name="evalrun_owner_created")]

    def __str__(self) -> str:
        return f"{self.suite} run {self.pk} ({self.status})"

    @property
    def folder(self) -> Path:
        """Where this run's copies of its input files live."""
        return Path(settings.MEDIA_ROOT) / "evaluation" / str(self.pk)

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


@receiver(post_delete, sender=EvaluationRun)
def _remove_stored_inputs(sender, instance, **kwargs):
    # The run's copies of its inputs are only reachable through the run.
    shutil.rmtree(instance.folder, ignore_errors=True)
