"""The checkpoint registry every host reads: trained models archived in the default storage (any worker fetches
them), and folders placed by hand in a host's models folder (NLI_STUDIO_MODELS), listed with that host."""

from django.db import models

from jobs.models import Job


class StoredCheckpoint(models.Model):
    key = models.CharField(max_length=300)  # "job/<id>" (trained, archived) or "shared/<folder>" (placed by hand)
    name = models.CharField(max_length=300)
    kind = models.CharField(max_length=20, blank=True)  # a ModelKind value, "encoder", or "" when unreadable
    label_map = models.JSONField(default=dict, blank=True)  # output index -> label name, as the config maps them
    size = models.BigIntegerField(default=0)
    problem = models.TextField(blank=True)
    # Placed by hand: the host whose models folder has it ("" for an archived one, which every host can fetch).
    host = models.CharField(max_length=200, blank=True)
    # Archived: the zip's key in the default storage and its sha256, checked by every host that fetches it.
    archive = models.CharField(max_length=500, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.CASCADE, related_name="checkpoints")
    seen_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "host"], name="checkpoint_key_host")]
        ordering = ["key", "host"]

    def __str__(self) -> str:
        return f"{self.key}{' on ' + self.host if self.host else ''}"
