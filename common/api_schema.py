"""The published API schema tells the truth about errors: every operation lists every error status the
API can answer, each with the one error body (common.api_errors), and only the versioned /api/v1/ paths
are published (the unversioned /api/ paths are kept as aliases of the same views)."""

import re

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from common.api_errors import ErrorSerializer

API_VERSION_PREFIX = "/api/v1/"

# Status -> when the API answers it. Every operation can meet each of these (DRF's content negotiation,
# authentication, the access module's 404-then-403 policy, the throttles, the JSON 5xx middleware).
ERROR_STATUSES = {
    "400": "the request was refused: `field` names what is wrong",
    "401": "no or a wrong token / session (code `not_authenticated` or `authentication_failed`)",
    "403": "authenticated, but not allowed to do this (code `permission_denied`)",
    "404": "no such object, or one you may not see (code `not_found`)",
    "405": "the method is not offered here (code `method_not_allowed`)",
    "406": "no answer in the media type asked for (code `not_acceptable`)",
    "415": "a request body in a media type the operation does not read (code `unsupported_media_type`)",
    "429": "too many requests or failed logins: retry after `Retry-After` seconds (code `throttled`)",
    "500": "a bug on the server (code `server_error`)",
    "503": "the database was unavailable, even after one retry (code `unavailable`)",
}


class ErrorsDeclaredSchema(AutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        error = self._get_response_for_code(ErrorSerializer, "400", direction=direction)
        for code, description in ERROR_STATUSES.items():
            declared = responses.get(code, {})
            responses[code] = {
                **error,
                **declared,
                "content": declared.get("content", error["content"]),
                "description": declared.get("description") or description,
            }
        responses["429"]["headers"] = {
            "Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait before the next try"}
        }
        return responses


def only_versioned_paths(endpoints, **kwargs):
    """drf-spectacular preprocessing hook: publish /api/v1/ only (the /api/ aliases answer the same)."""
    return [endpoint for endpoint in endpoints if endpoint[0].startswith(API_VERSION_PREFIX)]


# Where one operation's answer names what other operations act on: the answer (method, path, status), the
# value it names (a JSON pointer into its body), the path parameter that takes the value and the path under
# which every operation takes it. Published as OpenAPI links, which stateful clients (schemathesis' state
# machine) follow. An evaluation run is a job, so its id is also followed under /api/v1/jobs/.
PATH_PARAMETER = re.compile(r"{(\w+)}")
LINKS = [
    ("post", "/api/v1/projects/", "201", "/slug", "slug", "/api/v1/projects/{slug}/"),
    ("post", "/api/v1/projects/{slug}/claim/", "201", "/id", "id", "/api/v1/assignments/{id}/"),
    ("post", "/api/v1/evaluation/runs/", "201", "/id", "id", "/api/v1/evaluation/runs/{id}/"),
    ("post", "/api/v1/evaluation/runs/", "201", "/id", "id", "/api/v1/jobs/{id}/"),
    ("post", "/api/v1/projects/{slug}/import/", "202", "/job", "id", "/api/v1/jobs/{id}/"),
    ("post", "/api/v1/projects/{slug}/bundle/", "202", "/job", "id", "/api/v1/jobs/{id}/"),
]


def declare_links(result, generator, request, public):
    """drf-spectacular postprocessing hook: add LINKS to the responses they start from. A link whose
    answer has no body, or whose path matches no operation, is an error here rather than a silent gap."""
    paths = result["paths"]
    for method, path, status, pointer, parameter, under in LINKS:
        response = paths[path][method]["responses"][status]
        if "content" not in response:
            raise ValueError(f"{method.upper()} {path} {status} has no body for a link to read {pointer} from")
        # A link fills one path parameter: operations that need another one too (an item of the project) are
        # not reachable from it alone.
        targets = [
            operation["operationId"]
            for target_path, operations in paths.items()
            if target_path.startswith(under) and set(PATH_PARAMETER.findall(target_path)) == {parameter}
            for operation in operations.values()
        ]
        if not targets:
            raise ValueError(f"no operation under {under} for the link from {method.upper()} {path} {status}")
        links = response.setdefault("links", {})
        for operation_id in targets:
            links[operation_id] = {"operationId": operation_id, "parameters": {parameter: f"$response.body#{pointer}"}}
    return result


@extend_schema_field({"type": "string", "format": "binary"})
class UploadField(serializers.FileField):
    """A file part of a multipart request: `format: binary` in the schema (the default `uri` is how a stored
    file is answered, not how one is sent)."""
