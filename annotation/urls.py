from django.urls import path

from annotation.views import adjudication, dashboard, reports, setup, work

urlpatterns = [
    path("", work.home, name="home"),
    # Setting a study up
    path("projects/new/", setup.project_new, name="project_new"),
    path("projects/<slug:slug>/settings/", setup.project_settings, name="project_settings"),
    path("projects/<slug:slug>/status/", setup.project_status, name="project_status"),
    path("projects/<slug:slug>/members/", setup.project_members, name="project_members"),
    path("projects/<slug:slug>/clone/", setup.project_clone, name="project_clone"),
    path("projects/<slug:slug>/preview/", setup.project_preview, name="project_preview"),
    path("projects/<slug:slug>/qualification/", setup.project_qualification, name="project_qualification"),
    # Following it
    path("projects/<slug:slug>/", dashboard.project_detail, name="project_detail"),
    path("projects/<slug:slug>/items/", dashboard.item_table, name="item_table"),
    path("projects/<slug:slug>/items/<int:item_id>/gold/", dashboard.make_gold, name="make_gold"),
    path("projects/<slug:slug>/workers/", dashboard.worker_figures, name="worker_figures"),
    path("projects/<slug:slug>/workers/<int:worker_id>/", dashboard.worker_detail, name="worker_detail"),
    path("projects/<slug:slug>/send-to-validation/", dashboard.send_to_validation, name="project_send_to_validation"),
    path("projects/<slug:slug>/send-valid-atoms/", dashboard.send_valid_atoms, name="project_send_valid_atoms"),
    path("projects/<slug:slug>/adjudication/", adjudication.adjudication_queue, name="adjudication_queue"),
    path("projects/<slug:slug>/adjudication/<int:item_id>/", adjudication.adjudication_item, name="adjudication_item"),
    path("projects/<slug:slug>/report/", reports.report, name="project_report"),
    path("projects/<slug:slug>/report/status/", reports.report_status, name="project_report_status"),
    path("projects/<slug:slug>/report/refresh/", reports.report_refresh, name="project_report_refresh"),
    path("audit/", reports.audit_log, name="audit_log"),
    # Working on it
    path("work/<slug:slug>/", work.work, name="work"),
    path("enter/<slug:slug>/", work.enter, name="enter"),
    path("qualify/<slug:slug>/", work.qualify, name="qualify"),
    path("done/<slug:slug>/", work.done, name="done"),
    path("work/<slug:slug>/<int:assignment_id>/submit/", work.submit, name="submit"),
    path("work/<slug:slug>/<int:assignment_id>/release/", work.release, name="release"),
    path("work/<slug:slug>/<int:assignment_id>/draft/", work.save_draft, name="page_draft"),
    path("work/<slug:slug>/<int:assignment_id>/extend/", work.extend, name="page_extend"),
]
