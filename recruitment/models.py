"""A study's link to Prolific: the API token kept on the server, the Prolific study it runs as, the
submissions Prolific reports, the bonuses ledger and the webhook events received."""

from django.db import models

from annotation.models import Project
from recruitment import secrets


def _secret(field: str, label: str) -> property:
    """The secret kept encrypted in `field`, read and written in clear (recruitment.secrets seals it). Reading
    one the current key cannot open raises secrets.SecretUnreadable, which asks for it to be entered again."""

    def read(link) -> str:
        return secrets.reveal(getattr(link, field), label)

    def write(link, value: str) -> None:
        setattr(link, field, secrets.seal(value))

    return property(read, write, doc=f"The {label} in clear; empty when none is stored.")


class KeepOut(models.TextChoices):
    """Which participants of a study's earlier waves its entry link turns away."""

    NONE = "none", "nobody"
    REJECTED = "rejected", "those rejected"
    SCREENED_OUT = "screened_out", "those screened out"
    RETURNED = "returned", "those who returned or were asked to"
    ALL = "all", "everyone who took part"


class ProlificLink(models.Model):
    """One study run on Prolific. The token and the webhook secret are read by recruitment.prolific only:
    no form, page, export, admin list or audit entry shows them (forms say "set" and offer to replace).
    They are stored encrypted (recruitment.secrets): `token` and `webhook_secret` read and write them in clear."""

    class State(models.TextChoices):
        LINKED = "linked"  # a token, no Prolific study yet
        DRAFT = "draft"  # created on Prolific, not published
        ACTIVE = "active"
        PAUSED = "paused"
        STOPPED = "stopped"

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="prolific_link")
    token_encrypted = models.TextField(blank=True)  # Fernet ciphertext: use `token`
    webhook_secret_encrypted = models.TextField(blank=True)  # Fernet ciphertext: use `webhook_secret`
    workspace_id = models.CharField(max_length=64, blank=True)
    prolific_study_id = models.CharField(max_length=64, blank=True)
    # The workspace's hook subscription to submission status events made from here ("" when none).
    hook_subscription_id = models.CharField(max_length=64, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.LINKED)
    # The study as it was sent: name, places, reward (in cents or pence), minutes, codes, filters.
    name = models.CharField(max_length=255, blank=True)
    description = models.TextField(blank=True)
    places = models.PositiveIntegerField(default=10)
    reward_cents = models.PositiveIntegerField(default=0)
    currency = models.CharField(max_length=3, default="GBP")
    estimated_minutes = models.PositiveIntegerField(default=10)
    auto_approve = models.BooleanField(default=False)
    screen_out_reward_cents = models.PositiveIntegerField(default=0)
    screen_out_slots = models.PositiveIntegerField(default=0)
    completed_code = models.CharField(max_length=40, blank=True)
    screened_out_code = models.CharField(max_length=40, blank=True)
    returned_code = models.CharField(max_length=40, blank=True)
    # Participant groups of earlier waves this study admits only, or keeps out (Prolific group ids).
    allow_groups = models.JSONField(default=list, blank=True)
    block_groups = models.JSONField(default=list, blank=True)
    # Prescreening from Prolific's filter list: the lowest approval rate (percent, 0: none) and the Prolific
    # studies whose participants are kept out (earlier waves, pilots).
    minimum_approval_rate = models.PositiveSmallIntegerField(default=0)
    blocked_studies = models.JSONField(default=list, blank=True)
    # Where participants live and which languages they speak, as names of recruitment.prescreening's lists
    # (Prolific's choice ids for them are read when the study is created).
    countries = models.JSONField(default=list, blank=True)
    first_languages = models.JSONField(default=list, blank=True)
    fluent_languages = models.JSONField(default=list, blank=True)
    # Waves: the Prolific studies of the earlier waves this study was cloned from (oldest first), and which of
    # their participants the entry link turns away (recruitment.services.waves), besides Prolific's blocklist.
    earlier_waves = models.JSONField(default=list, blank=True)
    keep_out = models.CharField(max_length=12, choices=KeepOut.choices, default=KeepOut.ALL)
    created_at = models.DateTimeField(auto_now_add=True)

    token = _secret("token_encrypted", "API token")
    webhook_secret = _secret("webhook_secret_encrypted", "webhook secret")

    @property
    def secret_states(self) -> dict[str, str]:
        """For the page: whether each secret is set, unset or stored but unreadable under the current key."""
        return {
            "token": secrets.state(self.token_encrypted),
            "webhook_secret": secrets.state(self.webhook_secret_encrypted),
        }

    @property
    def unreadable_secrets(self) -> list[str]:
        """The labels of the secrets stored but unreadable under the current key: they must be entered again."""
        labels = {"token": "API token", "webhook_secret": "webhook secret"}
        return [labels[name] for name, state in self.secret_states.items() if state == secrets.UNREADABLE]


