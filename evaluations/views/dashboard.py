"""The dashboard (`/`): recent runs with live progress, items awaiting review, trends per dataset, judge spend.

One view, page and fragment: HTMX polls the recent runs (`#recent-runs`) every 2 s while a run is
queued or running; the fragment answers HTTP 286 (stop polling) once none is.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django_htmx.http import HTMX_STOP_POLLING

from datasets import selectors as dataset_selectors
from evalsite.roles import REVIEWER, has_role
from evaluations import dashboard
from evaluations.analysis_charts import trend_html

TEMPLATE = "evaluations/dashboard.html"
RUNS_TARGET = "recent-runs"


@require_GET
def dashboard_page(request: HttpRequest) -> HttpResponse:
    runs = dashboard.recent_runs()
    polling = dashboard.any_active(runs)
    context = {"runs": runs, "polling": polling}
    if request.htmx and request.htmx.target == RUNS_TARGET:
        response = render(request, f"{TEMPLATE}#recent_runs", context)
        if not polling:
            response.status_code = HTMX_STOP_POLLING
        return response
    trends = dashboard.dataset_trends()
    context |= {
        "trends": [(trend, trend_html(trend.series, f"trend-{trend.dataset_id}")) for trend in trends],
        "spend": dashboard.judge_spend(),
        "can_start": has_role(request.user, REVIEWER),
        # the empty state's next step: import a dataset first, or start a run of one
        "has_datasets": dataset_selectors.dataset_list().exists() if not runs else True,
    }
    return render(request, TEMPLATE, context)
