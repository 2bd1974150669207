from django.apps import AppConfig


class ModelsBackendConfig(AppConfig):
    name = "models_backend"
    verbose_name = "Model backend"

    def ready(self):
        from jobs.workers import on_worker_start
        from models_backend import runs  # noqa: F401  registers the model job kinds
        from models_backend.catalog import register_host_folder

        on_worker_start(register_host_folder)  # a worker host's hand-placed checkpoints are listed everywhere
