from django.apps import AppConfig


class ModelsBackendConfig(AppConfig):
    name = "models_backend"
    verbose_name = "Model backend"

    def ready(self):
        from models_backend import runs  # noqa: F401  registers the model job kinds
