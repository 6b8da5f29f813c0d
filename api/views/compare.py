"""Two runs of one dataset compared: the numbers of `manage.py compare` and the comparison page."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.errors import InvalidInput, field_error
from api.schema import responses
from api.views.base import ApiView
from evaluations.audit_estimates import calibrated_comparison
from evaluations.comparison import ComparisonError, UnknownRun, run_compare


class CompareView(ApiView):
    @extend_schema(
        operation_id="compare",
        parameters=[
            OpenApiParameter("base", int, required=True, description="The base run's id."),
            OpenApiParameter("candidate", int, required=True, description="The candidate run's id."),
        ],
        responses=responses({200: s.ComparisonSerializer}),
        description="Per metric: means, the delta with a paired bootstrap 95% interval (fixed seed: the page, "
        "the CLI and the API give the same figures), pass/fail flips with McNemar's p; examples in one run only; "
        "the settings that differ.",
    )
    def get(self, request: Request) -> Response:
        ids = {}
        for param in ("base", "candidate"):
            value = request.query_params.get(param, "")
            if not value.isdigit():
                raise InvalidInput(param, f"{param}: give a run id (a positive number)")
            ids[param] = int(value)
        try:
            comparison = run_compare(ids["base"], ids["candidate"])
        except UnknownRun as exc:
            raise NotFound(str(exc)) from None
        except ComparisonError as exc:
            raise field_error(exc, "candidate") from None
        body = asdict(comparison) | {"calibrated": calibrated_comparison(ids["base"], ids["candidate"])}
        return Response(s.ComparisonSerializer(body).data)
