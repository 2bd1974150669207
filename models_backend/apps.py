from django.apps import AppConfig


class ModelsBackendConfig(AppConfig):
    name = "models_backend"
    verbose_name = "Model backend"
