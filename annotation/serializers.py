from rest_framework import serializers

from annotation.models import AdjudicationRecord, Assignment, Item
from annotation.services.study_settings import all_settings, settings_schema
from annotation.tasktypes import TASK_TYPE_CHOICES, TASK_TYPES

SETTINGS = all_settings()
COLUMN_SETTINGS = [setting.name for setting in SETTINGS if setting.column]


def settings_from(validated: dict) -> dict:
    """The settings a project request gives: its column settings and the entries of `options`."""
    given = {name: validated[name] for name in COLUMN_SETTINGS if name in validated}
    return {**given, **validated.get("options", {})}


class ProjectSerializer(serializers.Serializer):
    """A project as its author sees it. Settings are checked by the project service against the task type's
    schema; `options` holds the task type's own settings and the study's crowd settings."""

    slug = serializers.SlugField(max_length=80)
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
# deriving the fields from the model again for each answer cost more than the rest of the serialising.
class PageItemSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    premise = serializers.CharField(source="example.premise")
    hypothesis = serializers.CharField(source="example.hypothesis")
    update = serializers.CharField(source="example.update")
    atom = serializers.CharField(source="atom.text", allow_null=True, default=None)


class AssignmentSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    project = serializers.CharField(source="project.slug")
    status = serializers.ChoiceField(choices=Assignment.Status.choices, required=False)
    created_at = serializers.DateTimeField(read_only=True)
    expires_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField(allow_null=True, required=False)
    late = serializers.BooleanField(required=False)
    items = serializers.SerializerMethodField()

    def get_items(self, assignment) -> list[dict]:
        items = getattr(assignment, "page_items", None)  # a page just claimed carries its items
        if items is None:
            claims = assignment.claims.select_related("item__example", "item__atom").order_by("position")
            items = [claim.item for claim in claims]
        return PageItemSerializer(items, many=True).data


class AnswerSerializer(serializers.Serializer):
    value = serializers.JSONField(
        help_text="; ".join(f"{task.label}: {task.answer_help}" for task in TASK_TYPES.values())
    )
    reason = serializers.CharField(required=False, allow_blank=True)
    seconds = serializers.FloatField(required=False, help_text="time spent on the item")
    reasons = serializers.ListField(
        child=serializers.CharField(),
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
    value = serializers.JSONField(
        help_text="the final label as the task type reads it (a slider's: a probability from 0 to 1)"
    )
    note = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class AdjudicationRecordSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username")
    before = serializers.JSONField()
    after = serializers.JSONField()

    class Meta:
        model = AdjudicationRecord
        fields = ["id", "item", "author", "before", "after", "note", "created_at"]
