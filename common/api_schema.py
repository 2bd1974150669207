"""The published API schema tells the truth about errors: every operation lists every error status the
API can answer, each with the one error body (common.api_errors), and only the versioned /api/v1/ paths
are published (the unversioned /api/ paths are kept as aliases of the same views)."""

import re

from django.core.validators import ProhibitNullCharactersValidator
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
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
    _direction = None  # which way the fields being mapped go: drf-spectacular does not tell its validator hook

    def _map_basic_serializer(self, serializer, direction):
        outer, self._direction = self._direction, direction
        try:
            return super()._map_basic_serializer(serializer, direction)
        finally:
            self._direction = outer

    def _insert_field_validators(self, field, schema):
        super()._insert_field_validators(field, schema)
        if schema.get("type") != "string" or {"enum", "format"} & set(schema):
            return
        # DRF's CharField refuses NUL characters (PostgreSQL cannot store them): where no pattern says more,
        # a request's schema says so too. Unless it allows blank, it strips a value before checking it, so it
        # also refuses one of whitespace only ("\n"). Not said of answers: an error's `field` and `detail`
        # name what the request sent, NUL included, and a field may well be empty.
        refuses_nul = any(isinstance(v, ProhibitNullCharactersValidator) for v in field.validators)
        refuses_blank = isinstance(field, serializers.CharField) and field.trim_whitespace and not field.allow_blank
        if refuses_nul and "pattern" not in schema and self._direction == "request":
            schema["pattern"] = NO_NUL
        if refuses_blank and self._direction == "request" and schema.get("pattern") == NO_NUL:
            schema["pattern"] = NOT_BLANK_NO_NUL

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


# ---------------------------------------------------------------------- settings in the schema
# A setting (common.schema.Setting) as the request schema states it, generated from its declaration: its kind,
# bounds and choices; the one value of a fixed one. What Setting.clean checks beyond that (a JSON setting's
# own rules, settings that contradict each other, the state of what they are set on) no schema states: a
# request the schema allows and the server refuses for such a rule is answered 409; one it does not allow is
# refused with 400 before any rule runs (schema_refusal), so that nothing the schema refuses is taken.
NO_NUL = "^[^\\u0000]*$"  # Setting.clean and DRF's CharField refuse NUL characters
# One character at least that is neither NUL nor whitespace as str.strip() has it (spelled out: Python's,
# ECMAScript's and Rust's \s each differ on a few characters).
STRIPPED_WHITESPACE = "\\t-\\r\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
NOT_BLANK_NO_NUL = f"^[^\\u0000]*[^\\u0000{STRIPPED_WHITESPACE}][^\\u0000]*$"


def setting_schema(setting, nullable: bool = False) -> dict:
    """OpenAPI 3.0 schema of a setting's value; nullable where null means "the default" (an `options` entry)."""
    schema: dict = {"description": setting.help}
    if setting.fixed:
        schema["enum"] = [setting.default]
    elif setting.kind == "bool":
        schema["type"] = "boolean"
    elif setting.kind in ("int", "float"):
        schema["type"] = "integer" if setting.kind == "int" else "number"
        for key, bound in (("minimum", setting.minimum), ("maximum", setting.maximum)):
            if bound is not None:
                schema[key] = bound
    elif setting.kind in ("str", "text"):
        schema.update({"type": "string", "pattern": NO_NUL})
        if setting.max_length is not None:
            schema["maxLength"] = setting.max_length
    elif setting.kind == "choice":
        schema["enum"] = [list(value) if isinstance(value, tuple) else value for value, _ in setting.choices]
    elif setting.kind == "json":
        schema.update(setting.json_schema or {})  # without one: any JSON, its check deciding
    elif setting.kind == "project":
        schema.update({"type": "string", "pattern": "^\\s*[-a-zA-Z0-9_]*\\s*$"})
        nullable = True  # null or "" clears the link
    if nullable:
        schema["nullable"] = True
        if "enum" in schema:  # OpenAPI 3.0.3: `nullable` adds null to a type, not to an enum's values
            schema["enum"].append(None)
    return schema


def allows(schema: dict, value) -> bool:
    """Whether `value` is valid under an OpenAPI 3.0 schema that holds no $ref (as setting_schema makes them)."""
    import jsonschema_rs  # here, not at the top: only a refused request needs it

    return jsonschema_rs.Draft4Validator(_as_json_schema(schema)).is_valid(value)


def _as_json_schema(schema):
    """OpenAPI 3.0's `nullable` as JSON Schema says it; the rest of the subset used here is the same."""
    if isinstance(schema, list):
        return [_as_json_schema(part) for part in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {
        key: value if key == "enum" else _as_json_schema(value) for key, value in schema.items() if key != "nullable"
    }
    if not schema.get("nullable"):
        return converted
    # Where it can, null joins the type or the values rather than an anyOf, whose refusal names no field.
    if isinstance(converted.get("type"), str):
        return {**converted, "type": [converted["type"], "null"]}
    if None in converted.get("enum", ()):
        return converted
    return {"anyOf": [converted, {"type": "null"}]}


def component(auto_schema, name: str, schema: dict) -> dict:
    """Register `schema` as the component `name` (once) and return its reference. A request body made of
    several (one per task type, one per suite) names its alternatives, and their enums, here: the enum hook
    would name each alternative's one-value enum after a hash."""
    resolved = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, object=name, schema=schema)
    auto_schema.registry.register_on_missing(resolved)
    return resolved.ref


def camel(name: str) -> str:
    """word_word, alt-test -> WordWord, AltTest: a component name's part."""
    return "".join(part.capitalize() for part in re.split(r"[-_]", name))


def enum_components(auto_schema, properties: dict, own: str, owner: str, shared_owner: str) -> dict:
    """`properties` with each enum a component: `own`'s (task_type, suite) named after its `owner` (the one
    task type or suite), the others' after `shared_owner` (the same choices in every alternative)."""
    published = {}
    for name, declared in properties.items():
        if "enum" in declared:
            enum = {key: value for key, value in declared.items() if key not in ("description", "nullable")}
            reference = component(auto_schema, f"{owner if name == own else shared_owner}{camel(name)}Enum", enum)
            declared = {
                "allOf": [reference],
                **{key: declared[key] for key in ("description", "nullable") if key in declared},
            }
        published[name] = declared
    return published


def schema_refusal(body, schemas: list[dict], own: dict) -> tuple[str | None, str] | None:
    """Where a project's request body fits none of `schemas` (the operation's alternatives): the field at
    fault (a setting, in `options` or beside it) and what is wrong, read against `own` (the alternative the
    request meant: its task type's); else None."""
    if any(allows(schema, body) for schema in schemas):
        return None
    import jsonschema_rs

    for error in jsonschema_rs.Draft4Validator(_as_json_schema(own)).iter_errors(body):
        names = [part for part in error.instance_path if isinstance(part, str)]
        # A name the body should not have, or should have, is the field at fault, not the object holding it;
        # a setting in `options` is named itself, however deep in its value the fault lies.
        kind = error.kind.as_dict()
        names += [str(name) for name in kind.get("unexpected") or [kind.get("property")] if name is not None]
        field = names[1] if names[:1] == ["options"] and len(names) > 1 else next(iter(names), None)
        return (field, error.message)
    return (None, "fits none of the published request bodies")
