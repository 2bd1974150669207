from django.urls import path

from annotation import views

urlpatterns = [
    path("", views.home, name="home"),
    path("projects/new/", views.project_new, name="project_new"),
    path("projects/<slug:slug>/", views.project_detail, name="project_detail"),
    path("projects/<slug:slug>/export/<str:fmt>/", views.project_export, name="project_export"),
    path("work/<slug:slug>/", views.work, name="work"),
    path("work/<slug:slug>/<int:assignment_id>/submit/", views.submit, name="submit"),
    path("work/<slug:slug>/<int:assignment_id>/release/", views.release, name="release"),
]
