from django.urls import path

from models_backend import study_evaluation_views, views

app_name = "models_backend"
urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("checkpoints/", views.checkpoint_list, name="checkpoint_list"),
    path("checkpoints/evaluate/", views.checkpoint_evaluate, name="checkpoint_evaluate"),
    path("studies/<slug:slug>/evaluate/", study_evaluation_views.study_evaluate, name="study_evaluate"),
    path(
        "evaluations/<int:job_id>/comparison.<str:fmt>",
        study_evaluation_views.comparison_download,
        name="comparison_download",
    ),
]
