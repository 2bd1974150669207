from django.conf import settings
from rest_framework import serializers

from evaluation.models import EvaluationRun
from evaluation.runs import SUITE_CHOICES, SUITES, RunError, clean_parameters


class InputFileSerializer(serializers.Serializer):
    role = serializers.CharField()
    name = serializers.CharField()
    size = serializers.IntegerField()
    sha256 = serializers.CharField()


class RunSummarySerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    project = serializers.CharField(source="project.slug", allow_null=True, default=None)
    inputs = InputFileSerializer(many=True)

    class Meta:
        model = EvaluationRun
        fields = ["id", "suite", "status", "parameters", "inputs", "error", "created_by", "project",
                  "created_at", "started_at", "finished_at"]
        read_only_fields = fields


class RunSerializer(RunSummarySerializer):
    class Meta(RunSummarySerializer.Meta):
        fields = RunSummarySerializer.Meta.fields + ["results"]
        read_only_fields = fields


class RunCreateSerializer(serializers.Serializer):
    """Multipart upload: the suite, its files and the chosen suite's settings (others are refused)."""

    suite = serializers.ChoiceField(choices=SUITE_CHOICES)
    gold = serializers.FileField(help_text="gold / human file; for single-file suites, the input JSONL")
    predictions = serializers.FileField(required=False, help_text="needed by unli, chaos and epistemic")
    project = serializers.SlugField(required=False, help_text="slug of the annotation project whose gold this is")
    model = serializers.CharField(required=False, help_text="chaos: model name inside a prediction file")
    divergence = serializers.BooleanField(required=False, help_text="chaos: JS divergence instead of distance")
    seed = serializers.IntegerField(required=False, help_text="chaos: seed of the human split-half baseline")
    weighted = serializers.BooleanField(required=False, help_text="defeasible: weight buckets by support")
    atom_labels = serializers.ChoiceField(choices=["auto", "binary", "ternary"], required=False,
                                          help_text="defeasible: how atom labels are scored")

    SETTINGS = ("model", "divergence", "seed", "weighted", "atom_labels")

    def validate(self, attrs):
        suite = SUITES[attrs["suite"]]
        for name in ("gold", "predictions"):
            upload = attrs.get(name)
            if upload and upload.size > settings.NLI_MAX_IMPORT_BYTES:
                raise serializers.ValidationError({name: "the file is larger than the import limit"})
        if ("predictions" in suite.files) != bool(attrs.get("predictions")):
            needs = "needs" if "predictions" in suite.files else "takes no"
            raise serializers.ValidationError({"predictions": f"the {suite.name} suite {needs} predictions file"})
        # Only settings the client actually sent (multipart leaves absent booleans as False).
        given = {name: attrs[name] for name in self.SETTINGS if name in self.initial_data and name in attrs}
        try:
            attrs["parameters"] = clean_parameters(suite.name, given)
        except RunError as error:
            raise serializers.ValidationError({"parameters": str(error)}) from None
        attrs["files"] = dict(zip(suite.files, [attrs["gold"], attrs.get("predictions")]))
        return attrs
