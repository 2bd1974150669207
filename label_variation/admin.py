from django.contrib import admin

from annotation.admin import ForAdminRole
from label_variation.models import ReasonTag, SelfJudgment


class HumanWork:
    """Someone's judgments, kept as given: read in the admin (by the admin role), never added, changed or
    deleted there; only the services write them (services.self_judgments, services.reasons)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(SelfJudgment)
class SelfJudgmentAdmin(ForAdminRole, HumanWork, admin.ModelAdmin):
    list_display = ("id", "example", "worker", "makes_sense", "created_at")
    list_filter = ("makes_sense",)
    raw_id_fields = ("example",)


@admin.register(ReasonTag)
class ReasonTagAdmin(ForAdminRole, HumanWork, admin.ModelAdmin):
    list_display = ("id", "item", "round", "role", "tagger", "tagger_name", "reasons", "created_at")
    list_filter = ("round", "role")
    search_fields = ("tagger_name",)
    raw_id_fields = ("item",)
