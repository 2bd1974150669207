"""The label-variation app's API, under the projects' paths (/api/v1/projects/SLUG/...): an item's disagreement
reasons, the reasons and variation reports, and an explanation author's self-check. Every route asks the
access module first, as the core's do."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from annotation.api import ProjectRoutes
from common.api_errors import ErrorSerializer, error_response, invalid
from label_variation.serializers import ReasonTagRequestSerializer, SelfJudgmentsRequestSerializer
from label_variation.services import reasons, self_judgments, variation


class LabelVariationViewSet(ProjectRoutes):
    """Detail routes beside the core's ProjectViewSet, under the same paths and URL names."""

    @extend_schema(
        request=ReasonTagRequestSerializer,
        responses={
            200: OpenApiResponse(description='{"rounds": [...], "imported": ...}: the item\'s tags and results'),
            201: OpenApiResponse(description="the tag was stored: the item's tags and results"),
            400: ErrorSerializer,
            403: ErrorSerializer,
        },
    )
    @action(detail=True, methods=["get", "post"], url_path=r"items/(?P<item_id>[0-9]+)/reasons")
    def item_reasons(self, request, slug=None, item_id=None):
        """An item's disagreement reasons (GET: the study's managers); POST tags them, as the study's setting
        reason_taggers allows (an unknown reason is refused, naming it; nothing is stored)."""
        project = self._project("manage" if request.method == "GET" else "view")
        item = project.items.filter(pk=item_id, is_gold=False).select_related("example", "project").first()
        if item is None:
            raise NotFound("no such item in this project")
        if request.method == "GET":
            return Response(reasons.item_reasons(item, request.user))
        reasons.tagging_role(request.user, item)  # who may tag, before what they sent
        serializer = ReasonTagRequestSerializer(data=request.data)
        if not serializer.is_valid():
            return invalid(serializer)
        data = serializer.validated_data
        try:
            reasons.tag_item(item, request.user, data["reasons"], data["round"], data["note"], data["reconcile"])
        except reasons.ReasonError as exc:
            return error_response(400, exc.message, exc.field)
        return Response(reasons.item_reasons(item, request.user), status=status.HTTP_201_CREATED)

    @extend_schema(
        responses={
            200: OpenApiResponse(
                description='label variation: {"project", "label_order", "items": [{"key", "round_one", "validated", '
                '"chaosnli", "verdicts", "variation", "error"}], "study": {"items", "variation", "error", "both", '
                '"undecided", "pending", "explanations", "judgments", "lengths", "alpha"}, "rule" (varierr or '
                'peer_majority), "self_check": null or {"open", "writers": [{"writer", "judged", "pending"}], '
                '"items": {key: {"judged", "pending"}}}}'
            )
        }
    )
    @action(detail=True, methods=["get"])
    def variation(self, request, slug=None):
        """The report's label variation: per item the round-1 distribution, the validated one (labels judged
        errors removed) and the ChaosNLI one where imported, with VariErr's verdict on each label; per study
        the share of items with variation and with errors, explanation lengths and the validators' agreement."""
        project = self._managed()
        return Response(variation.report_json(project, variation.variation_report(project)))

    @extend_schema(
        responses={
            200: OpenApiResponse(
                description='disagreement reasons: {"taxonomy", "items", "imported_items", "reasons": [{"tag", '
                '"name", "items", "share", "examples", "in_taxonomy"}], "rounds": [{"round", "items", "reconciled", '
                '"agreement"}], "release_rule"}'
            )
        }
    )
    @action(detail=True, methods=["get"], url_path="reasons", url_name="reasons")
    def reasons_report(self, request, slug=None):
        """The report's disagreement reasons: how many items carry each reason, with examples, and per round
        how far the two taggers agree and how many items were reconciled."""
        return Response(reasons.reasons_report(self._managed()))

    @extend_schema(
        methods=["GET"],
        responses={
            200: OpenApiResponse(
                description='{"pending", "judged", "pairs": [{"pair", "premise", "hypothesis", "label", '
                '"explanation", "premise_spans", "hypothesis_spans"}]}: your pairs waiting for your judgment'
            ),
            403: ErrorSerializer,
        },
    )
    @extend_schema(
        methods=["POST"],
        request=SelfJudgmentsRequestSerializer,
        responses={
            201: OpenApiResponse(description='{"stored", "pending", "judged", "pairs"}: the judgments were stored'),
            400: ErrorSerializer,
            403: ErrorSerializer,
            409: OpenApiResponse(
                ErrorSerializer,
                description="a pair that is not one of yours in this study, one judged already, or one given twice",
            ),
        },
    )
    @action(detail=True, methods=["get", "post"], url_path="own-explanations")
    def own_explanations(self, request, slug=None):
        """The authors' self-check (VariErr's round 2): GET lists your label-explanation pairs of this study
        not judged yet; POST {"judgments": [{"pair", "makes_sense"}]} judges them, all or nothing (a pair not
        yours, one judged already or a judgment that is not yes or no refuses the page, naming it)."""
        project = self._project("submit")
        if not self_judgments.has_self_check(project):
            raise NotFound("this study has no validation round for its explanations")
        if request.method == "GET":
            return Response(self_judgments.own_pairs(project, request.user))
        body = request.data.get("judgments") if isinstance(request.data, dict) else None
        try:
            stored = self_judgments.record_self_judgments(
                project, request.user, self_judgments.judgments_from_list(body)
            )
        except self_judgments.SelfJudgmentError as exc:
            # 400 where the body breaks the schema's shape; judgments of that shape refused for the pairs they
            # name (not yours, judged already, given twice) conflict with the study's state (409).
            fits_the_shape = SelfJudgmentsRequestSerializer(data=request.data).is_valid()
            return error_response(409 if fits_the_shape else 400, exc.message, exc.field)
        return Response(
            {"stored": stored, **self_judgments.own_pairs(project, request.user)}, status=status.HTTP_201_CREATED
        )
