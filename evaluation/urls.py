from django.urls import path  # noqa: F401  (pages are added by the evaluation views)

app_name = "evaluation"
urlpatterns: list = []
