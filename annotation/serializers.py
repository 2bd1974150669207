from rest_framework import serializers

from annotation.models import AdjudicationRecord, Assignment, Item, Project
from annotation.tasktypes import TASK_TYPE_CHOICES


class ProjectSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)
    task_type = serializers.ChoiceField(choices=TASK_TYPE_CHOICES)

    class Meta:
        model = Project
        fields = [
            "slug", "title", "task_type", "owner", "instructions", "items_per_page",
            "redundancy", "max_annotations", "claim_timeout_minutes", "options", "created_at",
        ]
        read_only_fields = ["owner", "created_at", "options"]


class PageItemSerializer(serializers.ModelSerializer):
    premise = serializers.CharField(source="example.premise")
    hypothesis = serializers.CharField(source="example.hypothesis")
    update = serializers.CharField(source="example.update")
    atom = serializers.CharField(source="atom.text", allow_null=True, default=None)

    class Meta:
        model = Item
        fields = ["id", "premise", "hypothesis", "update", "atom"]


class AssignmentSerializer(serializers.ModelSerializer):
    project = serializers.CharField(source="project.slug")
    items = serializers.SerializerMethodField()

    class Meta:
        model = Assignment
        fields = ["id", "project", "status", "created_at", "expires_at", "submitted_at", "late", "items"]

    def get_items(self, assignment) -> list[dict]:
        claims = assignment.claims.select_related("item__example", "item__atom").order_by("position")
        return PageItemSerializer([claim.item for claim in claims], many=True).data


class AnswerSerializer(serializers.Serializer):
    value = serializers.JSONField(help_text="slider: raw position 0..10000; defeasible: -2..2; validity: valid/invalid; nli: e/n/c")
    reason = serializers.CharField(required=False, allow_blank=True)
    seconds = serializers.FloatField(required=False, help_text="time spent on the item")


class SubmitSerializer(serializers.Serializer):
    answers = serializers.DictField(child=AnswerSerializer(), help_text="keyed by item id")


class SubmitResultSerializer(serializers.Serializer):
    assignment = serializers.IntegerField()
    status = serializers.CharField()
    annotations = serializers.IntegerField()
    late = serializers.BooleanField()
    repeated = serializers.BooleanField()


class ErrorSerializer(serializers.Serializer):
    field = serializers.CharField(required=False, help_text="what is wrong; absent when the body could not be parsed")
    detail = serializers.CharField()


class ImportSerializer(serializers.Serializer):
    file = serializers.FileField()
    format = serializers.ChoiceField(choices=["usnli", "chaosnli", "dnli", "snli", "atoms", "jsonl", "csv"])


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
        fields = ["id", "example_id", "premise", "hypothesis", "atom", "status", "annotation_count", "aggregate", "adjudicated", "final"]

    def get_example_id(self, item) -> str:
        return item.example.source_id or item.example.key


class AdjudicationQueueItemSerializer(ResultSerializer):
    class Meta(ResultSerializer.Meta):
        fields = ResultSerializer.Meta.fields + ["flagged"]


class AdjudicateSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    value = serializers.JSONField(help_text="slider: a probability 0..1; defeasible: -2..2; validity: valid/invalid; nli: e/n/c")
    note = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class AdjudicationRecordSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username")
    before = serializers.JSONField()
    after = serializers.JSONField()

    class Meta:
        model = AdjudicationRecord
        fields = ["id", "item", "author", "before", "after", "note", "created_at"]
