from django.urls import path

from label_variation.views import reasons, self_check

urlpatterns = [
    path("projects/<slug:slug>/adjudication/<int:item_id>/reasons/", reasons.tag_reasons, name="tag_reasons"),
    path("work/<slug:slug>/explanations/", self_check.own_explanations, name="own_explanations"),
]
