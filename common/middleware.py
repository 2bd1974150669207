"""Request-wide safety nets: one retry after a dropped database connection, JSON errors on the API,
and a Content-Security-Policy header on every page."""

import io
import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.http import JsonResponse
from django.shortcuts import render

from common.api_errors import CODE_BY_STATUS
from common.errors import ServiceUnavailable

logger = logging.getLogger(__name__)

RETRY_MARK = "_nli_retry_after_dropped_connection"
# Set on a request whose response's open_off_turn() the web server calls itself (common/asgi.py).
OFF_TURN_HERE = "_nli_open_off_turn_in_handler"


def is_api(request) -> bool:
    return request.path.startswith("/api/")


def drop_dead_connections() -> bool:
    """Close every connection that no longer answers; True if there was one (the error was a drop)."""
    dropped = False
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None and not connection.is_usable():
            dropped = True
            connection.close()
    return dropped


def says_connection_lost(error: Exception) -> bool:
    """Whether a database error is the connection going away rather than a failed statement.

    Needed beside drop_dead_connections: a connection lost inside atomic() is already replaced when the
    error gets here (the failed rollback closed it; leaving the block opened a new one). psycopg's own
    errors carry no SQLSTATE, the server's name a connection exception (08) or a shutdown (57P01-57P03);
    a deadlock or a timeout has another state, and SQLite's errors have none at all."""
    state = getattr(error.__cause__, "sqlstate", "")
    return state is None or state.startswith(("08", "57P01", "57P02", "57P03"))


class DatabaseRetryMiddleware:
    """A request whose database connection was dropped (database restart, pg_terminate_backend) runs once
    more on a fresh connection before it fails. Safe because the dropped transaction was rolled back and
    every write the app offers is idempotent on repeat (a submit answers the same, a claim returns the held
    page). Multipart bodies are not kept for a second read, so an upload fails instead of repeating."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        declared = request.META.get("CONTENT_LENGTH") or "0"
        size = int(declared) if declared.isdigit() else 0  # a malformed length is the server's to refuse, not ours
        repeatable = not request.content_type.startswith("multipart/") and size <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if repeatable:
            body = request.body  # read once here so that the retry can read it again
        response = self.get_response(request)
        if getattr(request, RETRY_MARK, False) and repeatable:
            logger.warning("database connection dropped during %s %s: retrying once", request.method, request.path)
            setattr(request, RETRY_MARK, None)  # None: the one retry is spent
            request._stream = io.BytesIO(body)
            request._read_started = False
            response = self.get_response(request)
        return response

    def process_exception(self, request, exception):
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        dropped = drop_dead_connections()  # closes the dead ones whatever the error says
        if not (dropped or says_connection_lost(exception)) or getattr(request, RETRY_MARK, False) is None:
            return None  # not a dropped connection, or the retry failed too: the error stands
        setattr(request, RETRY_MARK, True)
        return JsonResponse({"detail": "retrying", "code": "retry"}, status=503)  # replaced by the retry


class OffTurnResponseMiddleware:
    """Opens a response that waits on something other than the database (a stored file's download:
    `open_off_turn()`) where the web server does not: the test client, a WSGI server. common/asgi.py opens it
    itself, once the request has given back its turn."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        opener = getattr(response, "open_off_turn", None)
        if opener is not None and not getattr(request, OFF_TURN_HERE, False):
            return opener()
        return response