class ProlificSubmission(models.Model):
    """A submission as Prolific last reported it (pulled, or pushed by a webhook). `status_at` is when
    Prolific says the status was set: an older event never overwrites a newer one."""

    link = models.ForeignKey(ProlificLink, on_delete=models.CASCADE, related_name="submissions")
    submission_id = models.CharField(max_length=64)
    participant_id = models.CharField(max_length=100)
    status = models.CharField(max_length=32)
    status_at = models.DateTimeField(null=True, blank=True)
    study_code = models.CharField(max_length=40, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    time_taken = models.PositiveIntegerField(null=True, blank=True)
    bonus_cents = models.PositiveIntegerField(default=0)  # bonuses Prolific reports as paid
    # The author asked the participant to return it (Prolific keeps the status until they do): no rule bonus.
    return_requested = models.BooleanField(default=False)

    class Meta:
        ordering = ["participant_id", "started_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["link", "submission_id"], name="prolific_submission_once"),
        ]


class Bonus(models.Model):
    """One bonus, written before any call to Prolific. Set up (Prolific's bulk bonus id stored), then
    `paying` just before the pay call is sent, then paid: a row left `paying` by a crash or a timeout is
    never paid again, only confirmed from the submissions Prolific reports."""

    class State(models.TextChoices):
        PLANNED = "planned"
        SET_UP = "set_up", "set up"
        PAYING = "paying", "pay sent, not confirmed"
        PAID = "paid"
        FAILED = "failed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="bonuses")
    participant_id = models.CharField(max_length=100)
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    currency = models.CharField(max_length=3)
    reason = models.CharField(max_length=200)
    idempotency_key = models.CharField(max_length=200, unique=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PLANNED)
    bulk_id = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "bonuses"


class WebhookEvent(models.Model):
    """A Prolific hook event taken in (its id is kept once: a repeated delivery changes nothing)."""

    event_id = models.CharField(max_length=100, unique=True)
    # sha256 of the signed timestamp and signature: Prolific does not sign X-Event-ID, so a delivery sent again
    # under a new event id is recognised by this ("" for events taken before it was kept).
    delivery = models.CharField(max_length=64, blank=True)
    link = models.ForeignKey(ProlificLink, on_delete=models.CASCADE, related_name="events")
    event_type = models.CharField(max_length=100)
    submission_id = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=32, blank=True)
    occurred_at = models.DateTimeField()
    applied = models.BooleanField(default=False)  # False: older than what was known, kept for the record
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["delivery"], condition=~models.Q(delivery=""), name="webhook_delivery_once"
            ),
        ]


class ParticipantGroup(models.Model):
    """A Prolific participant group built from this study's workers by a rule, for the next wave."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="participant_groups")
    prolific_group_id = models.CharField(max_length=64, blank=True)
    name = models.CharField(max_length=200)
    rule = models.CharField(max_length=200)
    participant_ids = models.JSONField(default=list)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="participant_group_name_once")]
