"""Audit pages: start a run's audit, its queue in draw order, the next item to audit; the calibration panel's rows.

The writes are `services.audits`; the figures `audit_estimates.run_calibration`; the reads `audit_selectors`.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evalsite.roles import REVIEWER, has_role
from evaluations import audit_selectors, run_selectors
from evaluations.audit_estimates import CALIBRATED, MIN_AUDITED, run_calibration
from evaluations.forms import AuditStartForm
from evaluations.models import Run
from evaluations.services import audits as services
from evaluations.templatetags.run_format import percent, score

QUEUE_PER_PAGE = 50


@require_GET
def audit_queue(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _get_run(run_id)
    audit = audit_selectors.audit_for_run(run_id)
    page = (
        Paginator(audit_selectors.audit_queue(audit), QUEUE_PER_PAGE).get_page(request.GET.get("page"))
        if audit is not None
        else None
    )
    calibration = run_calibration(run_id) if audit is not None else None
    context = {
        "run": run,
        "audit": audit,
        "page": page,
        **calibration_context(run, calibration, can_review=has_role(request.user, REVIEWER)),
    }
    return render(request, "evaluations/audit_queue.html", context)


@require_POST
def audit_start(request: HttpRequest, run_id: int) -> HttpResponse:
    """Draw the run's audit sample (reviewers and admins; the service refuses anyone else with a 403)."""
    run = _get_run(run_id)
    form = AuditStartForm(request.POST)
    if not form.is_valid():
        for name, errors in form.errors.items():
            messages.error(request, f"{name}: {' '.join(errors)}")
        return redirect(f"{reverse('evaluations:run_detail', args=[run.pk])}#calibration")
    try:
        audit = services.audit_start(
            run=run, size=form.cleaned_data["size"], seed=form.cleaned_data["seed"], user=request.user
        )
    except ValueError as exc:
        messages.error(request, str(exc))
        return redirect(f"{reverse('evaluations:run_detail', args=[run.pk])}#calibration")
    drawn = min(audit.size, audit.population)
    messages.success(
        request, f"Audit started: {drawn} of {audit.population} scored items drawn at random (seed {audit.seed})."
    )
    return redirect("evaluations:audit_queue", run.pk)


@require_GET
def audit_next(request: HttpRequest, run_id: int) -> HttpResponse:
    """Open the next drawn item to audit after `?after=` in draw order; the audit queue when every one is audited."""
    after = request.GET.get("after", "")
    item_id = audit_selectors.audit_next_item(run_id, after=int(after) if after.isdigit() else None)
    if item_id is None:
        messages.info(request, "Every drawn item is audited.")
        return redirect("evaluations:audit_queue", run_id)
    return redirect("evaluations:item_review", run_id, item_id)


def _get_run(run_id: int) -> Run:
    run = run_selectors.run_get(run_id)
    if run is None:
        raise Http404("No such run.")
    return run


# --- The calibration panel (run page and audit queue) -----------------------------------------


def calibration_context(run: Run, calibration: dict[str, Any] | None, *, can_review: bool) -> dict[str, Any]:
    """What `evaluations/calibration_card.html` renders: progress, the figures' rows, or the start form
    (for reviewers and admins, `can_review`, on a finished run with faithfulness and no audit yet)."""
    can_start = (
        calibration is None and can_review and run.is_finished and "faithfulness" in run.metrics and run.items_done > 0
    )
    audit = (calibration or {}).get("audit", {})
    return {
        "calibration": calibration,
        "calibration_rows": calibration_rows(calibration) if calibration else [],
        "audit_percent": round(100 * audit["audited"] / audit["drawn"]) if audit.get("drawn") else 0,
        "audit_to_go": max(0, (calibration or {}).get("min_audited", 0) - audit.get("audited", 0)),
        "can_start_audit": can_start,
        "min_audited": MIN_AUDITED,
        "can_audit": can_review,
        "audit_form": AuditStartForm() if can_start else None,
    }


def calibration_rows(calibration: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per calibrated figure, its numbers formatted: 0.79 for a mean score, 79% for a pass rate."""
    if calibration["status"] != CALIBRATED:
        return []
    rows = []
    for figure in calibration["estimates"].values():
        show = percent if figure["kind"] == "pass_rate" else score
        calibrated, human = figure["calibrated"], figure["human"]
        rows.append(
            {
                "key": figure["key"],
                "label": figure["label"],
                "judge": show(figure["judge"]["mean"]),
                "calibrated": show(calibrated["mean"]),
                "interval": f"[{show(calibrated['ci_low'])}, {show(calibrated['ci_high'])}]",
                "human": f"{show(human['mean'])} [{show(human['ci_low'])}, {show(human['ci_high'])}]",
                "bias": _signed(figure["bias"], percent=figure["kind"] == "pass_rate"),
                "n_audited": figure["n_audited"],
                "n_items": figure["n_items"],
                "lam": f"{calibrated['lambda']:.2f}",
            }
        )
    return rows


def _signed(value: float, *, percent: bool) -> str:
    return f"{100 * value:+.0f} pts" if percent else f"{value:+.2f}"
