"""Login throttling that says so: the client's real address behind the proxy, a per-address limit
against password spraying, and lockouts answered 429 with Retry-After on the login page and the API.

django-axes keeps the failures (one row per username and address) and asks this module three things:
the client address (AXES_CLIENT_IP_CALLABLE), whether a request is locked (AXES_HANDLER) and what a
locked-out login page answers (AXES_LOCKOUT_CALLABLE).
"""
import ipaddress
import math

from axes.handlers.database import AxesDatabaseHandler
from axes.models import AccessAttempt
from django.conf import settings
from django.shortcuts import render
from django.utils import timezone


def client_ip(request) -> str | None:
    """The address of the client, read through the TRUSTED_PROXY_COUNT proxies in front of the app.

    Each trusted proxy appends the address it received the request from to X-Forwarded-For, so with N
    proxies the client is the N-th address from the right of [X-Forwarded-For..., REMOTE_ADDR]. Addresses
    further left were written by the client and are not believed.
    """
    remote = request.META.get("REMOTE_ADDR")
    trusted = settings.TRUSTED_PROXY_COUNT
    if not trusted:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    chain = [*forwarded, remote] if remote else forwarded
    candidate = chain[-(trusted + 1)] if len(chain) > trusted else chain[0] if chain else None
    try:
        return str(ipaddress.ip_address(candidate)) if candidate else remote
    except ValueError:
        return remote  # a proxy that writes garbage is not trusted either


def cooloff_seconds() -> int:
    return math.ceil(settings.AXES_COOLOFF_TIME * 3600)


def usernames_failed_from(ip: str | None) -> int:
    """How many different usernames failed to log in from this address within the cool-off time."""
    if not ip:
        return 0
    since = timezone.now() - timezone.timedelta(seconds=cooloff_seconds())
    return AccessAttempt.objects.filter(ip_address=ip, attempt_time__gte=since).values("username").distinct().count()


def spraying(request) -> bool:
    return usernames_failed_from(client_ip(request)) >= settings.LOGIN_SPRAY_USERNAME_LIMIT


class SprayAwareHandler(AxesDatabaseHandler):
    """axes' database handler, locked also when one address has failed on too many usernames (spraying
    one password over many accounts never trips the per-username limit)."""

    def is_locked(self, request, credentials=None) -> bool:
        return super().is_locked(request, credentials) or (request is not None and spraying(request))

    def user_login_failed(self, sender, credentials, request=None, **kwargs):
        super().user_login_failed(sender, credentials, request=request, **kwargs)
        # axes marks a request locked out only by the per-username count; the address count marks it too.
        if request is not None and spraying(request):
            request.axes_locked_out = True


def locked_out_page(request, original_response=None, credentials=None):
    """The login page again, answered 429 with Retry-After, saying when to try again."""
    seconds = cooloff_seconds()
    response = render(request, "registration/locked_out.html", {"minutes": math.ceil(seconds / 60)}, status=429)
    response["Retry-After"] = str(seconds)
    return response
