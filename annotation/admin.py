from django.contrib import admin, messages
from django.template.defaultfilters import pluralize
from django.template.response import TemplateResponse

from annotation.models import (
    AdjudicationRecord,
    Annotation,
    Assignment,
    Atom,
    AuditEntry,
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
from annotation.services.crowd.participants import ParticipantError, forget_participant
from core import roles


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
    list_display = ("id", "assignment", "item", "worker")
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


class ForAdminRole:
    """Readable by the admin role (the "admin" group), which holds no per-model permissions."""

    def has_module_permission(self, request):
        return roles.is_admin(request.user)

    def has_view_permission(self, request, obj=None):
        return roles.is_admin(request.user)


@admin.register(CrowdSession)
class CrowdSessionAdmin(ForAdminRole, admin.ModelAdmin):
    list_display = (
        "project",
        "platform",
        "participant_id",
        "study_id",
        "session_id",
        "completion_code",
        "completed_at",
    )
    list_filter = ("platform", "project")
    search_fields = ("=participant_id", "=study_id", "=session_id")  # exact: find the one participant asked about
    actions = ["forget_participants"]

    def has_change_permission(self, request, obj=None):
        return roles.is_admin(request.user)  # the erasure action; the fields themselves are read only

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in CrowdSession._meta.fields]

    @admin.action(description="Forget the selected participants (erase their IDs, keep their answers)")
    def forget_participants(self, request, queryset):
        people = set(queryset.values_list("platform", "participant_id"))
        if not request.POST.get("confirmed"):  # an erasure cannot be undone: the participants are listed first
            return TemplateResponse(
                request,
                "admin/forget_participants.html",
                {
                    **self.admin_site.each_context(request),
                    "people": sorted(people),
                    "queryset": queryset,
                    "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
                    "title": "Forget these participants?",
                    "opts": self.model._meta,
                },
            )
        files_removed = []
        for platform, participant_id in sorted(people):
            try:
                files_removed += forget_participant(platform, participant_id, by=request.user).files_removed
            except ParticipantError as exc:  # erased meanwhile by another admin
                self.message_user(request, str(exc), messages.WARNING)
        self.message_user(
            request,
            f"Forgot {len(people)} participant{pluralize(len(people))}; their answers are kept under a pseudonym. "
            f"Stored exports and bundles removed (made before the erasure): {len(files_removed)}"
            + "".join(f"; {line}" for line in files_removed),
        )


class ReadOnly:
    """Rows the services write and nobody edits (the audit log, people's judgments): shown in the admin,
    never added, changed or deleted there."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(ForAdminRole, ReadOnly, admin.ModelAdmin):
    """Read only, and for admins only: the log is written by the services, never by hand."""

    list_display = ("created_at", "actor_name", "action", "project_slug", "details")
    list_filter = ("action",)
    search_fields = ("actor_name", "project_slug")


@admin.register(AdjudicationRecord)
class AdjudicationRecordAdmin(admin.ModelAdmin):
    list_display = ("item", "author", "before", "after", "created_at")
    readonly_fields = ("item", "author", "before", "after", "note", "created_at")

    def has_delete_permission(self, request, obj=None):
        return False  # the audit trail is never edited
