"""One measurement and one log line per request: counted in the metrics by route (the URL pattern, not the
path, so that labels stay few), and logged to `nli.requests` (INFO, enabled by LOG_FORMAT=json or
LOG_REQUESTS=true)."""

import logging
import time

from django.utils.functional import SimpleLazyObject, empty

from operations.metrics import observe_request

request_log = logging.getLogger("nli.requests")


def _user_id(request) -> int | None:
    """The signed-in user's id, when the request already looked the user up (the log line adds no query)."""
    user = request.__dict__.get("user")
    if user is None or (isinstance(user, SimpleLazyObject) and user._wrapped is empty):
        return None
    return user.pk


class RequestMetricsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        seconds = time.perf_counter() - started
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None else "unmatched"
        observe_request(
            route, match.view_name if match is not None else "", request.method, response.status_code, seconds
        )
        if request_log.isEnabledFor(logging.INFO):
            duration_ms = round(seconds * 1000, 1)
            request_log.info(
                "%s %s %s %s ms",
                request.method,
                request.path,
                response.status_code,
                duration_ms,
                extra={
                    "method": request.method,
                    "route": route,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": duration_ms,
                    "user_id": _user_id(request),
                },
            )
        return response
