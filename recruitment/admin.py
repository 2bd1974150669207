from django.contrib import admin

from recruitment.models import Bonus, ParticipantGroup, ProlificLink, ProlificSubmission, WebhookEvent


@admin.register(ProlificLink)
class ProlificLinkAdmin(admin.ModelAdmin):
    list_display = ("project", "prolific_study_id", "state", "places", "reward_cents", "currency")
    # The token and the webhook secret are never shown, not even to admins: the study's Prolific page replaces them.
    exclude = ("token_encrypted", "webhook_secret_encrypted")


@admin.register(ProlificSubmission)
class ProlificSubmissionAdmin(admin.ModelAdmin):
    list_display = ("link", "submission_id", "participant_id", "status", "status_at")
    list_filter = ("status",)


@admin.register(Bonus)
class BonusAdmin(admin.ModelAdmin):
    list_display = ("project", "participant_id", "amount", "currency", "reason", "state", "bulk_id", "updated_at")
    list_filter = ("state",)
    readonly_fields = ("idempotency_key", "state", "bulk_id")


@admin.register(WebhookEvent)
class WebhookEventAdmin(admin.ModelAdmin):
    list_display = ("event_id", "link", "submission_id", "status", "occurred_at", "applied")


@admin.register(ParticipantGroup)
class ParticipantGroupAdmin(admin.ModelAdmin):
    list_display = ("project", "name", "prolific_group_id", "rule", "updated_at")
