from django.apps import apps
from django.contrib import admin

from jobs.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "status", "done", "total", "created_by", "project", "created_at", "finished_at")
    list_filter = ("kind", "status")
    search_fields = ("kind", "error", "created_by__username")
    raw_id_fields = ("created_by", "project")
    readonly_fields = ("inputs", "result", "created_at", "started_at", "finished_at")


if apps.is_installed("django_rq"):  # the task queue in Redis (TASKS_BACKEND=rq)
    from django_rq.admin import QueueAdmin
    from django_rq.models import Dashboard

    class QueueDashboardAdmin(QueueAdmin):
        """django_rq's dashboard without the pages of one object that every admin model gets (add, change,
        delete, history): its model has no table, so those pages ended in a database error (a 500)."""

        def get_urls(self):
            return [url for url in super().get_urls() if not _is_object_page(str(url.pattern))]

    def _is_object_page(pattern: str) -> bool:
        return pattern.startswith("add/") or "<path:object_id>" in pattern

    admin.site.unregister(Dashboard)
    admin.site.register(Dashboard, QueueDashboardAdmin)
