"""A run's items (the run page's table: same filters, sort and rows), one item (the item page's read), reviews."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.errors import Conflict, InvalidInput, field_error
from api.permissions import ReviewerWrites
from api.schema import paginated, responses
from api.views.base import ApiView
from api.views.runs import get_run
from evaluations import item_table
from evaluations import review_selectors as selectors
from evaluations.item_table import ItemQuery, ItemQueryError
from evaluations.metrics import execution_order
from evaluations.models import Claim, ItemStatus, Verdict
from evaluations.reports import summary_rows
from evaluations.services import overrides

ITEM_PARAMETERS = [
    OpenApiParameter("failing", str, description="Items failing this metric ('any': any metric)."),
    OpenApiParameter("tag", str),
    OpenApiParameter("status", str, enum=ItemStatus.values),
    OpenApiParameter("reviewed", str, enum=list(item_table.REVIEWED_CHOICES)),
    OpenApiParameter("verdict", str, enum=Verdict.values, description="Items with a claim of this current verdict."),
    OpenApiParameter("q", str, description="Text in the question or the answer."),
    OpenApiParameter("sort", str, description="overall or a metric; '-' first for descending. Default: file order."),
    OpenApiParameter("page", int),
]


class ItemListView(ApiView):
    @extend_schema(
        operation_id="runs_items_list",
        parameters=ITEM_PARAMETERS,
        responses=responses({200: paginated(s.ItemRowSerializer)}),
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = get_run(run_id)
        try:
            query = ItemQuery.from_params(request.query_params, run.metrics)
        except ItemQueryError as exc:
            raise field_error(exc, "query") from None
        page = item_table.item_page(run.pk, run.metrics, query, request.query_params.get("page"))
        paginator = self.paginator()
        rows = paginator.use_page(page, request)
        data = s.ItemRowSerializer(rows, many=True, context=self.context(run_id=run.pk)).data
        return paginator.get_paginated_response(data)


class ItemDetailView(ApiView):
    @extend_schema(operation_id="runs_items_retrieve", responses=responses({200: s.ItemDetailSerializer}))
    def get(self, request: Request, run_id: int, item_id: int) -> Response:
        item = selectors.item_for_review(run_id, item_id)
        return Response(s.ItemDetailSerializer(selectors.item_review(item)).data)


# --- Reviews of claims ----------------------------------------------------------------------------


class _ClaimReviewView(ApiView):
    permission_classes = [ReviewerWrites]
    input_serializer: type = s.ConfirmInputSerializer

    def review(self, claim: Claim, user: Any, data: dict[str, Any]) -> None:
        raise NotImplementedError

    def post(self, request: Request, claim_id: int) -> Response:
        claim = get_object_or_404(Claim.objects.select_related("item"), pk=claim_id)
        body = self.input_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            self.review(claim, request.user, body.validated_data)
        except overrides.NothingToUndo as exc:
            raise Conflict(str(exc)) from None
        except ValueError as exc:
            raise field_error(exc, "verdict") from None
        return Response(_rescored(claim))


def _rescored(claim: Claim) -> dict[str, Any]:
    """The claim after review, its item's new scores and the run's recomputed statistics."""
    item = selectors.item_for_review(claim.item.run_id, claim.item_id)
    results = selectors.item_results(item.pk)
    run = item.run
    current = next(c for c in selectors.item_claims(item.pk) if c.pk == claim.pk)
    ordered = [results[name] for name in execution_order(run.metrics) if name in results]
    return {
        "claim": s.ClaimSerializer(current).data,
        "item": s.RescoredItemSerializer(
            {"id": item.pk, "overall_score": item.overall_score, "reviewed_at": item.reviewed_at, "results": ordered}
        ).data,
        "run": s.RescoredRunSerializer(
            {
                "id": run.pk,
                "status": run.status,
                "summary": summary_rows(run.aggregates or {}, run.metrics),
                "aggregates": run.aggregates or {},
            }
        ).data,
    }


def _review_schema(operation_id: str, description: str, request: Any) -> Callable:
    return extend_schema(
        operation_id=operation_id,
        request=request,
        responses=responses({200: s.ReviewResultSerializer}, 409),
        description=description,
    )


class ClaimOverrideView(_ClaimReviewView):
    input_serializer = s.OverrideInputSerializer

    @_review_schema(
        "claims_override",
        "Reviewers. Set the claim's verdict (a reason is required when it changes); the item and the run "
        "are rescored at once.",
        s.OverrideInputSerializer,
    )
    def post(self, request: Request, claim_id: int) -> Response:
        return super().post(request, claim_id)

    def review(self, claim: Claim, user: Any, data: dict[str, Any]) -> None:
        try:
            overrides.claim_override(
                claim=claim, reviewer=user, new_verdict=data["verdict"], reason=data.get("reason", "")
            )
        except ValueError as exc:
            if str(exc).startswith("new_verdict"):
                raise InvalidInput("verdict", str(exc)) from None
            raise


class ClaimConfirmView(_ClaimReviewView):
    @_review_schema(
        "claims_confirm", "Reviewers. Agree with the claim's current verdict (a review too).", s.ConfirmInputSerializer
    )
    def post(self, request: Request, claim_id: int) -> Response:
        return super().post(request, claim_id)

    def review(self, claim: Claim, user: Any, data: dict[str, Any]) -> None:
        overrides.claim_confirm(claim=claim, reviewer=user, reason=data.get("reason", ""))


class ClaimUndoView(_ClaimReviewView):
    @_review_schema("claims_undo", "Reviewers. Undo the latest verdict change (a new history entry).", None)
    def post(self, request: Request, claim_id: int) -> Response:
        return super().post(request, claim_id)

    def review(self, claim: Claim, user: Any, data: dict[str, Any]) -> None:
        overrides.claim_undo(claim=claim, reviewer=user)
