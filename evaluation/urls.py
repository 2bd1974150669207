from django.urls import path

from evaluation import views

app_name = "evaluation"
urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("new/", views.run_new, name="run_new"),
    path("<int:run_id>/", views.run_detail, name="run_detail"),
    path("<int:run_id>/status/", views.run_status, name="run_status"),
]
