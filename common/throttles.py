"""DRF throttles keyed on the real client address (behind the trusted proxies) and read their rate from
settings.API_THROTTLE_RATES on every request, so a deployment or a test can change it."""
from django.conf import settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from annotation.services.login_limits import client_ip


class RateFromSettings:
    def get_rate(self):
        return settings.API_THROTTLE_RATES[self.scope]

    def allow_request(self, request, view):
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_ident(self, request):
        return client_ip(request) or "unknown"


class AnonymousThrottle(RateFromSettings, AnonRateThrottle):
    pass


class UserThrottle(RateFromSettings, UserRateThrottle):
    pass
