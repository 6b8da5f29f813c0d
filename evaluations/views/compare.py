"""Comparison pages: two runs of one dataset (`/runs/compare/?base=&candidate=`) and one example side by side
(`/runs/compare/item/?base=&candidate=&example=`).

Without both runs the page is a form to pick them (`?base=` alone offers the other runs of its
dataset: the run page's "Compare with…"). A malformed id or runs of different datasets answer 400
and an unknown run or example 404, each with the message on the page, never a 500.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evaluations import compare_selectors as selectors
from evaluations.analysis_charts import scatter_html
from evaluations.audit_estimates import compare_calibrations, run_calibration
from evaluations.compare_selectors import CompareParamError
from evaluations.comparison import ComparisonError, UnknownExample, UnknownRun, compare_item, run_compare

PICK_TEMPLATE = "evaluations/compare_pick.html"


@require_GET
def compare_runs(request: HttpRequest) -> HttpResponse:
    try:
        base_id = selectors.run_id_param(request.GET, "base", required=False)
        candidate_id = selectors.run_id_param(request.GET, "candidate", required=False)
    except CompareParamError as exc:
        return _pick(request, error=str(exc), status=400)
    if base_id is None or candidate_id is None:
        return _pick(request, base_id=base_id, candidate_id=candidate_id)
    try:
        comparison = run_compare(base_id, candidate_id)
    except UnknownRun as exc:
        return _pick(request, base_id=base_id, candidate_id=candidate_id, error=str(exc), status=404)
    except ComparisonError as exc:
        return _pick(request, base_id=base_id, candidate_id=candidate_id, error=str(exc), status=400)
    try:
        metric = selectors.selected_metric(comparison, request.GET.get("metric"))
    except CompareParamError as exc:
        return _pick(request, base_id=base_id, candidate_id=candidate_id, error=str(exc), status=400)
    view = selectors.metric_view(comparison, metric)
    calibrations = {"base": run_calibration(base_id), "candidate": run_calibration(candidate_id)}
    pair = urlencode({"base": base_id, "candidate": candidate_id})
    context = {
        "comparison": comparison,
        "pair": pair,
        "metric": metric,
        "view": view,
        "scatter": scatter_html(
            base=view.base,
            candidate=view.candidate,
            questions=view.questions,
            external_ids=view.external_ids,
            scale=view.scale,
            metric=metric,
        )
        if view is not None and len(view.base)
        else None,
        "only_in_base": comparison.only_in_base[: selectors.UNMATCHED_SHOWN],
        "only_in_candidate": comparison.only_in_candidate[: selectors.UNMATCHED_SHOWN],
        "more_in_base": max(0, len(comparison.only_in_base) - selectors.UNMATCHED_SHOWN),
        "more_in_candidate": max(0, len(comparison.only_in_candidate) - selectors.UNMATCHED_SHOWN),
        "differing_settings": [row for row in comparison.settings.rows if row.differs],
        "calibrations": calibrations,
        "calibrated": compare_calibrations(calibrations["base"], calibrations["candidate"]),
        "roles": [
            ("base", {"id": base_id, "calibration": calibrations["base"]}),
            ("candidate", {"id": candidate_id, "calibration": calibrations["candidate"]}),
        ],
    }
    return render(request, "evaluations/compare.html", context)


@require_GET
def compare_item_view(request: HttpRequest) -> HttpResponse:
    try:
        base_id = selectors.run_id_param(request.GET, "base")
        candidate_id = selectors.run_id_param(request.GET, "candidate")
        external_id = (request.GET.get("example") or "").strip()
        if not external_id:
            raise CompareParamError("example: name the example's id (?example=q-1)")
    except CompareParamError as exc:
        return _message(request, str(exc), 400)
    try:
        diff = compare_item(base_id, candidate_id, external_id)
    except (UnknownRun, UnknownExample) as exc:
        return _message(request, str(exc), 404)
    except ComparisonError as exc:  # runs of different datasets
        return _message(request, str(exc), 400)
    context = {
        "diff": diff,
        "pair": urlencode({"base": base_id, "candidate": candidate_id}),
        "differing_settings": [row for row in diff.settings.rows if row.differs],
    }
    return render(request, "evaluations/compare_item.html", context)


def _pick(
    request: HttpRequest,
    *,
    base_id: int | None = None,
    candidate_id: int | None = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    """The form to pick two runs; given a base alone, its dataset's runs only."""
    dataset_id = selectors.dataset_of(base_id) if base_id is not None and candidate_id is None else None
    if base_id is not None and candidate_id is None and dataset_id is None and not error:
        error, status = f"base: no run with id {base_id}", 404
    context: dict[str, Any] = {
        "groups": selectors.run_choices(dataset_id=dataset_id),
        "base_id": base_id,
        "candidate_id": candidate_id,
        "error": error,
        "same_dataset_only": dataset_id is not None,
    }
    return render(request, PICK_TEMPLATE, context, status=status)


def _message(request: HttpRequest, message: str, status: int) -> HttpResponse:
    return render(request, PICK_TEMPLATE, {"error": message, "message_only": True}, status=status)
