"""One error body for the whole API: {"detail", "code", optional "field" and "errors"}.

DRF answers validation errors as {field: [messages]}, authentication errors as {"detail": ...} and lets
everything else fall through to Django's HTML error page. A client generated from the schema needs one
shape, so every API error goes through `api_exception_handler` (set as DRF's EXCEPTION_HANDLER).
The codes are listed in docs/api.md.
"""

import re

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

CODE_BY_STATUS = {
    400: "invalid",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    408: "timeout",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    429: "throttled",
    500: "server_error",
    503: "unavailable",
}


class TooLarge(exceptions.APIException):
    """A request or a file in it over a size limit, raised where DRF validates (a serializer's check)."""

    status_code = 413
    default_code = CODE_BY_STATUS[413]


class ErrorSerializer(serializers.Serializer):
    """The error body, as the OpenAPI schema declares it on every operation (common.api_schema)."""

    field = serializers.CharField(required=False, help_text="what is wrong; absent when the body could not be parsed")
    detail = serializers.CharField(
        help_text="a sentence for a person; where a field is at fault it leads with the field's name (`field: ...`) "
        "unless the message names it already"
    )
    code = serializers.CharField(required=False, help_text="a fixed name for the kind of error (docs/api.md)")
    # A field named like Serializer.errors: DRF's metaclass takes declared fields off the class.
    errors = serializers.JSONField(  # type: ignore[assignment]
        required=False,
        help_text="where several things are wrong: settings as {field: "
        "message}; an import's rows as [{line, field, message}]",
    )


def first_message(value) -> str:
    """The first human message inside DRF's nested lists and dicts."""
    while isinstance(value, (list, dict)) and value:
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
    return str(value) if value not in ([], {}) else "invalid input"


def naming_the_field(field: str | None, message: str) -> str:
    """`detail` read alone still says what is wrong: "items_per_page: must be at least 1". A message that
    already names its field ("no such item in this project", an import's "line 2, field 'hypothesis': ...")
    is left as it is, and so is one about the body as a whole (DRF's non_field_errors)."""
    if field is None or field == api_settings.NON_FIELD_ERRORS_KEY:
        return message
    if re.search(rf"(?<![\w.\[]){re.escape(field)}(?![\w\[])", message):
        return message
    return f"{field}: {message}"


def error_body(status_code: int, data) -> dict:
    """DRF's error data (a string, a list or a {field: messages} dict) in the documented shape."""
    code = CODE_BY_STATUS.get(status_code, "error")
    if isinstance(data, dict) and "detail" in data:
        detail = naming_the_field(data.get("field"), first_message(data["detail"]))
        return {**data, "detail": detail, "code": data.get("code") or code}
    if isinstance(data, dict) and data:
        errors = {str(name): first_message(messages) for name, messages in data.items()}
        field = next(iter(errors))
        return {"detail": naming_the_field(field, errors[field]), "code": code, "field": field, "errors": errors}
    return {"detail": first_message(data) if data else "request refused", "code": code}


def error_response(status_code: int, detail: str, field: str | None = None, errors: dict | list | None = None, **more):
    """A view's own refusal in the documented shape, its code included: {"detail", "code", "field"?, "errors"?}."""
    body: dict[str, object] = {
        "detail": naming_the_field(field, detail),
        "code": CODE_BY_STATUS.get(status_code, "error"),
    }
    if field is not None:
        body["field"] = field
    if errors:
        body["errors"] = errors
    return Response({**body, **more}, status=status_code)


def invalid(serializer) -> Response:
    """A request body the serializer refused: 400 in the documented shape, every wrong field listed."""
    return Response(error_body(400, serializer.errors), status=400)


def api_exception_handler(exc, context):
    # Django's own Http404 and PermissionDenied are what annotation.services.access raises.
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "not found")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or "not allowed")
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # not an API exception: common.middleware answers it (JSON 500, or one retry)
    response.data = error_body(response.status_code, response.data)
    return response
