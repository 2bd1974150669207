"""The endpoints a load balancer, an orchestrator and Prometheus call: none needs a login, none sets a cookie."""

import ipaddress

from django.conf import settings
from django.http import Http404, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST

from core.login_limits import client_ip
from operations import metrics as prometheus
from operations.readiness import readiness


@csrf_exempt
@require_safe
@never_cache
def healthz(request):
    """The process lives and answers: no database, Redis or bucket is asked."""
    return JsonResponse({"status": "ok"})


@csrf_exempt
@require_safe
@never_cache
def readyz(request):
    """Each component's state; 503 while one that serving needs is not ok."""
    state = readiness()
    return JsonResponse(state, status=200 if state["ready"] else 503)


def metrics_allowed(request) -> bool:
    """Loopback, or an address in METRICS_ALLOWED_ADDRESSES; the client's address as the login limits read
    it (through TRUSTED_PROXY_COUNT proxies), so a request relayed by a proxy on this host is not loopback."""
    try:
        address = ipaddress.ip_address(client_ip(request) or "")
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if address.is_loopback:
        return True
    return any(address in ipaddress.ip_network(entry, strict=False) for entry in settings.METRICS_ALLOWED_ADDRESSES)


@csrf_exempt
@require_safe
@never_cache
def metrics(request):
    if not metrics_allowed(request):
        raise Http404  # as if there were nothing here
    return HttpResponse(prometheus.scrape(), content_type=CONTENT_TYPE_LATEST)
