from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Accounts and access"
