from django.urls import path

from jobs import views

app_name = "jobs"
urlpatterns = [
    path("", views.job_list, name="list"),
    path("<int:job_id>/", views.job_detail, name="detail"),
    path("<int:job_id>/status/", views.job_status, name="status"),
    path("<int:job_id>/cancel/", views.job_cancel, name="cancel"),
    path("<int:job_id>/output/", views.job_output, name="output"),
]
