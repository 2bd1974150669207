from django.contrib import admin

from annotation.models import Annotation, Assignment, Atom, Claim, Example, Item, Project


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
