"""Background model runs: what was asked, how far it got, and how it ended."""
from django.conf import settings
from django.db import models


class ModelRun(models.Model):
    class Job(models.TextChoices):
        PREDICT = "predict"
        TRAIN_UNLI = "train_unli"
        GENERATE_ATOMS = "generate_atoms"
        MAKE_ANTONYM_PAIRS = "make_antonym_pairs"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    job = models.CharField(max_length=24, choices=Job.choices)
    params = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    # Checked by the running job at each progress step; the job stops at the next one.
    cancel_requested = models.BooleanField(default=False)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.job} run {self.pk}"

    @property
    def percent(self) -> float:
        return round(100.0 * self.done / self.total, 1) if self.total else 0.0

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED, self.Status.CANCELLED)
