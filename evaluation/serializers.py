from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers

from common.api_errors import TooLarge
from common.api_fields import Slug, UploadField
from common.api_schema import camel, component, enum_components, setting_schema
from dataset_io.services.importers import ImportFileError, check_size
from evaluation.runs import SUITE_CHOICES, SUITES, RunError, all_settings, clean_parameters
from jobs.models import Job

SETTINGS = all_settings()


class InputFileSerializer(serializers.Serializer):
    role = serializers.CharField()
    name = serializers.CharField()
    size = serializers.IntegerField()
    sha256 = serializers.CharField()


class RunSummarySerializer(serializers.ModelSerializer):
    """An evaluation run (a job of the kind "evaluate") as the API has always shown it."""

    suite = serializers.CharField(source="params.suite")
    parameters = serializers.JSONField(source="params.parameters")
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    project = serializers.CharField(source="project.slug", allow_null=True, default=None)
    inputs = InputFileSerializer(many=True)

    class Meta:
        model = Job
        fields = [
            "id",
            "suite",
            "status",
            "parameters",
            "inputs",
            "error",
            "created_by",
            "project",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class RunSerializer(RunSummarySerializer):
    results = serializers.JSONField(source="result")

    class Meta(RunSummarySerializer.Meta):
        fields = [*RunSummarySerializer.Meta.fields, "results"]
        read_only_fields = fields


class RunCreateSerializer(serializers.Serializer):
    """Multipart upload: the suite, its files and the chosen suite's settings (others are refused)."""

    suite = serializers.ChoiceField(choices=SUITE_CHOICES)
    gold = UploadField(
        help_text="gold / human file; for single-file suites, the input JSONL; for alt-test, per-annotator labels"
    )
    predictions = UploadField(required=False, help_text="needed by unli, chaos, epistemic and alt-test")
    project = Slug(required=False, help_text="slug of the annotation project whose gold this is")

    def get_fields(self):
        fields = super().get_fields()
        for setting in SETTINGS:
            field = setting.serializer_field()
            suites = [suite.name for suite in SUITES.values() if setting.name in suite.settings]
            field.help_text = f"{', '.join(suites)}: {field.help_text}"
            fields[setting.name] = field
        return fields

    def validate(self, attrs):
        suite = SUITES[attrs["suite"]]
        for name in ("gold", "predictions"):
            if attrs.get(name):
                try:
                    check_size(attrs[name].size)
                except ImportFileError as error:  # the schema allows any file: its size is a limit, not a shape
                    raise TooLarge({"detail": error.errors[0][2], "field": name}) from None
        if ("predictions" in suite.files) != bool(attrs.get("predictions")):
            needs = "needs" if "predictions" in suite.files else "takes no"
            raise serializers.ValidationError({"predictions": f"the {suite.name} suite {needs} predictions file"})
        # Only settings the client actually sent (multipart leaves absent booleans as False).
        given = {s.name: attrs[s.name] for s in SETTINGS if s.name in self.initial_data and s.name in attrs}
        try:
            attrs["parameters"] = clean_parameters(suite.name, given)
        except RunError as error:
            raise serializers.ValidationError({"parameters": str(error)}) from None
        attrs["files"] = dict(zip(suite.files, [attrs["gold"], attrs.get("predictions")]))
        return attrs


# Where the files a suite reads come in the request: its first file is `gold`, its second `predictions`.
FILE_FIELDS = ("gold", "predictions")


def run_request_schema(suite, shared: dict) -> dict:
    """POST /api/v1/evaluation/runs/'s body for one suite, from its declaration (evaluation.runs.SUITES): the
    file fields it reads, required, and its own settings; the other suites' settings and a file it does not
    read are refused, so the schema says they are not there. shared: the fields every suite's body has."""
    taken = FILE_FIELDS[: len(suite.files)]
    refused = [name for name in FILE_FIELDS if name not in taken]
    refused += [setting.name for setting in SETTINGS if setting.name not in suite.settings]
    properties = {
        "suite": {"type": "string", "enum": [suite.name], "description": f"{suite.name}: {suite.title}"},
        **{name: shared[name] for name in taken},
        "project": shared["project"],
        **{setting.name: setting_schema(setting) for setting in suite.settings},
        **{name: {"not": {}, "description": f"not read by the {suite.name} suite"} for name in refused},
    }
    return {"type": "object", "properties": properties, "required": ["suite", *taken]}


class RunCreateSchema(OpenApiSerializerExtension):
    """drf-spectacular: one alternative per suite, told apart by `suite`, generated when the schema is."""

    target_class = RunCreateSerializer

    def map_serializer(self, auto_schema, direction):
        shared = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)["properties"]
        references = {}
        for suite in SUITES.values():
            body = run_request_schema(suite, shared)
            body["properties"] = enum_components(auto_schema, body["properties"], "suite", camel(suite.name), "Run")
            references[suite.name] = component(auto_schema, f"{camel(suite.name)}RunCreate", body)["$ref"]
        # anyOf, not oneOf: the alternatives exclude each other already (each its own `suite`), and schemathesis
        # 4.32.5 cannot check a multipart body's files against oneOf (negative cases fail with "Unsupported
        # type: 'Binary'").
        return {
            "anyOf": [{"$ref": reference} for reference in references.values()],
            "discriminator": {"propertyName": "suite", "mapping": references},
            "required": ["suite", "gold"],  # as every alternative: the body itself is required
        }
