from django.apps import AppConfig
from django.core import checks


class OperationsConfig(AppConfig):
    name = "operations"
    verbose_name = "Operations (health, readiness, metrics)"

    def ready(self):
        from operations.checks import metrics_addresses, redis_persistence

        checks.register(redis_persistence)
        checks.register(metrics_addresses)
