from django.urls import path

from dataset_io.views import exports, imports

urlpatterns = [
    path("projects/<slug:slug>/import/", imports.import_upload, name="import_upload"),
    path("projects/<slug:slug>/import/<str:token>/", imports.import_preview, name="import_preview"),
    path("projects/<slug:slug>/export/<str:fmt>/", exports.project_export, name="project_export"),
    path("projects/<slug:slug>/exports/", exports.export_job, name="export_job"),
    path("projects/<slug:slug>/exports/<int:job_id>/hub/", exports.push_to_hub, name="push_to_hub"),
]
