"""Request fields that take what the published schema says they take, no more: DRF's own are more lenient
than the schema drf-spectacular writes for them (a number taken as text, a length or pattern checked after
trimming whitespace), so a request the schema refuses would be taken. Every writable text field of a request
is a Text (tests/security/test_api_schema_unions.py checks it)."""

from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.validators import validate_slug
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.utils import html


class Text(serializers.CharField):
    """Text as the schema states it: a JSON string (DRF's CharField takes 3 as "3"), at most max_length
    characters as sent (DRF's counts them after trimming, so whitespace around a value would let it past the
    schema's maxLength)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        if self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class Slug(Text):
    """A slug as sent: no whitespace trimmed away first, none let through before the end (DRF's SlugField
    ends its pattern with `$`, which in Python also matches before a final newline)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)
        self.validators.append(validate_slug)


@extend_schema_field({"type": "string", "format": "binary"})
class UploadField(serializers.FileField):
    """A file part of a multipart request: `format: binary` in the schema (the default `uri` is how a stored
    file is answered, not how one is sent). The schema takes any bytes, so what reads the file judges them:
    an empty file is its to refuse, naming it, and a part sent without a file name (curl's `-F 'file=<x.csv'`)
    is the file's content."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_empty_file", True)
        super().__init__(**kwargs)

    def get_value(self, dictionary):
        # DRF reads an empty form part of an optional field as left out: here it is an empty file.
        if html.is_html_input(dictionary) and dictionary.get(self.field_name) == "":
            return ""
        return super().get_value(dictionary)

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = SimpleUploadedFile(self.field_name, data.encode())
        return super().to_internal_value(data)


# Any JSON value but null (DRF's JSONField refuses null unless allow_null); OpenAPI 3.0 has no "any type"
# that leaves null out, so the schema lists the others.
@extend_schema_field(
    {"anyOf": [{"type": kind} for kind in ("string", "number", "boolean", "object")] + [{"type": "array", "items": {}}]}
)
class JSONValueField(serializers.JSONField):
    """A JSON value that is not null."""
