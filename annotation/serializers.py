from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers

from annotation.models import AdjudicationRecord, Assignment, Item
from annotation.services.answers import MAX_REASON_CHARS, MAX_SECONDS
from annotation.services.study_settings import all_settings, settings_schema
from annotation.tasktypes import TASK_TYPE_CHOICES, TASK_TYPES
from common.api_fields import JSONValueField, Slug, Text
from common.api_schema import camel, component, enum_components, setting_schema

SETTINGS = all_settings()
COLUMN_SETTINGS = [setting.name for setting in SETTINGS if setting.column]


def settings_from(validated: dict) -> dict:
    """The settings a project request gives: its column settings and the entries of `options`."""
    given = {name: validated[name] for name in COLUMN_SETTINGS if name in validated}
    return {**given, **validated.get("options", {})}


class ProjectSerializer(serializers.Serializer):
    """A project as its author sees it. Settings are checked by the project service against the task type's
    schema; `options` holds the task type's own settings and the study's crowd settings."""

    slug = Slug(max_length=80)
    task_type = serializers.ChoiceField(choices=TASK_TYPE_CHOICES)
    owner = serializers.CharField(source="owner.username", read_only=True)
    created_at = serializers.DateTimeField(read_only=True)
    options = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="task-type and crowd settings: "
        + "; ".join(f"{setting.name} ({setting.help})" for setting in SETTINGS if not setting.column),
    )

    def get_fields(self):
        fields = super().get_fields()
        fields["task_type"].choices = TASK_TYPE_CHOICES  # the registry now: plug-ins may register after import
        for name in COLUMN_SETTINGS:
            fields[name] = SETTINGS.get(name).serializer_field()
        return fields

    def validate_options(self, value):
        if value is None:
            return {}  # null: no settings given
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be an object of settings")
        return value

    def to_representation(self, project):
        data = super().to_representation(project)
        # Without a say-so from the caller a project is shown as a worker sees it: the safe default.
        may_manage = self.context.get("may_manage")
        if may_manage is None or not may_manage(project):
            # What the work is, never how it is checked or paid (completion codes); a crowd worker's own
            # code appears once they have earned it.
            data = {name: value for name, value in data.items() if name in WORKER_FIELDS}
            shown = {
                setting.name
                for setting in settings_schema(project.task)
                if setting.worker_visible and not setting.column
            }
            data["options"] = {name: value for name, value in project.options.items() if name in shown}
            earned_code = self.context.get("earned_code")
            code = earned_code(project) if earned_code else None
            if code:
                data["completion_code"] = code
        return data


def project_request_schema(task, creating: bool) -> dict:
    """The body of a project request for a study of this task type, from its settings' declarations
    (study_settings.settings_schema): the column settings beside `slug` and `task_type`, the others in
    `options`, which takes no other name. creating: POST's body (slug and task type required), else PATCH's."""
    declared = settings_schema(task)
    properties: dict = {}
    if creating:
        # ProjectSerializer's SlugField: trimmed, then letters, digits, hyphens and underscores.
        properties["slug"] = {"type": "string", "maxLength": 80, "pattern": "^[-a-zA-Z0-9_]+$"}
    properties["task_type"] = {"type": "string", "enum": [task.name], "description": f"{task.name}: {task.label}"}
    properties.update({setting.name: setting_schema(setting) for setting in declared if setting.column})
    # Another task type's own column setting (a slider's `adaptive`) is refused: the schema says it is absent.
    properties.update(
        {
            setting.name: {"not": {}, "description": f"not a setting of {task.label} studies"}
            for setting in all_settings()
            if setting.column and setting.name not in declared
        }
    )
    properties["options"] = {
        "type": "object",
        "nullable": True,
        "description": "the task type's and the crowd settings; null or left out: the defaults",
        "properties": {
            setting.name: setting_schema(setting, nullable=True) for setting in declared if not setting.column
        },
        "additionalProperties": False,
    }
    return {"type": "object", "properties": properties, **({"required": ["slug", "task_type"]} if creating else {})}


def project_request_schemas(creating: bool) -> dict[str, dict]:
    """Every task type's body, keyed by task type: the registry as it is now (plug-ins included)."""
    return {name: project_request_schema(task, creating) for name, task in TASK_TYPES.items()}


class ProjectCreateRequest(serializers.Serializer):
    """POST /api/v1/projects/'s body as the schema states it: one alternative per task type, told apart by
    `task_type` (ProjectRequestSchema). The view reads the body with ProjectSerializer."""


class ProjectChangeRequest(serializers.Serializer):
    """PATCH /api/v1/projects/SLUG/'s body as the schema states it: the settings of one task type or another
    (the path does not say the study's); a setting the study's task type does not have is refused with 409."""


class ProjectRequestSchema(OpenApiSerializerExtension):
    """drf-spectacular: the project request bodies generated when the schema is, from the task types then
    registered, one component per task type."""

    target_class: type[serializers.Serializer] = ProjectCreateRequest
    creating = True

    def map_serializer(self, auto_schema, direction):
        references = {}
        for name, body in project_request_schemas(self.creating).items():
            body = {
                **body,
                "properties": enum_components(auto_schema, body["properties"], "task_type", camel(name), "Project"),
            }
            component_name = f"{camel(name)}Project{'Create' if self.creating else 'Change'}"
            references[name] = component(auto_schema, component_name, body)["$ref"]
        alternatives = [{"$ref": reference} for reference in references.values()]
        if not self.creating:  # task_type optional: any task type's settings may fit the study's
            return {"anyOf": alternatives}
        return {
            "oneOf": alternatives,
            "discriminator": {"propertyName": "task_type", "mapping": references},
            "required": ["slug", "task_type"],  # as every alternative: the body itself is required
        }


