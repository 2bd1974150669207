"""REST API: projects, the worker flow (claim, submit, release), import and streamed export."""
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView
from rest_framework.response import Response

from annotation.models import Assignment, Project
from annotation.serializers import (
    AdjudicateSerializer,
    AdjudicationQueueItemSerializer,
    AdjudicationRecordSerializer,
    AssignmentSerializer,
    ResultSerializer,
    ErrorSerializer,
    ImportSerializer,
    ProjectSerializer,
    SubmitResultSerializer,
    SubmitSerializer,
)
from annotation.services import access, adjudication, exporters
from annotation.services.agreement import INTERACTIVE_PAIR_EVALUATIONS, project_agreement
from annotation.services.assignments import SubmissionError, claim_page, release_page, submit_page
from annotation.services.importers import ImportFileError, import_stream, text_stream
from annotation.services.progress import project_progress
from annotation.services.projects import create_project


class ProjectViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    """Authors see and create their own projects, admins all; workers see the projects they can work on."""

    serializer_class = ProjectSerializer
    lookup_field = "slug"

    def get_queryset(self):
        user = self.request.user
        projects = Project.objects.select_related("owner").order_by("-created_at")
        if access.is_admin(user) or access.has_role(user, access.WORKER):
            return projects
        if access.has_role(user, access.AUTHOR):
            return projects.filter(owner=user)
        return projects.none()

    def create(self, request, *args, **kwargs):
        if not access.has_role(request.user, access.AUTHOR):  # before validation: no hints to non-authors
            raise PermissionDenied("only authors create projects")
        return super().create(request, *args, **kwargs)

    def perform_create(self, serializer):
        data = serializer.validated_data
        try:
            serializer.instance = create_project(
                data["slug"], data["task_type"], self.request.user, title=data.get("title", ""),
                items_per_page=data.get("items_per_page"), redundancy=data.get("redundancy"),
                max_annotations=data.get("max_annotations"), instructions=data.get("instructions", ""),
            )
        except ValueError as exc:
            raise ValidationError({"slug": [str(exc)]}) from None

    def _managed(self):
        project = self.get_object()
        if not access.can_manage(self.request.user, project):
            raise PermissionDenied("only the project's author or an admin may do this")
        return project

    @extend_schema(request=None, responses={201: AssignmentSerializer, 204: OpenApiResponse(description="no work left")})
    @action(detail=True, methods=["post"])
    def claim(self, request, slug=None):
        """Claim the next page of k items (or get back the page you hold)."""
        assignment = claim_page(self.get_object(), request.user)  # DRF answers Django's PermissionDenied with 403
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(AssignmentSerializer(assignment).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: OpenApiResponse(description="progress counts")})
    @action(detail=True, methods=["get"])
    def progress(self, request, slug=None):
        return Response(project_progress(self._managed()))

    @extend_schema(responses={200: AdjudicationQueueItemSerializer(many=True)})
    @action(detail=True, methods=["get"], url_path="adjudication")
    def adjudication_queue(self, request, slug=None):
        """Items waiting for an author: unresolved ties and picked items."""
        page = self.paginate_queryset(adjudication.queue(self._managed()))
        return self.get_paginated_response(AdjudicationQueueItemSerializer(page, many=True).data)

    @extend_schema(request=AdjudicateSerializer, responses={200: AdjudicationRecordSerializer, 400: ErrorSerializer})
    @action(detail=True, methods=["post"])
    def adjudicate(self, request, slug=None):
        """Set an item's final label (slider: a probability), with a note; every change is kept."""
        project = self._managed()
        serializer = AdjudicateSerializer(data=request.data)
        if not serializer.is_valid():  # answer in the documented {"field", "detail"} shape
            field, messages = next(iter(serializer.errors.items()))
            return Response({"field": field, "detail": str(messages[0])}, status=status.HTTP_400_BAD_REQUEST)
        data = serializer.validated_data
        if not project.items.filter(pk=data["item"]).exists():
            return Response({"field": "item", "detail": "no such item in this project"}, status=status.HTTP_400_BAD_REQUEST)
        try:
            record = adjudication.adjudicate(data["item"], request.user, data["value"], data.get("note", ""))
        except SubmissionError as exc:
            return Response({"field": exc.field, "detail": exc.message}, status=exc.status)
        return Response(AdjudicationRecordSerializer(record).data)

    @extend_schema(responses={200: ResultSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def results(self, request, slug=None):
        """Every item with its aggregate, adjudicated and final label."""
        items = self._managed().items.filter(is_gold=False).select_related("example", "atom").order_by("id")
        page = self.paginate_queryset(items)
        return self.get_paginated_response(ResultSerializer(page, many=True).data)

    @extend_schema(
        parameters=[OpenApiParameter("bootstrap", int, description="bootstrap resamples for the intervals (default 200, at most 2000)")],
        responses={200: OpenApiResponse(description="agreement figures")},
    )
    @action(detail=True, methods=["get"])
    def agreement(self, request, slug=None):
        project = self._managed()
        try:
            resamples = min(max(int(request.query_params.get("bootstrap", 200)), 0), 2000)
        except ValueError:
            raise ValidationError({"bootstrap": ["must be a whole number"]}) from None
        return Response(project_agreement(project, bootstrap=resamples, max_pair_evaluations=INTERACTIVE_PAIR_EVALUATIONS))

    @extend_schema(request={"multipart/form-data": ImportSerializer}, responses={200: OpenApiResponse(description="import report")})
    @action(detail=True, methods=["post"], url_path="import", parser_classes=[MultiPartParser])
    def import_file(self, request, slug=None):
        project = self._managed()
        serializer = ImportSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            report = import_stream(project, text_stream(serializer.validated_data["file"].read()), serializer.validated_data["format"])
        except (ImportFileError, UnicodeDecodeError, ValueError) as exc:
            errors = getattr(exc, "errors", [])
            return Response(
                {"detail": str(exc), "errors": [{"line": line, "field": field, "message": msg} for line, field, msg in errors]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        return Response(report.as_dict())

    @extend_schema(
        parameters=[OpenApiParameter("as", str, enum=list(exporters.FORMATS), description="export format")],
        responses={200: OpenApiResponse(description="the exported file, streamed")},
    )
    @action(detail=True, methods=["get"])
    def export(self, request, slug=None):
        project = self._managed()
        fmt = request.query_params.get("as", "jsonl")
        if fmt not in exporters.FORMATS:
            raise ValidationError({"as": [f"choose one of {', '.join(exporters.FORMATS)}"]})
        response = StreamingHttpResponse(exporters.export(project, fmt), content_type=exporters.content_type(fmt))
        response["Content-Disposition"] = f'attachment; filename="{exporters.file_name(project, fmt)}"'
        return response


class AssignmentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """A worker's own pages; submit and release act on one."""

    serializer_class = AssignmentSerializer
    lookup_value_regex = r"[0-9]+"  # page ids only: submit and release read the id as a number

    def get_queryset(self):
        return Assignment.objects.filter(worker=self.request.user).select_related("project").order_by("-created_at")

    @extend_schema(
        request=SubmitSerializer,
        responses={200: SubmitResultSerializer, 400: ErrorSerializer, 403: ErrorSerializer, 409: ErrorSerializer},
    )
    @action(detail=True, methods=["post"])
    def submit(self, request, pk=None):
        """Submit every answer of the page at once; a repeat of the same submission answers the same."""
        answers = request.data.get("answers") if isinstance(request.data, dict) else None
        if answers is None:
            return Response({"field": "answers", "detail": "is required"}, status=status.HTTP_400_BAD_REQUEST)
        try:
            result = submit_page(int(pk), request.user, answers)
        except SubmissionError as exc:
            return Response({"field": exc.field, "detail": exc.message}, status=exc.status)
        except access.PermissionDenied as exc:
            return Response({"field": "worker", "detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        return Response(result.as_dict())

    @extend_schema(request=None, responses={200: AssignmentSerializer})
    @action(detail=True, methods=["post"])
    def release(self, request, pk=None):
        try:
            assignment = release_page(int(pk), request.user)
        except Assignment.DoesNotExist:
            raise NotFound("no such page") from None
        return Response(AssignmentSerializer(assignment).data)


class TokenView(APIView):
    """POST username and password for an API token; DELETE revokes the caller's token."""

    permission_classes = [AllowAny]
    serializer_class = AuthTokenSerializer

    @extend_schema(request=AuthTokenSerializer, responses={200: OpenApiResponse(description='{"token": "..."}'), 400: OpenApiResponse(description="wrong credentials")})
    def post(self, request):
        serializer = AuthTokenSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        token, _ = Token.objects.get_or_create(user=serializer.validated_data["user"])
        return Response({"token": token.key})

    @extend_schema(request=None, responses={204: OpenApiResponse(description="token revoked")})
    def delete(self, request):
        if not request.user.is_authenticated:
            return Response({"detail": "not logged in"}, status=status.HTTP_401_UNAUTHORIZED)
        Token.objects.filter(user=request.user).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
