from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self):
        from annotation.services import background  # noqa: F401  registers the import and export job kinds
