from django.apps import AppConfig


class LabelVariationConfig(AppConfig):
    name = "label_variation"
    verbose_name = "Label variation"

    def ready(self):
        from label_variation import registrations  # noqa: F401  what the app adds to the core, registered once
