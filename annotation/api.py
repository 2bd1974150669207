"""REST API: projects and the worker flow (claim, submit, release); import and export are the dataset app's
(dataset_io/api.py), under the same paths."""

from django.core.validators import RegexValidator
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.decorators import action
from rest_framework.exceptions import AuthenticationFailed, NotFound, Throttled, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Assignment
from annotation.serializers import (
    AdjudicateSerializer,
    AdjudicationQueueItemSerializer,
    AdjudicationRecordSerializer,
    AssignmentSerializer,
    ProjectChangeRequest,
    ProjectCreateRequest,
    ProjectSerializer,
    ResultSerializer,
    SubmitResultSerializer,
    SubmitSerializer,
    project_request_schema,
    project_request_schemas,
    settings_from,
)
from annotation.services import access, atom_chain, linking
from annotation.services.analysis import adjudication, report_job
from annotation.services.assignments import (
    SubmissionError,
    claim_page,
    release_page,
    submit_page,
)
from annotation.services.crowd import crowd
from annotation.services.progress import project_progress
from annotation.services.projects import create_project, update_project
from annotation.tasktypes import get_task_type
from common.api_errors import ErrorSerializer, error_response, first_message, invalid
from common.api_fields import Text
from common.api_schema import schema_refusal
from common.parsers import DepthLimitedJSONParser
from common.schema import SettingError
from core.login_limits import cooloff_seconds


class SendValidAtomsSerializer(serializers.Serializer):
    # A slug or nothing: SlugField's published pattern would refuse its own default "".
    to = Text(
        required=False,
        default="",
        allow_blank=True,
        trim_whitespace=False,
        validators=[RegexValidator(r"^[-a-zA-Z0-9_]*\Z", "must be a study's slug: letters, digits, - and _")],
        help_text="a defeasible atom study's slug",
    )
    new_title = Text(
        required=False, default="", allow_blank=True, max_length=200, help_text="the title of a new defeasible study"
    )


def setting_errors(error: SettingError, status_code: int) -> Response:
    """A refused setting in the documented error shape, with every wrong setting listed."""
    field, detail = next(iter(error.errors.items()))
    return error_response(status_code, detail, field, error.errors)


CONFLICT = OpenApiResponse(
    ErrorSerializer,
    description="the request fits the schema, but not the state of what it acts on (code `conflict`; "
    "`field` names what): see docs/api.md",
)

# The agreement route's answer: the figures are project_agreement's dict (docs/metrics.md).
AGREEMENT_RESPONSE = inline_serializer(
    "AgreementFigures",
    {
        "status": serializers.ChoiceField(["current", "computing", "failed"]),
        "job": serializers.URLField(allow_null=True, help_text="the computation: its figures, on its way, or failed"),
        "computed_at": serializers.DateTimeField(allow_null=True),
        "computed_from": serializers.CharField(allow_null=True, help_text="the answers the figures count"),
        "figures": serializers.DictField(allow_null=True),
    },
)


class ProjectRoutes(viewsets.GenericViewSet):
    """Routes under /api/v1/projects/SLUG/, each asking the access module for its project first; the apps'
    viewsets (dataset_io, label_variation) add theirs beside the core's under the same paths and URL names."""

    lookup_field = "slug"

    def get_queryset(self):
        return access.visible_projects(self.request.user)

    def _project(self, action_name: str = "view"):
        return access.project_for(self.request.user, self.kwargs["slug"], action_name)

    def _managed(self):
        return self._project("manage")


class ProjectViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    ProjectRoutes,
):
    """Authors see, create and change their own projects, admins all; workers see the projects they may
    work on, without the settings that are not theirs to know (completion codes among them)."""

    http_method_names = ["get", "post", "patch", "head", "options"]

    def get_queryset(self):
        return super().get_queryset().select_related("owner").order_by("-created_at")

    serializer_class = ProjectSerializer

    def get_serializer_context(self):
        # A mixed list: the projects a user may only work on are shown as workers see them.
        user = self.request.user
        return {
            **super().get_serializer_context(),
            "may_manage": lambda project: access.can_manage(user, project),
            "earned_code": lambda project: crowd.earned_code(project, user),
        }

    @extend_schema(
        request={"application/json": ProjectCreateRequest},
        responses={201: ProjectSerializer, 400: ErrorSerializer, 403: ErrorSerializer, 409: CONFLICT},
    )
    def create(self, request, *args, **kwargs):
        """Create a study of one task type with its settings. A request the schema allows may still be refused
        with 409: settings that contradict each other (max_annotations below redundancy), a slug in use, a
        linked project that cannot be linked, a status the study cannot take yet."""
        access.ensure_can_create_project(request.user)  # before validation: no hints to non-authors
        serializer = ProjectSerializer(data=request.data)
        if not serializer.is_valid():
            return invalid(serializer)
        data = serializer.validated_data
        body_schema = project_request_schema(get_task_type(data["task_type"]), creating=True)
        refused = schema_refusal(request.data, [body_schema], own=body_schema)
        if refused is not None:
            return error_response(400, refused[1], refused[0])
        try:
            project = create_project(data["slug"], data["task_type"], request.user, **settings_from(data))
        except SettingError as error:
            return setting_errors(error, status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(project).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request={"application/json": ProjectChangeRequest},
        responses={200: ProjectSerializer, 400: ErrorSerializer, 409: CONFLICT},
    )
    def partial_update(self, request, *args, **kwargs):
        """Change settings, or the lifecycle with {"status": "published" | "paused" | "closed" | "draft"}.
        409: a setting the study's task type does not have, settings that contradict the study's others, a
        lifecycle step the study cannot take, or a change of what its answers mean once it has answers."""
        project = self._project("manage")
        serializer = ProjectSerializer(project, data=request.data, partial=True)
        if not serializer.is_valid():
            return invalid(serializer)
        bodies = project_request_schemas(False)
        own = bodies.get(project.task_type) or next(iter(bodies.values()))  # a task type since unregistered
        refused = schema_refusal(request.data, list(bodies.values()), own=own)
        if refused is not None:
            return error_response(400, refused[1], refused[0])
        changes = settings_from(serializer.validated_data)
        if "task_type" in serializer.validated_data:
            changes["task_type"] = serializer.validated_data["task_type"]
        try:
            project = update_project(project, changed_by=request.user, **changes)
        except SettingError as error:
            return setting_errors(error, status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(project).data)

    def update(self, request, *args, **kwargs):
        return self.partial_update(request, *args, **kwargs)

    @extend_schema(
        request=None, responses={201: AssignmentSerializer, 204: OpenApiResponse(description="no work left")}
    )
    @action(detail=True, methods=["post"])
    def claim(self, request, slug=None):
        """Claim the next page of k items (or get back the page you hold)."""
        assignment = claim_page(self._project(), request.user)  # DRF answers Http404 / PermissionDenied itself
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

    @extend_schema(
        request=AdjudicateSerializer,
        responses={
            200: AdjudicationRecordSerializer,
            400: ErrorSerializer,
            404: OpenApiResponse(ErrorSerializer, description="no such project, or no such item in it (`item`)"),
            409: CONFLICT,
        },
    )
    @action(detail=True, methods=["post"])
    def adjudicate(self, request, slug=None):
        """Set an item's final label (slider: a probability), with a note; every change is kept."""
        project = self._managed()
        serializer = AdjudicateSerializer(data=request.data)
        if not serializer.is_valid():
            return invalid(serializer)
        data = serializer.validated_data
        if not project.items.filter(pk=data["item"]).exists():
            return error_response(404, "no such item in this project", "item")
        try:
            record = adjudication.adjudicate(data["item"], request.user, data["value"], data.get("note", ""))
        except SubmissionError as exc:  # a value the project's task type does not take: its state, not the body's shape
            return error_response(409 if exc.status == 400 else exc.status, exc.message, exc.field)
        return Response(AdjudicationRecordSerializer(record).data)

    @extend_schema(
        request=None,
        responses={
            200: OpenApiResponse(description='{"validation_project", "created", "already_sent"}'),
            409: CONFLICT,
        },
    )
    @action(detail=True, methods=["post"], url_path="send-to-validation")
    def send_to_validation(self, request, slug=None):
        """Send the written pairs not sent yet to the linked validation project (created on the first send)."""
        try:
            report = linking.send_to_validation(self._managed())
        except linking.LinkError as exc:  # the study writes nothing to validate, or too few writers per item
            return error_response(409, exc.message, exc.field)
        return Response(report.as_dict())

    @extend_schema(
        request=SendValidAtomsSerializer,
        responses={
            200: OpenApiResponse(
                description='{"target", "target_title", "new_study", "valid", "created", "already_sent", '
                '"no_update", "invalid", "unsettled"}'
            ),
            400: ErrorSerializer,
            409: CONFLICT,
        },
    )
    @action(detail=True, methods=["post"], url_path="send-valid-atoms")
    def send_valid_atoms(self, request, slug=None):
        """Send an atom validity study's settled valid atoms not sent yet to a defeasible atom study of
        the caller's (`to`), or to a new draft one (`new_title`)."""
        project = self._managed()
        serializer = SendValidAtomsSerializer(data=request.data)
        if not serializer.is_valid():
            return invalid(serializer)
        try:
            report = atom_chain.send_valid_atoms(project, **serializer.validated_data, user=request.user)
        except atom_chain.ChainError as exc:  # the study's task type, or the target named (not yours, not defeasible)
            return error_response(409, exc.message, exc.field)
        return Response(report.as_dict())

    @extend_schema(responses={200: ResultSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def results(self, request, slug=None):
        """Every item with its aggregate, adjudicated and final label."""
        items = self._managed().items.filter(is_gold=False).select_related("example", "atom").order_by("id")
        page = self.paginate_queryset(items)
        return self.get_paginated_response(ResultSerializer(page, many=True).data)

    @extend_schema(
        responses={
            200: OpenApiResponse(
                AGREEMENT_RESPONSE,
                description="status current: figures that count the answers as they are now; status failed: the "
                "last computation of these answers failed (the report page's Refresh starts another), figures are "
                "the last ones (null before the first)",
            ),
            202: OpenApiResponse(
                AGREEMENT_RESPONSE,
                description="status computing: the answers changed (or nothing was computed yet), a computation is "
                "on its way at `job`; figures are the last ones (null before the first): ask again when it is done",
            ),
        },
    )
    @action(detail=True, methods=["get"])
    def agreement(self, request, slug=None):
        """The report's agreement figures (200 bootstrap resamples; `manage.py agreement SLUG --bootstrap N`
        for more), computed by the report's job and kept until the answers change."""
        status_name, job, done = report_job.api_figures(self._managed(), request.user)
        body = {
            "status": status_name,
            "job": request.build_absolute_uri(reverse("job-detail", args=[job.pk])) if job else None,
            "computed_at": done.finished_at if done else None,
            "computed_from": done.result["version"] if done else None,
            "figures": done.result["figures"] if done else None,
        }
        return Response(body, status=202 if status_name == "computing" else 200)

    @extend_schema(responses={200: OpenApiResponse(description="labels and worker reliability of annotator models")})
    @action(detail=True, methods=["get"], url_path="annotator-models")
    def annotator_models(self, request, slug=None):
        """Majority vote, Wawa, Dawid-Skene, MACE and GLAD labels, worker reliability and accuracy on gold
        (nominal task types; projects with more answers than the page fits models to: the command)."""
        from annotation.services.analysis.annotator_models import INTERACTIVE_ANSWERS, project_annotator_models

        return Response(project_annotator_models(self._managed(), max_answers=INTERACTIVE_ANSWERS))


class AssignmentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """A worker's own pages; submit and release act on one."""

    serializer_class = AssignmentSerializer
    lookup_value_regex = r"[0-9]+"  # page ids only: submit and release read the id as a number

    def get_queryset(self):
        return (
            Assignment.objects.filter(worker=self.request.user, project__in=access.installed_projects())
            .select_related("project")
            .order_by("-created_at")
        )

    @extend_schema(
        request=SubmitSerializer,
        responses={
            200: SubmitResultSerializer,
            400: ErrorSerializer,
            403: ErrorSerializer,
            409: OpenApiResponse(
                ErrorSerializer,
                description="the answers do not fit the page: an item not on it or left out, a value its study's "
                "task type does not take; or the page was released, or submitted with other answers",
            ),
        },
    )
    @action(detail=True, methods=["post"])
    def submit(self, request, pk=None):
        """Submit every answer of the page at once (`answers`: one per item of the page, keyed by item id, its
        value as the study's task type reads it); a repeat of the same submission answers the same."""
        answers = request.data.get("answers") if isinstance(request.data, dict) else None
        if answers is None:
            return error_response(400, "is required", "answers")
        try:
            result = submit_page(int(pk), request.user, answers)
        except SubmissionError as exc:
            # 400 where the body breaks the schema's shape; answers of that shape refused for the page's items
            # or its study's task type conflict with the page (409).
            fits_the_shape = exc.status == 400 and SubmitSerializer(data=request.data).is_valid()
            return error_response(409 if fits_the_shape else exc.status, exc.message, exc.field)
        except access.PermissionDenied as exc:
            return error_response(403, str(exc), "worker")
        return Response(result.as_dict())

    @extend_schema(request=None, responses={200: AssignmentSerializer})
    @action(detail=True, methods=["post"])
    def release(self, request, pk=None):
        try:
            assignment = release_page(int(pk), request.user)
        except Assignment.DoesNotExist:
            raise NotFound("no such page") from None
        return Response(AssignmentSerializer(assignment).data)


class TokenRequestSerializer(AuthTokenSerializer):
    """DRF's token serializer with what it refuses written into the schema: neither field may be blank."""

    username = Text(label="Username", write_only=True, min_length=1)
    password = Text(
        label="Password", style={"input_type": "password"}, trim_whitespace=False, write_only=True, min_length=1
    )


class TokenView(APIView):
    """POST username and password for an API token; DELETE revokes the caller's token."""

    permission_classes = [AllowAny]
    serializer_class = TokenRequestSerializer
    parser_classes = [DepthLimitedJSONParser, FormParser, MultiPartParser]  # as DRF's own token view reads

    @extend_schema(
        request=TokenRequestSerializer,
        responses={
            200: OpenApiResponse(description='{"token": "..."}'),
            400: OpenApiResponse(ErrorSerializer, description="a username or password missing or blank"),
            401: OpenApiResponse(ErrorSerializer, description="wrong username or password (code `not_authenticated`)"),
        },
    )
    def post(self, request):
        serializer = TokenRequestSerializer(data=request.data, context={"request": request})
        if not serializer.is_valid():
            # django-axes marks the request it refused before checking the password: a lockout, not a typo.
            if getattr(request, "axes_locked_out", False):
                raise Throttled(wait=cooloff_seconds(), detail="Too many failed logins.")
            if "non_field_errors" in serializer.errors:  # both given, and no account takes them
                raise AuthenticationFailed(first_message(serializer.errors["non_field_errors"]))
            raise ValidationError(serializer.errors)
        token, _ = Token.objects.get_or_create(user=serializer.validated_data["user"])
        return Response({"token": token.key})

    @extend_schema(request=None, responses={204: OpenApiResponse(description="token revoked")})
    def delete(self, request):
        if not request.user.is_authenticated:
            return error_response(401, "not logged in")
        Token.objects.filter(user=request.user).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(APIView):
    """Who the caller is: the cheapest authenticated call (clients check their token; the load benchmark
    measures the server's ceiling with it)."""

    @extend_schema(request=None, responses={200: OpenApiResponse(description='{"id": 1, "username": "..."}')})
    def get(self, request):
        return Response({"id": request.user.pk, "username": request.user.get_username()})
