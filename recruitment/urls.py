from django.urls import path

from recruitment import views

app_name = "recruitment"
urlpatterns = [
    path("projects/<slug:slug>/prolific/", views.prolific_page, name="prolific"),
    path("projects/<slug:slug>/prolific/link/", views.save_link, name="prolific_link"),
    path("projects/<slug:slug>/prolific/study/", views.study_action, name="prolific_study"),
    path("projects/<slug:slug>/prolific/pull/", views.pull, name="prolific_pull"),
    path("projects/<slug:slug>/prolific/decide/", views.decide, name="prolific_decide"),
    path("projects/<slug:slug>/prolific/bonuses/", views.plan_bonuses, name="prolific_bonuses"),
    path("projects/<slug:slug>/prolific/bonuses/pay/", views.pay_bonuses, name="prolific_pay"),
    path("projects/<slug:slug>/prolific/groups/", views.build_group, name="prolific_group"),
    path("projects/<slug:slug>/prolific/groups/use/", views.use_group, name="prolific_group_use"),
    path("projects/<slug:slug>/prolific/hooks/", views.hooks, name="prolific_hooks"),
    path("webhooks/prolific/", views.webhook, name="prolific_webhook"),
]
