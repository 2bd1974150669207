"""System checks (`manage.py check`): Redis that would lose the queued jobs on a restart, and metrics
addresses that are not addresses."""

import ipaddress

from django.conf import settings
from django.core import checks

REDIS_TIMEOUT_SECONDS = 2


def redis_persistence(app_configs=None, **kwargs):
    """With RQ, a queued job's message lives only in Redis: a Redis that keeps nothing on disk (no AOF, no
    snapshots) loses every queued job when it restarts."""
    if settings.TASKS_BACKEND != "rq" or not settings.REDIS_URL:
        return []
    import redis

    client = redis.Redis.from_url(
        settings.REDIS_URL,
        socket_timeout=REDIS_TIMEOUT_SECONDS,
        socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
        decode_responses=True,
    )
    try:
        appendonly = client.config_get("appendonly").get("appendonly")
        save = client.config_get("save").get("save")
    except redis.ResponseError as error:  # CONFIG renamed or refused, as managed Redis services do
        return [
            checks.Info(
                f"could not read Redis's persistence settings ({error}); make sure it keeps its data on disk",
                hint="Run Redis with --appendonly yes (AOF): docs/deploying.md, Operations.",
                id="operations.I001",
            )
        ]
    except redis.RedisError:
        return []  # unreachable: the commands that need Redis say so themselves
    finally:
        client.close()
    if appendonly == "no" and not save:
        return [
            checks.Warning(
                'Redis keeps nothing on disk (appendonly no, save ""): a Redis restart loses every queued job',
                hint="Run Redis with --appendonly yes (AOF), or set it with CONFIG SET appendonly yes and "
                "CONFIG REWRITE: docs/deploying.md, Operations.",
                id="operations.W001",
            )
        ]
    return []


def metrics_addresses(app_configs=None, **kwargs):
    errors = []
    for entry in settings.METRICS_ALLOWED_ADDRESSES:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            errors.append(
                checks.Error(
                    f"METRICS_ALLOWED_ADDRESSES: {entry!r} is neither an IP address nor a network",
                    hint="Comma-separated addresses or CIDR networks, e.g. 10.0.0.5,192.168.1.0/24",
                    id="operations.E001",
                )
            )
    return errors
