from django.contrib import admin

from annotation.models import (
    AdjudicationRecord,
    Annotation,
    Assignment,
    Atom,
    Claim,
    CrowdSession,
    Example,
    Item,
    Project,
    QualificationAttempt,
    QualificationItem,
    QualificationTest,
    WorkerStatus,
)


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "task_type", "owner", "items_per_page", "redundancy", "created_at")
    list_filter = ("task_type",)
    search_fields = ("slug", "title")


@admin.register(Example)
class ExampleAdmin(admin.ModelAdmin):
    list_display = ("id", "project", "source_id", "premise", "hypothesis", "source_label")
    list_filter = ("project",)
    search_fields = ("source_id", "premise", "hypothesis")


@admin.register(Atom)
class AtomAdmin(admin.ModelAdmin):
    list_display = ("id", "example", "order", "text", "validity", "effect")
    list_filter = ("validity",)
    search_fields = ("text",)
    raw_id_fields = ("example",)


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("id", "project", "status", "annotation_count", "active_claims", "target", "aggregate")
    list_filter = ("project", "status")
    raw_id_fields = ("example", "atom")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("id", "project", "worker", "status", "created_at", "expires_at", "late")
    list_filter = ("status", "project")


@admin.register(Claim)
class ClaimAdmin(admin.ModelAdmin):
    list_display = ("id", "assignment", "item", "worker", "active")
    raw_id_fields = ("assignment", "item")


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ("id", "item", "worker", "value", "seconds_spent", "submitted_at", "imported", "late")
    list_filter = ("imported", "late")
    raw_id_fields = ("item", "assignment")


class QualificationItemInline(admin.TabularInline):
    model = QualificationItem
    extra = 1


@admin.register(QualificationTest)
class QualificationTestAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "task_type", "max_attempts", "min_accuracy", "min_pearson", "min_spearman")
    inlines = [QualificationItemInline]


@admin.register(QualificationAttempt)
class QualificationAttemptAdmin(admin.ModelAdmin):
    list_display = ("id", "test", "worker", "passed", "created_at")
    list_filter = ("passed", "test")


@admin.register(WorkerStatus)
class WorkerStatusAdmin(admin.ModelAdmin):
    list_display = ("project", "worker", "gold_answered", "gold_correct", "suspended")
    list_filter = ("suspended", "project")


@admin.register(CrowdSession)
class CrowdSessionAdmin(admin.ModelAdmin):
    list_display = ("project", "platform", "participant_id", "study_id", "session_id", "completion_code", "completed_at")
    list_filter = ("platform", "project")


@admin.register(AdjudicationRecord)
class AdjudicationRecordAdmin(admin.ModelAdmin):
    list_display = ("item", "author", "before", "after", "created_at")
    readonly_fields = ("item", "author", "before", "after", "note", "created_at")

    def has_delete_permission(self, request, obj=None):
        return False  # the audit trail is never edited
