"""Run pages: the list, the new-run form, the run page (progress, aggregates, items table) and its exports.

One view serves a page and its fragments: with HTMX, `run_detail` renders only the progress
(polled; HTTP 286 stops the polling once the run has finished) or only the items table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HTMX_STOP_POLLING

from datasets import selectors as dataset_selectors
from evalsite.roles import REVIEWER, has_role
from evaluations import exports, item_table, run_selectors
from evaluations.audit_estimates import run_calibration
from evaluations.charts import histograms_html
from evaluations.forms import RunForm
from evaluations.item_table import ItemQuery, ItemQueryError
from evaluations.metrics import execution_order, has_overall
from evaluations.metrics.run_settings import SettingsError
from evaluations.models import FINISHED_STATUSES, ItemStatus, Run, RunStatus, Verdict
from evaluations.selectors import run_progress
from evaluations.services import runs as run_services
from evaluations.views.audits import calibration_context
from judges import selectors as judge_selectors
from targets.selectors import run_target_summary

RUNS_PER_PAGE = 25
PROGRESS_TARGET = "run-progress"
ITEMS_TARGET = "items"


@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    filters = run_selectors.RunFilters.from_params(request.GET)
    page = Paginator(run_selectors.run_list(filters), RUNS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "filters": filters,
        "datasets": dataset_selectors.dataset_list(),
        "judges": judge_selectors.judge_config_list(),
        "statuses": RunStatus.choices,
        "can_start": has_role(request.user, REVIEWER),
    }
    return render(request, "evaluations/run_list.html", context)


@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    if not has_role(request.user, REVIEWER):
        raise PermissionDenied("Starting a run needs the reviewer role.")  # before showing the form
    versions = dataset_selectors.version_choices()
    dataset_id = request.GET.get("dataset")
    initial_version = dataset_selectors.latest_version_id(
        versions, dataset_id=int(dataset_id) if dataset_id and dataset_id.isdigit() else None
    )
    form = RunForm(request.POST or None, versions=versions, initial_version=initial_version)
    if request.method == "POST" and form.is_valid():
        try:
            run = run_services.run_create(
                dataset_version=form.cleaned_data["dataset_version"],
                judge_config=form.cleaned_data["judge_config"],
                metrics=form.cleaned_data["metrics"],
                settings=form.run_settings(),
                name=form.cleaned_data["name"],
                user=request.user,
                target=form.cleaned_data["target"],
            )
        except SettingsError as exc:
            form.add_settings_error(exc.key, str(exc))
        except ValueError as exc:  # validate_metrics: "metrics: ..."
            form.add_settings_error(str(exc).split(":", 1)[0], str(exc))
        else:
            messages.success(request, f"Run {run.pk} queued: {run.items_total} items.")
            return redirect("evaluations:run_detail", run_id=run.pk)
    has_judges = form.fields["judge_config"].queryset.exists()
    return render(
        request, "evaluations/run_new.html", {"form": form, "has_versions": bool(versions), "has_judges": has_judges}
    )


@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    if request.htmx and request.htmx.target == PROGRESS_TARGET:
        return _progress_fragment(request, run_id)
    run = _get_run(run_id)
    try:
        query = ItemQuery.from_params(request.GET, run.metrics)
    except ItemQueryError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    context = {
        "run": run,
        "query": query,
        "page": item_table.item_page(run.pk, run.metrics, query, request.GET.get("page")),
        **_table_context(run, query),
    }
    if request.htmx and request.htmx.target == ITEMS_TARGET:
        return render(request, "evaluations/run_detail.html#items", context)
    context.update(_page_context(request, run))
    return render(request, "evaluations/run_detail.html", context)


def _get_run(run_id: int) -> Run:
    run = run_selectors.run_get(run_id)
    if run is None:
        raise Http404("No such run.")
    return run


def _progress_fragment(request: HttpRequest, run_id: int) -> HttpResponse:
    progress = run_progress(run_id)
    if progress is None:
        raise Http404("No such run.")
    finished = progress.status in FINISHED_STATUSES
    context = {"progress": progress, "run_id": run_id, "progress_finished": finished}
    response = render(request, "evaluations/run_detail.html#progress", context)
    if finished:
        # Stop polling and reload the page: its aggregates, charts and controls are now final.
        response.status_code = HTMX_STOP_POLLING
        response["HX-Refresh"] = "true"
    return response


def _table_context(run: Run, query: ItemQuery) -> dict:
    aggregates = run.aggregates or {}
    sort_state = {query.sort_column: "desc" if query.descending else "asc"} if query.sort else {}
    return {
        "columns": execution_order(run.metrics),
        # (column, query string that sorts by it, "asc" / "desc" / "")
        "sort_links": [
            (column, query.sort_params(column), sort_state.get(column, ""))
            for column in item_table.sortable_columns(run.metrics)
        ],
        "worst_params": query.params(sort=item_table.OVERALL) if has_overall(run.metrics) else "",
        "tags": sorted(aggregates.get("tags", {})),
        "item_statuses": ItemStatus.values,
        "verdicts": Verdict.values,
    }


def _page_context(request: HttpRequest, run: Run) -> dict:
    aggregates = run.aggregates or {}
    metrics = execution_order(run.metrics)
    names = [item_table.OVERALL, *metrics] if has_overall(metrics) else metrics
    histograms = histograms_html(run.pk, run_selectors.run_histograms(aggregates, names))
    can_control = has_role(request.user, REVIEWER)
    calibration = run_calibration(run.pk) if "faithfulness" in run.metrics else None
    return {
        **calibration_context(run, calibration, can_review=can_control),
        "progress": run_progress(run.pk) if not run.is_finished else None,
        "run_id": run.pk,
        "aggregates": aggregates,
        "metric_stats": [(name, aggregates.get("metrics", {}).get(name)) for name in metrics],
        "tag_stats": sorted(aggregates.get("tags", {}).items()),
        "histograms": histograms,
        "reviews": run_selectors.run_review_counts(run.pk),
        # a live target's latency and errors: final in the aggregates, read live while the run goes on
        "target_summary": aggregates.get("target") or (run_target_summary(run.pk) if run.target_config else None),
        "can_control": can_control,
        "can_cancel": can_control and run.status in (RunStatus.QUEUED, RunStatus.RUNNING),
        "can_resume": can_control and run.status == RunStatus.CANCELLED,
        "can_rerun_failed": can_control
        and run.status in (RunStatus.COMPLETED_WITH_ERRORS, RunStatus.FAILED)
        and run.items_failed > 0,
    }


# --- Controls ----------------------------------------------------------------------------------


def _control(request: HttpRequest, run_id: int, service: Callable[[Run], str]) -> HttpResponse:
    """POST a run control: the service checks the role (PermissionDenied: 403) and the run's status."""
    run = _get_run(run_id)
    try:
        messages.success(request, service(run))
    except ValueError as exc:
        messages.error(request, str(exc))
    return redirect("evaluations:run_detail", run_id=run.pk)


