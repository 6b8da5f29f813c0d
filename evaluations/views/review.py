"""Review pages: one item with its claims (override / confirm / undo in place), and the run's review queue."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evalsite.roles import REVIEWER, has_role
from evaluations import review_selectors as selectors
from evaluations.audit_selectors import item_audit_state
from evaluations.metrics import execution_order
from evaluations.metrics.rubric import DIMENSIONS
from evaluations.models import Claim, Run, RunItem, Verdict
from evaluations.services import overrides as services

TEMPLATE = "evaluations/item_review.html"
QUEUE_PER_PAGE = 25
CLAIM_ACTIONS = ("override", "confirm", "undo")


@require_GET
def item_review(request: HttpRequest, run_id: int, item_id: int) -> HttpResponse:
    item = selectors.item_for_review(run_id, item_id)
    query = selectors.list_query(request.GET, item.run.metrics)
    review = selectors.item_review(item)
    context = {
        "review": review,
        "neighbours": selectors.item_neighbours(run_id, item, query),
        "list_query": query.params(),
        **_score_context(item, review.results),
        **_review_context(request),
    }
    return render(request, TEMPLATE, context)


@require_POST
def claim_review(request: HttpRequest, run_id: int, item_id: int, claim_id: int) -> HttpResponse:
    """Override (verdict + reason), confirm or undo one claim; HTMX gets the claim and the score panel back."""
    claim = get_object_or_404(Claim.objects.select_related("item"), pk=claim_id, item_id=item_id, item__run_id=run_id)
    action = request.POST.get("action", "")
    error = ""
    try:
        if action == "override":
            services.claim_override(
                claim=claim,
                reviewer=request.user,
                new_verdict=request.POST.get("verdict", ""),
                reason=request.POST.get("reason", ""),
            )
        elif action == "confirm":
            services.claim_confirm(claim=claim, reviewer=request.user, reason=request.POST.get("reason", ""))
        elif action == "undo":
            services.claim_undo(claim=claim, reviewer=request.user)
        else:
            error = f"action: must be one of {', '.join(CLAIM_ACTIONS)}"
    except ValueError as exc:
        error = str(exc)
    if not request.htmx:
        url = reverse("evaluations:item_review", args=[run_id, item_id])
        return redirect(f"{url}?{request.GET.urlencode()}" if request.GET else url)
    return _claim_and_scores(request, run_id, item_id, claim_id, error)


@require_POST
def item_mark_reviewed(request: HttpRequest, run_id: int, item_id: int) -> HttpResponse:
    item = get_object_or_404(RunItem, pk=item_id, run_id=run_id)
    try:
        services.item_mark_reviewed(item=item, reviewer=request.user)
    except ValueError as exc:
        messages.error(request, str(exc))
    return redirect("evaluations:item_review", run_id, item_id)


@require_GET
def review_next(request: HttpRequest, run_id: int) -> HttpResponse:
    """Open the item most in need of review (not `?after=`, the one just left); the queue when none is left.

    A redirect rather than a link computed on every item page: the queue's order costs a pass over the run.
    """
    after = request.GET.get("after", "")
    head = selectors.review_queue_head(run_id, skip=int(after) if after.isdigit() else None)
    if head is None:
        return redirect("evaluations:review_queue", run_id)
    run = get_object_or_404(Run.objects.only("metrics"), pk=run_id)
    params = selectors.list_query(request.GET, run.metrics).params()
    url = reverse("evaluations:item_review", args=[run_id, head])
    return redirect(f"{url}?{params}" if params else url)


@require_GET
def review_queue(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("dataset_version__dataset", "judge_config"), pk=run_id)
    page = Paginator(selectors.review_queue(run_id), QUEUE_PER_PAGE).get_page(request.GET.get("page"))
    context = {"run": run, "page": page, "counts": selectors.run_review_counts(run_id)}
    return render(request, "evaluations/review_queue.html", context)


# --- Rendering helpers -----------------------------------------------------------------------


def _claim_and_scores(request: HttpRequest, run_id: int, item_id: int, claim_id: int, error: str) -> HttpResponse:
    """The claim's fragment (with its history), then the score summary and details swapped out of band."""
    item = selectors.item_for_review(run_id, item_id)
    claims = {claim.pk: claim for claim in selectors.item_claims(item_id)}
    results = selectors.item_results(item_id)
    context = {
        "claim": claims[claim_id],
        "claim_error": error,
        "item": item,
        "oob": True,
        **_score_context(item, results),
        **_review_context(request),
    }
    html = "".join(
        render_to_string(f"{TEMPLATE}#{name}", context, request=request) for name in ("claim", "summary", "scores")
    )
    return HttpResponse(html)


def _review_context(request: HttpRequest) -> dict[str, Any]:
    return {"can_review": has_role(request.user, REVIEWER), "verdicts": Verdict.choices}


def _score_context(item: RunItem, results: dict[str, Any]) -> dict[str, Any]:
    """What the score panel shows: each metric in run order, the rubric's raw vs clamped values, the run's overall."""
    run = item.run
    ordered = [results[name] for name in execution_order(run.metrics) if name in results]
    rubric = results.get("rubric")
    rubric_rows = []
    if rubric is not None and rubric.score is not None:
        raw, clamped = rubric.details.get("raw", {}), rubric.details.get("scores", {})
        rubric_rows = [
            {
                "name": name,
                "raw": raw.get(name),
                "clamped": clamped.get(name),
                "changed": raw.get(name) != clamped.get(name),
            }
            for name in DIMENSIONS
        ]
    aggregates = run.aggregates or {}
    review = aggregates.get("review", {}).get("overall", {})
    faithfulness = results.get("faithfulness")
    return {
        "item": item,
        "run": run,
        "metric_results": ordered,
        "rubric_rows": rubric_rows,
        "item_judge": (faithfulness.details.get("judge") if faithfulness is not None else None),
        "run_overall": aggregates.get("overall"),
        "run_overall_judge": review.get("judge"),
        "audit_state": item_audit_state(item.pk),  # "Audit 12 / 150" when the item was drawn
    }
