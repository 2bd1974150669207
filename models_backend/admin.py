from django.contrib import admin

from models_backend.models import ModelRun


@admin.register(ModelRun)
class ModelRunAdmin(admin.ModelAdmin):
    list_display = ("id", "job", "status", "done", "total", "created_by", "created_at", "finished_at")
    list_filter = ("job", "status")
