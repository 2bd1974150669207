"""REST API of jobs: list and read your jobs (admins: all), follow their progress, cancel them."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission
from rest_framework.response import Response

from core import roles
from core.throttles import SignedInAfterThrottles
from jobs import files, services, workers
from jobs.models import Job
from jobs.views import download_name as _download_name


class IsAuthor(BasePermission):
    message = "background jobs are for authors and admins"

    def has_permission(self, request, view):
        return roles.has_role(request.user, roles.AUTHOR)


class JobSerializer(serializers.ModelSerializer):
    title = serializers.CharField(read_only=True)
    percent = serializers.FloatField(read_only=True)
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    project = serializers.CharField(source="project.slug", allow_null=True, default=None)
    output_url = serializers.SerializerMethodField()
    waiting_reason = serializers.SerializerMethodField(
        help_text="why a queued job has not started: no live worker takes its queue (empty otherwise)"
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "title",
            "status",
            "done",
            "total",
            "percent",
            "params",
            "inputs",
            "result",
            "error",
            "cancel_requested",
            "created_by",
            "project",
            "created_at",
            "started_at",
            "finished_at",
            "output_url",
            "queue",
            "worker",
            "time_limit",
            "attempts",
            "waiting_reason",
        ]
        read_only_fields = fields

    def get_waiting_reason(self, job) -> str:
        return workers.waiting_reason(job)

    def get_output_url(self, job) -> str | None:
        return f"/api/v1/jobs/{job.pk}/output/" if job.status == Job.Status.DONE and job.output else None


class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = JobSerializer
    permission_classes = [SignedInAfterThrottles, IsAuthor]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        workers.reap_dead_when_looked_at()  # a job of a dead worker is shown failed, not running

    def get_queryset(self):
        return roles.visible_runs(self.request.user, Job.objects.select_related("created_by", "project"))

    @extend_schema(
        request=None,
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            404: OpenApiResponse(description="no output"),
            503: OpenApiResponse(description="the storage is down or does not answer in time (named in detail)"),
        },
    )
    @action(detail=True, methods=["get"])
    def output(self, request, pk=None):
        """The file the job wrote, streamed from the storage (a trained model: its checkpoint archive)."""
        job = self.get_object()
        if job.status != Job.Status.DONE or not job.output:
            raise NotFound("this job has no output file")
        return files.download_response(job.output, _download_name(job), api=True)

    @extend_schema(request=None, responses={200: JobSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Ask the job to stop: a queued job never starts, a running one stops at its next step."""
        return Response(JobSerializer(services.cancel(self.get_object())).data)
