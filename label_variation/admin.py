from django.contrib import admin

from annotation.admin import ForAdminRole, ReadOnly
from label_variation.models import ReasonTag, SelfJudgment


# Someone's judgments, kept as given: only the services write them (services.self_judgments, services.reasons).
@admin.register(SelfJudgment)
class SelfJudgmentAdmin(ForAdminRole, ReadOnly, admin.ModelAdmin):
    list_display = ("id", "example", "worker", "makes_sense", "created_at")
    list_filter = ("makes_sense",)
    raw_id_fields = ("example",)


@admin.register(ReasonTag)
class ReasonTagAdmin(ForAdminRole, ReadOnly, admin.ModelAdmin):
    list_display = ("id", "item", "round", "role", "tagger", "tagger_name", "reasons", "created_at")
    list_filter = ("round", "role")
    search_fields = ("tagger_name",)
    raw_id_fields = ("item",)
