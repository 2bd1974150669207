from rest_framework import serializers

from common.api_fields import Text, UploadField
from dataset_io.services.importers import IMPORT_FORMATS
from dataset_io.services.importers import PURPOSES as IMPORT_PURPOSES


class ImportSerializer(serializers.Serializer):
    # DRF builds a serializer's fields anew for every instance, so IMPORT_FORMATS (the registry, read when asked)
    # is read per request and in the OpenAPI schema: formats a feature app registers are offered too.
    file = UploadField()
    format = serializers.ChoiceField(
        choices=IMPORT_FORMATS, help_text="one of the formats that fit the project's task type"
    )
    purpose = serializers.ChoiceField(
        choices=list(IMPORT_PURPOSES),
        required=False,
        default="data",
        help_text="data to collect, hidden gold check items, or qualification test items; a study takes those "
        "its task type takes (a per-atom study's test items are picked on its page, not imported): another is "
        "refused, naming them",
    )
    label_map = Text(
        required=False,
        allow_blank=True,
        max_length=2000,
        help_text="how the file's label values map onto the study's labels: VALUE=LABEL pairs separated by commas "
        "or new lines (e.g. 0=contradiction,1=neutral,2=entailment); a value outside the study's labels "
        "without a mapping refuses the file",
    )


class BackgroundImportSerializer(serializers.Serializer):
    """The answer to a file too large to import at once: the job that imports it."""

    job = serializers.IntegerField(help_text="the job's id (GET /api/v1/jobs/{id}/ follows it)")
    url = serializers.CharField(help_text="the job's API address")