class ServiceUnavailableMiddleware:
    """A service the request needed (the storage, a queue) that is down answers 503 with its message, which
    names the service: the API's error shape on the API, a short page elsewhere; never a bare 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, ServiceUnavailable):
            return None
        logger.warning("%s %s: %s", request.method, request.path, exception)
        if is_api(request):
            return JsonResponse({"detail": str(exception), "code": CODE_BY_STATUS[503]}, status=503)
        return render(request, "503.html", {"detail": str(exception)}, status=503)


class ApiJsonErrorMiddleware:
    """Every API error is JSON, a 5xx included: a client generated from the schema never gets an HTML page
    (Django's own 404 for a path no route matches, a 500 page, a 400 for a malformed request)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if is_api(request) and response.status_code >= 400 and "json" not in response.get("Content-Type", ""):
            status = response.status_code
            detail = "server error" if status >= 500 else "no such API path" if status == 404 else "request refused"
            return JsonResponse({"detail": detail, "code": CODE_BY_STATUS.get(status, "error")}, status=status)
        return response

    def process_exception(self, request, exception):
        if not is_api(request) or getattr(request, RETRY_MARK, False):
            return None
        if isinstance(exception, RequestDataTooBig):  # a JSON or form body over DATA_UPLOAD_MAX_MEMORY_SIZE
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE / 2**20
            detail = f"the request body is over the limit of {limit:.0f} MiB for a body that is not a file upload"
            return JsonResponse({"detail": detail, "code": "too_large"}, status=413)
        if isinstance(exception, SuspiciousOperation):  # too many fields or files, a bad host: the client's fault
            return JsonResponse({"detail": str(exception) or "request refused", "code": "invalid"}, status=400)
        logger.error("API error on %s %s", request.method, request.path, exc_info=exception)
        unavailable = isinstance(exception, DatabaseError)
        return JsonResponse(
            {
                "detail": "the database is unavailable, try again" if unavailable else "server error",
                "code": "unavailable" if unavailable else "server_error",
            },
            status=503 if unavailable else 500,
        )


def content_security_policy(frame_ancestors: str, host: str = "", form_action: str = "") -> str:
    # The live dashboard's WebSocket goes to this host only (`ws:`/`wss:` alone would allow any host).
    sockets = f" ws://{host} wss://{host}" if host else ""
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self' 'unsafe-inline'",  # htmx and a few templates set inline style attributes
            "img-src 'self' data:",
            f"connect-src 'self'{sockets}",
            "object-src 'none'",
            "base-uri 'self'",
            f"form-action 'self'{' ' + form_action if form_action else ''}",
            f"frame-ancestors {frame_ancestors}",
        ]
    )


CSP_FRAME_ANCESTORS_ATTRIBUTE = "csp_frame_ancestors"
CSP_FORM_ACTION_ATTRIBUTE = "csp_form_action"


def allow_framing(response, origins, form_action=()) -> None:
    """Let these origins frame this response, and its forms post to `form_action` origins besides this site;
    the rest of the policy stays as it is."""
    setattr(response, CSP_FRAME_ANCESTORS_ATTRIBUTE, " ".join(origins))
    setattr(response, CSP_FORM_ACTION_ATTRIBUTE, " ".join(form_action))


def allow_framing_by(*origins: str):
    """View decorator: let these origins frame the view's pages, nothing else."""

    def decorate(view):
        def wrapped(request, *args, **kwargs):
            response = view(request, *args, **kwargs)
            allow_framing(response, origins)
            return response

        wrapped.__name__, wrapped.__doc__, wrapped.__wrapped__ = view.__name__, view.__doc__, view
        return wrapped

    return decorate


def _host(request) -> str:
    try:
        return request.get_host()
    except Exception:
        return ""


class ContentSecurityPolicyMiddleware:
    """Scripts from this site only, on every response. A view widens its own frame ancestors (and form
    targets) with `allow_framing` / `allow_framing_by` (or sets the header itself, which is then left alone)."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.frame_ancestors = getattr(settings, "CSP_FRAME_ANCESTORS", "'none'")

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            ancestors = getattr(response, CSP_FRAME_ANCESTORS_ATTRIBUTE, None)
            response["Content-Security-Policy"] = content_security_policy(
                ancestors or self.frame_ancestors, _host(request), getattr(response, CSP_FORM_ACTION_ATTRIBUTE, "")
            )
            if ancestors:
                response.xframe_options_exempt = True  # X-Frame-Options cannot name origins; the CSP does
        return response