@require_POST
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    def cancel(run: Run) -> str:
        run = run_services.run_cancel(run=run, user=request.user)
        return f"Run {run.pk} is {run.get_status_display().lower()}."

    return _control(request, run_id, cancel)


@require_POST
def run_resume(request: HttpRequest, run_id: int) -> HttpResponse:
    def resume(run: Run) -> str:
        run_services.run_resume(run=run, user=request.user)
        return f"Run {run.pk} resumed."

    return _control(request, run_id, resume)


@require_POST
def run_rerun_failed(request: HttpRequest, run_id: int) -> HttpResponse:
    def rerun(run: Run) -> str:
        count = run_services.run_rerun_failed(run=run, user=request.user)
        return f"Re-running {count} failed items of run {run.pk}."

    return _control(request, run_id, rerun)


# --- Exports -----------------------------------------------------------------------------------

EXPORT_FORMATS: dict[str, tuple[str, Callable[..., Iterator[str]]]] = {
    "csv": ("text/csv; charset=utf-8", exports.csv_lines),
    "json": ("application/json", exports.json_chunks),
}


@require_GET
def run_export(request: HttpRequest, run_id: int, fmt: str) -> StreamingHttpResponse | HttpResponse:
    """The items matching the table's filters and sort, streamed (nothing but one chunk is held in memory)."""
    run = _get_run(run_id)
    try:
        query = ItemQuery.from_params(request.GET, run.metrics)
    except ItemQueryError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    content_type, render_rows = EXPORT_FORMATS[fmt]
    rows = item_table.item_export_rows(run.pk, run.metrics, query)
    response = StreamingHttpResponse(render_rows(rows, run.metrics), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-items.{fmt}"'
    return response
