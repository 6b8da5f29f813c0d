"""Runs: start (idempotent, with an optional callback), list, read, cancel / resume / re-run failed, gate."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers as drf
from rest_framework.request import Request
from rest_framework.response import Response

from api import selectors as api_selectors
from api import serializers as s
from api import services
from api.errors import Conflict, IdempotencyKeyReused, InvalidInput, field_error
from api.filters import RunFilterSet
from api.permissions import ReviewerWrites
from api.schema import paginated, responses
from api.views.base import ApiView, base_url
from evaluations import run_selectors
from evaluations.audit_estimates import run_calibration
from evaluations.gates import check_bars_apply, parse_fail_under
from evaluations.metrics.run_settings import SettingsError
from evaluations.models import Run
from evaluations.reports import run_gate
from evaluations.review_selectors import run_review_counts
from evaluations.services import runs as run_services

IDEMPOTENCY_HEADER = "Idempotency-Key"
IDEMPOTENCY_KEY_MAX = 255


def get_run(run_id: int) -> Run:
    run = run_selectors.run_get(run_id)
    if run is None:
        raise Http404(f"No run with id {run_id}.")
    return run


def run_detail_response(view: ApiView, run: Run, *, status: int = 200) -> Response:
    """GET /api/runs/{id}/'s body: the run, its review counts, callback and calibrated scores (a fixed
    number of queries: see tests/api/test_runs.py)."""
    context = view.context(
        review_counts=run_review_counts(run.pk),
        callback=api_selectors.run_callback(run.pk),
        calibration=run_calibration(run.pk),
    )
    return Response(s.RunDetailSerializer(run, context=context).data, status=status)


class RunListView(ApiView):
    permission_classes = [ReviewerWrites]

    @extend_schema(
        operation_id="runs_list",
        parameters=[
            OpenApiParameter("dataset", int, description="Dataset id."),
            OpenApiParameter("judge", int, description="Judge config id."),
            OpenApiParameter("status", str, enum=[choice for choice, _ in Run._meta.get_field("status").choices]),
            OpenApiParameter("page", int),
        ],
        responses=responses({200: paginated(s.RunSerializer)}),
        description="Newest first (then by id), filtered as on the runs page.",
    )
    def get(self, request: Request) -> Response:
        filterset = RunFilterSet(request.query_params, queryset=Run.objects.none())
        if not filterset.is_valid():
            raise drf.ValidationError(filterset.errors)
        paginator = self.paginator()
        page = paginator.paginate_queryset(run_selectors.run_list(filterset.run_filters()), request)
        return paginator.get_paginated_response(s.RunSerializer(page, many=True, context=self.context()).data)

    @extend_schema(
        operation_id="runs_create",
        request=s.RunCreateSerializer,
        parameters=[
            OpenApiParameter(
                IDEMPOTENCY_HEADER,
                str,
                OpenApiParameter.HEADER,
                description="The same key from the same user within 24 h returns the first run (200) "
                "instead of starting another; the same key with a different body is a 422.",
            )
        ],
        responses=responses({201: s.RunDetailSerializer, 200: s.RunDetailSerializer}, 422),
        description="Reviewers. Queues a run of a dataset version with a judge and metrics.",
    )
    def post(self, request: Request) -> Response:
        key = request.headers.get(IDEMPOTENCY_HEADER, "").strip()
        if len(key) > IDEMPOTENCY_KEY_MAX:
            raise InvalidInput(IDEMPOTENCY_HEADER, f"at most {IDEMPOTENCY_KEY_MAX} characters")
        body = s.RunCreateSerializer(data=request.data)
        if key:
            try:
                run, created = services.run_create_idempotent(
                    user=request.user, key=key, body=request.data, create=lambda: self._create(request, body)
                )
            except services.IdempotencyConflict:
                raise IdempotencyKeyReused(
                    f"The Idempotency-Key {key!r} was used with a different request body in the last 24 h."
                ) from None
        else:
            with transaction.atomic():
                run, created = self._create(request, body), True
        return run_detail_response(self, get_run(run.pk), status=201 if created else 200)

    def _create(self, request: Request, body: s.RunCreateSerializer) -> Run:
        body.is_valid(raise_exception=True)
        try:
            run = run_services.run_create(**body.run_create_kwargs(), user=request.user)
        except SettingsError as exc:
            raise InvalidInput(f"settings.{exc.key}", str(exc)) from None
        except ValueError as exc:  # validate_metrics: "metrics: ..."
            raise field_error(exc, "metrics") from None
        url = body.validated_data.get("callback_url")
        if url:
            try:
                services.run_callback_create(run=run, url=url, base_url=base_url(request))
            except services.CallbackUrlError as exc:
                raise InvalidInput("callback_url", str(exc)) from None
        return run


class RunDetailView(ApiView):
    @extend_schema(operation_id="runs_retrieve", responses=responses({200: s.RunDetailSerializer}))
    def get(self, request: Request, run_id: int) -> Response:
        return run_detail_response(self, get_run(run_id))


class _RunControlView(ApiView):
    permission_classes = [ReviewerWrites]

    def control(self, run: Run, user: Any) -> None:
        raise NotImplementedError

    def post(self, request: Request, run_id: int) -> Response:
        run = get_run(run_id)
        try:
            self.control(run, request.user)
        except ValueError as exc:
            raise Conflict(str(exc)) from None
        return run_detail_response(self, get_run(run_id))


_CONTROL_SCHEMA = {"request": None, "responses": responses({200: s.RunDetailSerializer}, 409)}


class RunCancelView(_RunControlView):
    @extend_schema(operation_id="runs_cancel", description="Reviewers. Queued or running runs.", **_CONTROL_SCHEMA)
    def post(self, request: Request, run_id: int) -> Response:
        return super().post(request, run_id)

    def control(self, run: Run, user: Any) -> None:
        run_services.run_cancel(run=run, user=user)


class RunResumeView(_RunControlView):
    @extend_schema(operation_id="runs_resume", description="Reviewers. Cancelled runs.", **_CONTROL_SCHEMA)
    def post(self, request: Request, run_id: int) -> Response:
        return super().post(request, run_id)

    def control(self, run: Run, user: Any) -> None:
        run_services.run_resume(run=run, user=user)


class RunRerunFailedView(_RunControlView):
    @extend_schema(
        operation_id="runs_rerun_failed",
        description="Reviewers. Runs that finished with errors: their failed items run again.",
        **_CONTROL_SCHEMA,
    )
    def post(self, request: Request, run_id: int) -> Response:
        return super().post(request, run_id)

    def control(self, run: Run, user: Any) -> None:
        run_services.run_rerun_failed(run=run, user=user)


class RunGateView(ApiView):
    @extend_schema(
        operation_id="runs_gate",
        parameters=[
            OpenApiParameter("fail_under", str, required=True, description="Bars, e.g. faithfulness=0.8,overall=0.7"),
            OpenApiParameter("allow_errors", bool, description="Items in error do not fail the gate."),
        ],
        responses=responses({200: s.GateSerializer}),
        description="The same rules as `manage.py evaluate --fail-under`: a bar compares the metric's mean "
        "(or overall); a failed or cancelled run, or items in error (unless allow_errors), never pass. "
        "An unfinished run does not pass yet (`finished` false).",
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = get_run(run_id)
        text = request.query_params.get("fail_under")
        if text is None:
            raise InvalidInput("fail_under", "fail_under: give bars such as faithfulness=0.8,overall=0.7")
        allow_errors = request.query_params.get("allow_errors", "").lower() in ("1", "true", "yes", "on")
        try:
            bars = parse_fail_under(text)
            check_bars_apply(bars, run.metrics)
        except ValueError as exc:
            raise InvalidInput("fail_under", f"fail_under: {exc}") from None
        verdict = run_gate(run, bars, allow_errors=allow_errors)
        problem, exit_code = verdict.problem, verdict.exit_code
        if not run.is_finished:
            problem, exit_code = f"run {run.pk} is {run.status}: not finished", 2
        data = {
            "run": run.pk,
            "status": run.status,
            "finished": run.is_finished,
            "passed": run.is_finished and verdict.passed,
            "exit_code": exit_code,
            "problem": problem,
            "bars": [result.as_dict() for result in verdict.results],
        }
        return Response(s.GateSerializer(data).data)
