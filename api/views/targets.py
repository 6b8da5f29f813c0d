"""Live targets: list, (admins) create and change, and a live check (reviewers, as the target page's button)."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.permissions import AdminWrites, ReviewerWrites
from api.schema import paginated, responses
from api.views.base import ApiView
from targets import selectors, services
from targets.check import target_check
from targets.models import Target


def _target(pk: int) -> Target:
    target = selectors.target_get(pk)
    if target is None:
        raise Http404(f"No target with id {pk}.")
    return target


class TargetListView(ApiView):
    permission_classes = [AdminWrites]

    @extend_schema(
        operation_id="targets_list",
        parameters=[OpenApiParameter("page", int)],
        responses=responses({200: paginated(s.TargetSerializer)}),
        description="By name.",
    )
    def get(self, request: Request) -> Response:
        paginator = self.paginator()
        page = paginator.paginate_queryset(selectors.target_list().order_by("name", "id"), request)
        return paginator.get_paginated_response(s.TargetSerializer(page, many=True, context=self.context()).data)

    @extend_schema(
        operation_id="targets_create",
        request=s.TargetInputSerializer,
        responses=responses({201: s.TargetSerializer}),
        description="Admins. A secret header gives the *name* of its environment variable "
        '(`{"env": "RAG_TOKEN", "format": "Bearer {}"}`); a literal secret value is refused (400 on `headers`).',
    )
    def post(self, request: Request) -> Response:
        body = s.TargetInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        target = services.target_create(**body.validated_data)  # ValidationError → 400 naming the field
        return Response(s.TargetSerializer(target, context=self.context()).data, status=201)


class TargetDetailView(ApiView):
    permission_classes = [AdminWrites]

    @extend_schema(operation_id="targets_retrieve", responses=responses({200: s.TargetSerializer}))
    def get(self, request: Request, pk: int) -> Response:
        return Response(s.TargetSerializer(_target(pk), context=self.context()).data)

    @extend_schema(
        operation_id="targets_partial_update",
        request=s.TargetInputSerializer(partial=True),
        responses=responses({200: s.TargetSerializer}),
        description="Admins. Any field but the name; past runs keep what they called.",
    )
    def patch(self, request: Request, pk: int) -> Response:
        target = _target(pk)
        body = s.TargetInputSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        target = services.target_update(target=target, **body.changes(body.validated_data))
        return Response(s.TargetSerializer(target, context=self.context()).data)


class TargetCheckView(ApiView):
    permission_classes = [ReviewerWrites]

    @extend_schema(
        operation_id="targets_check",
        request=s.TargetCheckInputSerializer,
        responses=responses({200: s.TargetCheckSerializer}),
        description="Reviewers. One call of the target (as `manage.py check_target`; no retries): what each "
        "mapping extracted, or `ok` false with the exact error (HTTP status, the failing mapping, the body).",
    )
    def post(self, request: Request, pk: int) -> Response:
        target = _target(pk)
        body = s.TargetCheckInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        report = target_check(target, query=body.validated_data.get("query", ""))
        return Response(s.TargetCheckSerializer(report).data)
