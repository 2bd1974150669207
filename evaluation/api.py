"""REST API for stored evaluation runs: list and read your runs (admins: all), start one by upload."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import BasePermission
from rest_framework.response import Response

from annotation.services import access
from common.api_errors import ErrorSerializer, error_response
from core import roles
from core.throttles import SignedInAfterThrottles
from evaluation.runs import start_run, visible_runs
from evaluation.serializers import (
    RunCreateSerializer,
    RunSerializer,
    RunSummarySerializer,
)
from jobs.kinds import JobError


class IsAuthor(BasePermission):
    message = "evaluation runs are for authors and admins"

    def has_permission(self, request, view):
        return roles.has_role(request.user, roles.AUTHOR)


class EvaluationRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    permission_classes = [SignedInAfterThrottles, IsAuthor]
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self):
        return visible_runs(self.request.user)

    def get_serializer_class(self):
        return RunSummarySerializer if self.action == "list" else RunSerializer

    @extend_schema(
        request={"multipart/form-data": RunCreateSerializer},
        responses={
            201: RunSerializer,
            400: OpenApiResponse(ErrorSerializer, description="a suite, file or setting the schema does not allow"),
            404: OpenApiResponse(ErrorSerializer, description="`project` names no study you can see"),
            409: OpenApiResponse(
                ErrorSerializer, description="the files' content, named by file, line and field; nothing is stored"
            ),
            413: OpenApiResponse(ErrorSerializer, description="a file over the import limit"),
        },
        description="Upload the files and start the run in the background; poll the run until its status is "
        "done or failed. Each suite takes its own files (`gold`, and `predictions` where it reads two) and its own "
        "settings. Problems in the files' content are refused with a 409 naming the file, line and field.",
    )
    def create(self, request):
        serializer = RunCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        project = None
        if data.get("project"):
            project = access.visible_projects(request.user).filter(slug=data["project"]).first()
            if project is None:
                return error_response(404, f"no project {data['project']!r}", "project")
            if not access.can_manage(request.user, project):
                raise PermissionDenied("only the project's author or an admin may evaluate against it")
        try:
            run = start_run(data["suite"], data["parameters"], data["files"], request.user, project=project)
        except JobError as error:  # the files' content (RunError), or the job refused by its queue or its limit
            # The schema takes any bytes as a file: what their content refuses is not a break of the schema.
            return error_response(409, str(error))
        return Response(
            RunSerializer(run).data, status=status.HTTP_201_CREATED, headers={"Location": f"{request.path}{run.pk}/"}
        )

    @extend_schema(
        responses={
            200: OpenApiResponse(description="the suite's result object (see docs/metrics.md)"),
            409: OpenApiResponse(description="the run has not finished, or failed"),
        }
    )
    @action(detail=True, methods=["get"])
    def results(self, request, pk=None):
        """The run's results alone, as the `evaluate ... --json` command prints them."""
        run = self.get_object()
        if run.status != run.Status.DONE:
            return error_response(409, run.error or f"the run is {run.status}", status=run.status, error=run.error)
        return Response(run.result)
