from django.contrib import admin

from jobs.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "status", "done", "total", "created_by", "project", "created_at", "finished_at")
    list_filter = ("kind", "status")
    search_fields = ("kind", "error", "created_by__username")
    raw_id_fields = ("created_by", "project")
    readonly_fields = ("inputs", "result", "created_at", "started_at", "finished_at")