class ProjectChangeRequestSchema(ProjectRequestSchema):
    target_class = ProjectChangeRequest
    creating = False


# What a worker is shown of a project: what it is, and the settings each declares workers see.
WORKER_FIELDS = (
    "slug",
    "task_type",
    "owner",
    "created_at",
    "status",
    *(setting.name for setting in SETTINGS if setting.column and setting.worker_visible),
)


# Every claim answers with these two. Plain serializers with their fields written out, not ModelSerializers:
# deriving the fields from the model again for each answer cost more than the rest of the serialising. The
# declared fields are the schema; to_representation reads the values itself and formats each with its declared
# field, as DRF's would (None kept as None), without DRF building and binding a copy of every field per answer
# (0.23 ms of a claim's ~4 ms of CPU). tests/annotation/test_page_answer.py holds the two to the same output.
def represented(serializer: serializers.Serializer, values: dict) -> dict:
    """DRF's Serializer.to_representation for values already read: each through its declared field."""
    fields = serializer._declared_fields
    return {name: None if value is None else fields[name].to_representation(value) for name, value in values.items()}


class PageItemSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    premise = serializers.CharField(source="example.premise")
    hypothesis = serializers.CharField(source="example.hypothesis")
    update = serializers.CharField(source="example.update")
    atom = serializers.CharField(source="atom.text", allow_null=True, default=None)

    def to_representation(self, item):
        example, atom = item.example, item.atom
        return represented(
            self,
            {
                "id": item.id,
                "premise": example.premise,
                "hypothesis": example.hypothesis,
                "update": example.update,
                "atom": None if atom is None else atom.text,
            },
        )


class AssignmentSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    project = serializers.CharField(source="project.slug")
    status = serializers.ChoiceField(choices=Assignment.Status.choices, required=False)
    created_at = serializers.DateTimeField(read_only=True)
    expires_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField(allow_null=True, required=False)
    late = serializers.BooleanField(required=False)
    items = serializers.SerializerMethodField()

    def to_representation(self, assignment):
        shown = represented(
            self,
            {
                "id": assignment.id,
                "project": assignment.project.slug,
                "status": assignment.status,
                "created_at": assignment.created_at,
                "expires_at": assignment.expires_at,
                "submitted_at": assignment.submitted_at,
                "late": assignment.late,
            },
        )
        shown["items"] = self.get_items(assignment)
        return shown

    def get_items(self, assignment) -> list[dict]:
        items = getattr(assignment, "page_items", None)  # a page just claimed carries its items
        if items is None:
            claims = assignment.claims.select_related("item__example", "item__atom").order_by("position")
            items = [claim.item for claim in claims]
        page_item = PageItemSerializer()
        return [page_item.to_representation(item) for item in items]


NO_NUL = RegexValidator(r"^[^\u0000]*$", "contains a NUL character")  # as DRF refuses them: the schema says so


class AnswerSerializer(serializers.Serializer):
    value = serializers.JSONField(
        help_text="; ".join(f"{task.label}: {task.answer_help}" for task in TASK_TYPES.values())
    )
    # The bounds annotation.services.answers checks, stated in the schema.
    reason = Text(
        required=False,
        allow_blank=True,
        max_length=MAX_REASON_CHARS,
        validators=[NO_NUL],
    )
    seconds = serializers.FloatField(
        required=False, min_value=0, max_value=MAX_SECONDS, help_text="time spent on the item, under a week"
    )
    reasons = serializers.ListField(
        child=Text(min_length=1, validators=[NO_NUL]),
        required=False,
        help_text="optional disagreement reasons for the item, tags of the study's taxonomy, where the study's "
        "reason_taggers setting is workers (refused otherwise)",
    )


class SubmitSerializer(serializers.Serializer):
    answers = serializers.DictField(child=AnswerSerializer(), help_text="keyed by item id")


class SubmitResultSerializer(serializers.Serializer):
    assignment = serializers.IntegerField()
    status = serializers.CharField()
    annotations = serializers.IntegerField()
    late = serializers.BooleanField()
    repeated = serializers.BooleanField()


class ResultSerializer(serializers.ModelSerializer):
    example_id = serializers.SerializerMethodField()
    premise = serializers.CharField(source="example.premise")
    hypothesis = serializers.CharField(source="example.hypothesis")
    atom = serializers.CharField(source="atom.text", allow_null=True, default=None)
    final = serializers.JSONField(source="final_value")
    aggregate = serializers.JSONField()
    adjudicated = serializers.JSONField()

    class Meta:
        model = Item
        fields = [
            "id",
            "example_id",
            "premise",
            "hypothesis",
            "atom",
            "status",
            "annotation_count",
            "aggregate",
            "adjudicated",
            "final",
        ]

    def get_example_id(self, item) -> str:
        return item.example.source_id or item.example.key


class AdjudicationQueueItemSerializer(ResultSerializer):
    class Meta(ResultSerializer.Meta):
        fields = [*ResultSerializer.Meta.fields, "flagged"]


class AdjudicateSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    value = JSONValueField(
        help_text="the final label as the task type reads it (a slider's: a probability from 0 to 1)"
    )
    note = Text(required=False, allow_blank=True, max_length=5000)


class AdjudicationRecordSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username")
    before = serializers.JSONField()
    after = serializers.JSONField()

    class Meta:
        model = AdjudicationRecord
        fields = ["id", "item", "author", "before", "after", "note", "created_at"]
