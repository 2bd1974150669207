from django.contrib import admin

from evaluation.models import EvaluationRun


@admin.register(EvaluationRun)
class EvaluationRunAdmin(admin.ModelAdmin):
    list_display = ("id", "suite", "status", "created_by", "project", "created_at", "finished_at")
    list_filter = ("suite", "status")
    search_fields = ("suite", "error", "created_by__username")
    raw_id_fields = ("created_by", "project")
    readonly_fields = ("inputs", "results", "created_at", "started_at", "finished_at")
