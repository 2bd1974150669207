from django.urls import path

from annotation import views, views_reports

urlpatterns = [
    path("", views.home, name="home"),
    path("projects/new/", views.project_new, name="project_new"),
    path("projects/<slug:slug>/", views.project_detail, name="project_detail"),
    path("projects/<slug:slug>/export/<str:fmt>/", views.project_export, name="project_export"),
    path("projects/<slug:slug>/workers/", views.worker_figures, name="worker_figures"),
    path("projects/<slug:slug>/send-to-validation/", views.send_to_validation, name="project_send_to_validation"),
    path("projects/<slug:slug>/adjudication/", views.adjudication_queue, name="adjudication_queue"),
    path("projects/<slug:slug>/adjudication/<int:item_id>/", views.adjudication_item, name="adjudication_item"),
    path("projects/<slug:slug>/report/", views_reports.report, name="project_report"),
    path("work/<slug:slug>/", views.work, name="work"),
    path("enter/<slug:slug>/", views.enter, name="enter"),
    path("qualify/<slug:slug>/", views.qualify, name="qualify"),
    path("done/<slug:slug>/", views.done, name="done"),
    path("work/<slug:slug>/<int:assignment_id>/submit/", views.submit, name="submit"),
    path("work/<slug:slug>/<int:assignment_id>/release/", views.release, name="release"),
]
