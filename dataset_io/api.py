"""The dataset app's API, under the projects' paths (/api/v1/projects/SLUG/...): import a file, export a study
streamed, and build its dataset bundle as a job. Every route asks the access module first, as the core's do."""

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from annotation.api import ProjectRoutes
from common.api_errors import ErrorSerializer, error_response
from dataset_io.formats import Names
from dataset_io.serializers import BackgroundImportSerializer, ImportSerializer
from dataset_io.services import background, dataset_card, exporters
from dataset_io.services.importers import ImportFileError, check_purpose, check_size, import_upload, label_map_pairs
from dataset_io.services.records import FREE_TEXT_CHOICES

FREE_TEXT_PARAMETER = OpenApiParameter(
    "free_text",
    str,
    enum=list(FREE_TEXT_CHOICES),
    description="the text workers typed (reasons, explanations, written sentences): keep (default), omit, or "
    "scrub e-mail addresses and phone numbers from it",
)


def _import_refused(status_code: int, error: Exception):
    """An import's refusal, with the rows at fault where the file's content was checked."""
    rows = [{"line": line, "field": field, "message": msg} for line, field, msg in getattr(error, "errors", [])]
    return error_response(status_code, str(error), rows[0]["field"] if rows else None, errors=rows)


class DatasetViewSet(ProjectRoutes):
    """Detail routes beside the core's ProjectViewSet, under the same paths and URL names."""

    @extend_schema(
        request={"multipart/form-data": ImportSerializer},
        responses={
            200: OpenApiResponse(description="import report"),
            400: ErrorSerializer,
            409: OpenApiResponse(
                ErrorSerializer,
                description="the file's content, or a format or purpose the study's task type does not take: "
                "`errors` lists the rows at fault as {line, field, message}",
            ),
            413: OpenApiResponse(ErrorSerializer, description="a file over the import limit"),
            202: OpenApiResponse(BackgroundImportSerializer, description="a large file: the background import's job"),
        },
    )
    @action(detail=True, methods=["post"], url_path="import", parser_classes=[MultiPartParser])
    def import_file(self, request, slug=None):
        """Import a file; one with more than 10,000 lines is imported in the background (202 with its job)."""
        project = self._managed()
        serializer = ImportSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        purpose = data.get("purpose", "data")
        label_map = label_map_pairs(data.get("label_map", ""))
        try:
            check_size(data["file"].size)  # before the file is read at all
        except ImportFileError as exc:
            return _import_refused(413, exc)
        try:
            check_purpose(project, purpose)  # before a large file's job is started
            if sum(chunk.count(b"\n") for chunk in data["file"].chunks()) > background.IMPORT_JOB_LINES:
                job = background.start_import(
                    project, data["file"], data["format"], None, purpose, request.user, label_map=label_map
                )
                return Response({"job": job.pk, "url": f"/api/v1/jobs/{job.pk}/"}, status=status.HTTP_202_ACCEPTED)
            report = import_upload(project, data["file"], data["format"], purpose=purpose, label_map=label_map)
        except (ImportFileError, ValueError) as exc:
            # The schema takes any bytes as the file and every study's formats and purposes: what the file's
            # content, the study's task type or its labels refuse conflicts with the study, not the schema.
            return _import_refused(409, exc)
        return Response(report.as_dict())

    @extend_schema(
        parameters=[
            OpenApiParameter("as", str, enum=Names(), description="export format"),
            OpenApiParameter(
                "include_gold",
                bool,
                description="also write the gold checks, flagged with their pool and reference (default: left out)",
            ),
            OpenApiParameter(
                "include_unanswered",
                bool,
                description="also write items without a label or answer yet, flagged (default: left out)",
            ),
            FREE_TEXT_PARAMETER,
        ],
        responses={
            200: OpenApiResponse(description="the exported file, streamed"),
            400: ErrorSerializer,
            404: OpenApiResponse(
                ErrorSerializer,
                description="no such study, or no export in this format for it: the format does not fit its task "
                "type (`field` is `as`; the message lists the formats that do)",
            ),
        },
    )
    @action(detail=True, methods=["get"])
    def export(self, request, slug=None):
        project = self._project("export")
        fmt = request.query_params.get("as", "jsonl")
        try:
            options = exporters.options_from(request.query_params)
            chunks = exporters.export(project, fmt, options)
        except exporters.FormatDoesNotFit as exc:  # the study has no such export: the resource does not exist
            return error_response(404, str(exc), exc.field)
        except exporters.ExportError as exc:
            return error_response(400, str(exc), exc.field)
        exporters.record_export(project, fmt, request.user, via="api", options=options)
        response = StreamingHttpResponse(chunks, content_type=exporters.content_type(fmt))
        response["Content-Disposition"] = f'attachment; filename="{exporters.file_name(project, fmt)}"'
        return response

    @extend_schema(
        request=None,
        parameters=[
            OpenApiParameter("include_gold", bool, description="also write the gold checks, flagged"),
            OpenApiParameter("include_unanswered", bool, description="also write items without a label yet"),
            FREE_TEXT_PARAMETER,
            OpenApiParameter(
                "license",
                str,
                enum=dataset_card.LICENSES,
                description="the card's license: a license id the Hub lists or an SPDX id, in any case",
            ),
            OpenApiParameter(
                "pretty_name",
                {"type": "string", "maxLength": dataset_card.PRETTY_NAME_MAX},
                description="the dataset's name (default: the study's title)",
            ),
            OpenApiParameter("description", str, description="what the dataset is"),
            OpenApiParameter("citation", str, description="how to cite it (BibTeX)"),
            OpenApiParameter(
                "language",
                str,
                pattern=dataset_card.comma_list_pattern(dataset_card.LANGUAGE),
                description="the texts' languages, comma-separated codes",
            ),
            OpenApiParameter(
                "source_datasets",
                str,
                pattern=dataset_card.comma_list_pattern(dataset_card.SOURCE_DATASET),
                description="original, or extended|<dataset>, comma-separated",
            ),
            OpenApiParameter(
                "parquet", str, enum=["yes", "no"], description="Parquet copies (default: docs/formats.md)"
            ),
        ],
        responses={
            202: OpenApiResponse(BackgroundImportSerializer, description="the bundle's job"),
            400: ErrorSerializer,
        },
    )
    @action(detail=True, methods=["post"])
    def bundle(self, request, slug=None):
        """Start building the dataset bundle (every fitting format, instrument versions, data statement,
        validation) as a job; its zip is downloaded from the job once done."""
        project = self._project("export")
        try:
            options = exporters.options_from(request.query_params)
            card = dataset_card.card_from(request.query_params)
            parquet = dataset_card.parquet_from(request.query_params)
        except (exporters.ExportError, dataset_card.CardError) as exc:
            return error_response(400, str(exc), exc.field)
        job = background.start_bundle(project, request.user, options, card, parquet)
        return Response({"job": job.pk, "url": f"/api/v1/jobs/{job.pk}/"}, status=status.HTTP_202_ACCEPTED)
