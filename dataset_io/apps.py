from django.apps import AppConfig


class DatasetIoConfig(AppConfig):
    name = "dataset_io"
    verbose_name = "Dataset import and export"

    def ready(self):
        from dataset_io import registrations  # noqa: F401  what the app adds to the core, registered once
