"""DRF throttles keyed on the real client address (behind the trusted proxies) and read their rate from
settings.API_THROTTLE_RATES on every request, so a deployment or a test can change it. The counts live
in the cache (Redis when REDIS_URL is set); while that cache is unreachable requests pass unthrottled
instead of failing."""

import logging
import time

from django.conf import settings
from rest_framework.permissions import IsAuthenticated
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from core.login_limits import client_ip

logger = logging.getLogger(__name__)
WARN_EVERY_S = 60  # an outage is said once a minute per process, not once per request
_last_warning = 0.0


class RateFromSettings:
    def get_rate(self):
        return settings.API_THROTTLE_RATES[self.scope]

    def allow_request(self, request, view):
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        try:
            return super().allow_request(request, view)
        except Exception as error:
            # Imported here, not at the top: keep web processes lean (redis-py loads with a Redis cache only).
            from redis.exceptions import RedisError

            if not isinstance(error, RedisError):
                raise
            # Redis down: a missed count is better than a refused submit.
            global _last_warning
            if time.monotonic() - _last_warning >= WARN_EVERY_S:
                _last_warning = time.monotonic()
                logger.warning("API throttles not applied while their cache is unreachable: %r", error)
            return True

    def get_ident(self, request):
        return client_ip(request) or "unknown"


class AnonymousThrottle(RateFromSettings, AnonRateThrottle):
    pass


class SignedInAfterThrottles(IsAuthenticated):
    """The default permission: signed in. DRF asks permissions before throttles, so an anonymous caller of an
    endpoint that needs a login was refused with 401 before any throttle counted the call: the anonymous
    rate never applied there. This counts the caller's throttles first (once: DRF stops at the refusal)."""

    def has_permission(self, request, view):
        if super().has_permission(request, view):
            return True
        view.check_throttles(request)  # 429 once the anonymous rate is spent
        return False


class UserThrottle(RateFromSettings, UserRateThrottle):
    pass
