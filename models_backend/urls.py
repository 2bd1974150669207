from django.urls import path

from models_backend import views

app_name = "models_backend"
urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("<int:run_id>/", views.run_detail, name="run_detail"),
    path("<int:run_id>/status/", views.run_status, name="run_status"),
    path("<int:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("<int:run_id>/output/", views.run_output, name="run_output"),
]
