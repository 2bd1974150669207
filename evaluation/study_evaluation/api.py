"""The study evaluation's API, under the projects' paths (/api/v1/projects/SLUG/evaluations/): list a study's
evaluations, start one (the page's form as JSON; the same service checks everything before a job is stored)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from annotation.api import CONFLICT, ProjectRoutes
from common.api_errors import ErrorSerializer, error_response, invalid
from common.api_fields import Text
from core import roles
from evaluation.study_evaluation.protocols import SETTINGS
from evaluation.study_evaluation.views import study_evaluations
from jobs.services import JobError

# The settings with their bounds in the schema: a value out of bounds breaks the request (400).
StudyEvaluationSettingsSerializer = type(
    "StudyEvaluationSettingsSerializer", (serializers.Serializer,), SETTINGS.serializer_fields()
)


class StudyEvaluationSerializer(serializers.Serializer):
    models = serializers.ListField(
        child=Text(min_length=1, max_length=300),
        min_length=1,
        help_text="registry keys of the checkpoints",
    )
    collected_only = serializers.BooleanField(default=False)
    bucket_nli = Text(required=False, allow_blank=True, max_length=300)
    bucket_embedder = Text(required=False, allow_blank=True, max_length=300)
    baseline = Text(
        required=False,
        allow_blank=True,
        max_length=300,
        help_text="slider studies: a UNLI checkpoint run on the hypotheses alone (the hypothesis-only baseline)",
    )
    queue = serializers.ChoiceField(choices=["", "default", "gpu"], default="")
    settings = StudyEvaluationSettingsSerializer(required=False)


class StudyEvaluationRoutes(ProjectRoutes):
    @extend_schema(
        methods=["post"],
        request=StudyEvaluationSerializer,
        responses={
            202: OpenApiResponse(description="the evaluation's job"),
            400: ErrorSerializer,
            404: OpenApiResponse(ErrorSerializer, description="a checkpoint the body names is not among yours"),
            409: CONFLICT,
        },
    )
    @extend_schema(methods=["get"], responses={200: OpenApiResponse(description="the study's evaluations")})
    @action(detail=True, methods=["get", "post"], url_path="evaluations")
    def evaluations(self, request, slug=None):
        """A study's model evaluations, newest first; POST starts one (docs/models.md, 'Evaluating a study')."""
        roles.ensure_role(request.user, roles.AUTHOR, "run models")
        project = self._managed()
        if request.method == "GET":
            return Response(
                [
                    {
                        "job": job.pk,
                        "status": job.status,
                        "models": list(job.params.get("models", {})),
                        "url": f"/api/v1/jobs/{job.pk}/",
                        "created_at": job.created_at,
                    }
                    for job in study_evaluations(project)
                ]
            )
        serializer = StudyEvaluationSerializer(data=request.data)
        if not serializer.is_valid():
            return invalid(serializer)
        from evaluation.study_evaluation.jobs import start_study_evaluation
        from models_backend import catalog

        data = serializer.validated_data
        known = {checkpoint.key for checkpoint in catalog.checkpoints(request.user)}
        for field in ("models", "bucket_nli", "bucket_embedder", "baseline"):
            named = data.get(field) or []
            missing = [key for key in ([named] if isinstance(named, str) else named) if key not in known]
            if missing:
                return error_response(404, f"no checkpoint {missing[0]!r} among yours", field)
        try:
            job = start_study_evaluation(
                project,
                request.user,
                data["models"],
                data.get("settings") or {},
                collected_only=data["collected_only"],
                bucket_nli=data.get("bucket_nli") or None,
                bucket_embedder=data.get("bucket_embedder") or None,
                baseline=data.get("baseline") or None,
                queue=data["queue"] or None,
            )
        except JobError as error:  # the request fits the schema; the study or a checkpoint does not fit it
            return error_response(409, str(error))
        return Response({"job": job.pk, "url": f"/api/v1/jobs/{job.pk}/"}, status=status.HTTP_202_ACCEPTED)
