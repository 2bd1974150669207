from django.urls import path

from models_backend import views

app_name = "models_backend"
urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("checkpoints/", views.checkpoint_list, name="checkpoint_list"),
    path("checkpoints/evaluate/", views.checkpoint_evaluate, name="checkpoint_evaluate"),
]
