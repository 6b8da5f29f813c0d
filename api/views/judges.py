"""Judges: list and (admins) create and change; a live check (reviewers, as on the page); agreement with people."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.errors import InvalidInput
from api.permissions import AdminWrites, ReviewerWrites
from api.schema import paginated, responses
from api.views.base import ApiView
from evaluations.agreement import judge_agreement
from judges import selectors, services
from judges.checks import judge_check
from judges.models import JudgeConfig


def _judge(pk: int) -> JudgeConfig:
    judge = selectors.judge_config_list_with_spend().filter(pk=pk).first()
    if judge is None:
        raise Http404(f"No judge with id {pk}.")
    return judge


class JudgeListView(ApiView):
    permission_classes = [AdminWrites]

    @extend_schema(
        operation_id="judges_list",
        parameters=[OpenApiParameter("page", int)],
        responses=responses({200: paginated(s.JudgeSerializer)}),
    )
    def get(self, request: Request) -> Response:
        paginator = self.paginator()
        page = paginator.paginate_queryset(selectors.judge_config_list_with_spend().order_by("name", "id"), request)
        return paginator.get_paginated_response(s.JudgeSerializer(page, many=True).data)

    @extend_schema(
        operation_id="judges_create",
        request=s.JudgeInputSerializer,
        responses=responses({201: s.JudgeSerializer}),
        description="Admins. `api_key_env` is the *name* of the environment variable holding the key; "
        "the key itself is never accepted nor returned.",
    )
    def post(self, request: Request) -> Response:
        body = s.JudgeInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if selectors.judge_config_get(name=body.validated_data["name"]) is not None:
            raise InvalidInput("name", f"a judge named {body.validated_data['name']!r} exists")
        config = services.judge_config_create(**body.validated_data)
        return Response(s.JudgeSerializer(_judge(config.pk)).data, status=201)


class JudgeDetailView(ApiView):
    permission_classes = [AdminWrites]

    @extend_schema(operation_id="judges_retrieve", responses=responses({200: s.JudgeSerializer}))
    def get(self, request: Request, pk: int) -> Response:
        return Response(s.JudgeSerializer(_judge(pk)).data)

    @extend_schema(
        operation_id="judges_partial_update",
        request=s.JudgeInputSerializer(partial=True),
        responses=responses({200: s.JudgeSerializer}),
        description="Admins. Any of the editable fields; the name cannot change.",
    )
    def patch(self, request: Request, pk: int) -> Response:
        config = _judge(pk)
        body = s.JudgeInputSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        services.judge_config_update(config=JudgeConfig.objects.get(pk=config.pk), **body.changes(body.validated_data))
        return Response(s.JudgeSerializer(_judge(pk)).data)


class JudgeCheckView(ApiView):
    permission_classes = [ReviewerWrites]

    @extend_schema(
        operation_id="judges_check",
        request=None,
        responses=responses({200: s.JudgeCheckSerializer}),
        description="Reviewers. One tiny prompt straight to the provider (as `manage.py check_judge`): "
        "`ok` false with the provider's exact error when it fails.",
    )
    def post(self, request: Request, pk: int) -> Response:
        report = judge_check(_judge(pk))
        return Response(s.JudgeCheckSerializer(report).data)


class AgreementView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="judges_agreement",
        parameters=[
            OpenApiParameter("judge", int, description="Only this judge config."),
            OpenApiParameter("run", int, description="Only the claims of this run."),
        ],
        responses=responses({200: s.AgreementSerializer(many=True)}),
        description="How often each judge (per prompt version) agrees with people over reviewed claims.",
    )
    def get(self, request: Request) -> Response:
        filters = {}
        for param, key in (("judge", "judge_config_id"), ("run", "run_id")):
            value = request.query_params.get(param)
            if value is not None:
                if not value.isdigit():
                    raise InvalidInput(param, f"{param}: {value!r} is not an id")
                filters[key] = int(value)
        return Response(s.AgreementSerializer(judge_agreement(**filters), many=True).data)
