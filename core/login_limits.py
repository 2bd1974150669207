"""Login throttling that says so: the client's real address behind the proxy, a per-address limit
against password spraying, and lockouts answered 429 with Retry-After on the login page and the API.

django-axes keeps the failures (one row per username and address) and asks this module three things:
the client address (AXES_CLIENT_IP_CALLABLE), whether a request is locked (AXES_HANDLER) and what a
locked-out login page answers (AXES_LOCKOUT_CALLABLE).
"""

import ipaddress
import math
from datetime import timedelta

from axes.handlers.database import AxesDatabaseHandler
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
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


def _recent_failures(ip: str | None):
    since = timezone.now() - timedelta(seconds=cooloff_seconds())
    return AccessAttempt.objects.filter(ip_address=ip, attempt_time__gte=since)


def usernames_failed_from(ip: str | None) -> int:
    """How many different usernames failed to log in from this address within the cool-off time."""
    return _recent_failures(ip).values("username").distinct().count() if ip else 0


def failures_from(ip: str | None) -> int:
    """How many failed logins came from this address within the cool-off time, all usernames together."""
    return (_recent_failures(ip).aggregate(n=Sum("failures_since_start"))["n"] or 0) if ip else 0


def spray_refusal(request, username: str | None) -> bool:
    """Whether a login from this request's address is refused as password spraying. Many people can share one
    address (a lab, a campus), so a sprayer there must not lock them all out: an address that failed on
    LOGIN_SPRAY_USERNAME_LIMIT usernames is refused only for usernames that never logged in from it (every
    new guess), while its known users still log in; an address past LOGIN_ADDRESS_FAILURE_CAP failures in all
    is refused for everyone until the cool-off ends."""
    from axes.models import AccessLog

    ip = client_ip(request)
    if not ip:
        return False
    if failures_from(ip) >= settings.LOGIN_ADDRESS_FAILURE_CAP:
        return True
    if usernames_failed_from(ip) < settings.LOGIN_SPRAY_USERNAME_LIMIT:
        return False
    return not (username and AccessLog.objects.filter(ip_address=ip, username=username).exists())


class SprayAwareHandler(AxesDatabaseHandler):
    """axes' database handler (per address and username), locked also against spraying one password over
    many accounts from one address, which never trips the per-username limit (spray_refusal)."""

    def is_locked(self, request, credentials=None) -> bool:
        if super().is_locked(request, credentials):
            return True
        return request is not None and spray_refusal(request, (credentials or {}).get("username"))

    def user_login_failed(self, sender, credentials, request=None, **kwargs):
        super().user_login_failed(sender, credentials, request=request, **kwargs)
        # axes marks a request locked out only by the per-username count; the address rules mark it too.
        if request is not None and spray_refusal(request, (credentials or {}).get("username")):
            request.axes_locked_out = True


def locked_out_page(request, original_response=None, credentials=None):
    """The login page again, answered 429 with Retry-After, saying when to try again."""
    seconds = cooloff_seconds()
    response = render(request, "registration/locked_out.html", {"minutes": math.ceil(seconds / 60)}, status=429)
    response["Retry-After"] = str(seconds)
    return response
