"""What the label-variation protocols store beside the study core's data: the disagreement reasons tagged on
an item and the explanation authors' judgments of their own pairs. Both tables kept the names they had when the
models lived in the annotation app (migrations: annotation 0014 and this app's 0001 move them in Django's
state only)."""

from django.conf import settings
from django.db import models
from django.db.models import Q


class ReasonTag(models.Model):
    """One person's set of disagreement reasons (keys of the study's taxonomy) for an item, in a tagging round.

    As in the TACL 2022 release: two taggers per round ("first", "second"), and a "reconciliation" tag where
    their sets differ; workers tagging with their answer write role "worker" in round 1. Imported tags have
    no account, only the release's tagger name (e.g. "a1")."""

    class Role(models.TextChoices):
        FIRST = "first"
        SECOND = "second"
        RECONCILIATION = "reconciliation"
        WORKER = "worker"

    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="reason_tags")
    tagger = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="reason_tags"
    )
    tagger_name = models.CharField(max_length=100, blank=True)
    round = models.PositiveSmallIntegerField(default=1)
    role = models.CharField(max_length=16, choices=Role.choices)
    reasons = models.JSONField(default=list)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "annotation_reasontag"  # the table it had in the annotation app (moved without a copy)
        ordering = ["item", "round", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "round", "role", "tagger"],
                condition=Q(tagger__isnull=False),
                name="reason_tag_one_per_tagger",
            ),
            models.UniqueConstraint(
                fields=["item", "round", "role", "tagger_name"],
                condition=Q(tagger__isnull=True),
                name="reason_tag_one_per_named_tagger",
            ),
            # Two taggers and at most one reconciliation per round; workers are as many as answered.
            models.UniqueConstraint(
                fields=["item", "round", "role"], condition=~Q(role="worker"), name="reason_tag_one_per_role"
            ),
        ]

    def __str__(self) -> str:
        return f"reasons of item {self.item_id}, round {self.round}, {self.role}"


class SelfJudgment(models.Model):
    """An explanation's author judging their own label-explanation pair (VariErr's round 2 self-check), kept
    apart from the validators' votes: `example` is the pair in the validation project. One per author and
    pair, never replaced (label_variation.services.self_judgments)."""

    example = models.ForeignKey("annotation.Example", on_delete=models.CASCADE, related_name="self_judgments")
    worker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="self_judgments")
    makes_sense = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "annotation_selfjudgment"
        ordering = ["example_id", "id"]
        constraints = [models.UniqueConstraint(fields=["example", "worker"], name="self_judgment_unique")]

    def __str__(self) -> str:
        return f"self-judgment of example {self.example_id} by {self.worker_id}"
