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
    from functools import wraps

    from django.http import Http404
    from django.urls import URLPattern
    from django_rq.admin import QueueAdmin
    from django_rq.models import Dashboard
    from django_rq.queues import get_queue_by_index
    from django_rq.settings import get_queues_list
    from rq.job import Job as QueuedJob
    from rq.worker import Worker

    class QueueDashboardAdmin(QueueAdmin):
        """django_rq's dashboard, for superusers only: it empties, requeues and deletes queues and jobs, which is
        no part of the admin role (staff who manage users and studies); to any other signed-in user its pages do
        not exist (404, the one status policy). Without the pages of one object that every admin model gets
        (add, change, delete, history): its model has no table, so those pages ended in a database error."""

        def has_module_permission(self, request):
            return request.user.is_superuser

        def has_view_permission(self, request, obj=None):
            return request.user.is_superuser

        def has_change_permission(self, request, obj=None):
            return request.user.is_superuser

        def get_urls(self):
            return [
                URLPattern(url.pattern, _superusers_only(url.callback), url.default_args, url.name)
                for url in super().get_urls()
                if not _is_object_page(str(url.pattern))
            ]

    def _is_object_page(pattern: str) -> bool:
        return pattern.startswith("add/") or "<path:object_id>" in pattern

    def _superusers_only(view):
        @wraps(view)
        def guarded(request, *args, **kwargs):
            if request.user.is_superuser:
                if not _exists(**kwargs):
                    raise Http404("no such queue, job or worker")
            elif request.user.is_authenticated:
                raise Http404("no such page")
            return view(request, *args, **kwargs)  # anonymous: the admin's login (or the stats' 401)

        return guarded

    def _exists(queue_index=0, scheduler_index=0, job_id=None, key=None, **_) -> bool:
        """Whether the queue, job and worker a page names exist: django_rq's pages failed on one that does not
        (IndexError, NoSuchJobError, an assertion: a 500)."""
        queues = len(get_queues_list())
        if not (0 <= queue_index < queues and 0 <= scheduler_index < queues):
            return False
        connection = get_queue_by_index(queue_index).connection
        if job_id is not None and not QueuedJob.exists(job_id, connection=connection):
            return False
        if key is not None:
            try:
                return Worker.find_by_key(key, connection=connection) is not None
            except ValueError:  # not a worker's key at all
                return False
        return True

    admin.site.unregister(Dashboard)
    admin.site.register(Dashboard, QueueDashboardAdmin)
