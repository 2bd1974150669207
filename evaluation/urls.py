from django.urls import path

from evaluation import views
from evaluation.study_evaluation import views as study_evaluation

app_name = "evaluation"
urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("new/", views.run_new, name="run_new"),
    path("studies/<slug:slug>/", study_evaluation.study_evaluate, name="study_evaluate"),
    path(
        "studies/comparisons/<int:job_id>.<str:fmt>",
        study_evaluation.comparison_download,
        name="comparison_download",
    ),
]
