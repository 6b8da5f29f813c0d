"""Read-mostly admin: runs change through services (actions below), results only through the engine and reviews."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.loader import render_to_string

from evaluations.admin_tables import aggregate_tables
from evaluations.models import Audit, AuditItem, Claim, MetricResult, Run, RunItem, VerdictOverride
from evaluations.services import runs


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = (
        "__str__",
        "dataset_version",
        "judge_config",
        "status",
        "items_total",
        "items_done",
        "items_failed",
        "judge_calls",
        "cost",
        "created_at",
    )
    list_filter = ("status", "judge_config")
    search_fields = ("name", "dataset_version__dataset__name")
    list_select_related = ("dataset_version__dataset", "judge_config")
    fields = (
        "name",
        "dataset_version",
        "judge_config",
        ("target", "target_config"),
        "metrics",
        "settings",
        "status",
        "error",
        ("items_total", "items_done", "items_failed"),
        ("judge_calls", "cache_hits", "input_tokens", "output_tokens", "cost"),
        "aggregates_table",
        "created_by",
        ("created_at", "started_at", "finished_at", "heartbeat_at"),
    )
    readonly_fields = (
        "dataset_version",
        "judge_config",
        "target",
        "target_config",
        "metrics",
        "settings",
        "status",
        "error",
        "items_total",
        "items_done",
        "items_failed",
        "judge_calls",
        "cache_hits",
        "input_tokens",
        "output_tokens",
        "cost",
        "aggregates_table",
        "created_by",
        "created_at",
        "started_at",
        "finished_at",
        "heartbeat_at",
    )
    actions = ("cancel_runs", "resume_runs", "rerun_failed_items")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # runs start from the runs page, the API or `manage.py evaluate`

    @admin.display(description="Aggregates")
    def aggregates_table(self, run: Run) -> str:
        return render_to_string("admin/evaluations/run_aggregates.html", aggregate_tables(run.aggregates))

    @admin.action(description="Cancel the selected runs")
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        self._apply(request, queryset, runs.run_cancel, "cancelled")

    @admin.action(description="Resume the selected cancelled runs")
    def resume_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        self._apply(request, queryset, runs.run_resume, "resumed")

    @admin.action(description="Re-run the failed items of the selected runs")
    def rerun_failed_items(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        self._apply(request, queryset, runs.run_rerun_failed, "re-running their failed items")

    def _apply(self, request: HttpRequest, queryset: QuerySet[Run], action: Callable[..., object], done: str) -> None:
        applied = 0
        for run in queryset:
            try:
                action(run=run)
                applied += 1
            except ValueError as exc:
                self.message_user(request, str(exc), messages.WARNING)
        if applied:
            self.message_user(request, f"{applied} run(s) {done}.", messages.SUCCESS)


@admin.register(RunItem)
class RunItemAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "example", "status", "attempts", "overall_score", "duration_ms", "finished_at")
    list_filter = ("status",)
    search_fields = ("example__external_id", "error")
    list_select_related = ("run", "example")


# A result with no threshold (or no score) neither passes nor fails: a dash, not the admin's "?" icon.
PASSED_MARKS = {True: "✓ passed", False: "✗ failed", None: "–"}
# RunItem's label names its run and its example's external id: lists of results select both.
ITEM_LABEL = ("item__run", "item__example")


@admin.register(MetricResult)
class MetricResultAdmin(ReadOnlyAdmin):
    list_display = ("item", "metric", "score", "passed_mark", "threshold", "prompt_version", "skipped_reason")
    list_filter = ("metric", "passed")
    search_fields = ("item__example__external_id", "item__run__name")
    list_select_related = ITEM_LABEL
    exclude = ("passed",)  # shown as passed_mark
    readonly_fields = ("passed_mark",)

    @admin.display(description="Passed", ordering="passed")
    def passed_mark(self, result: MetricResult) -> str:
        return PASSED_MARKS[result.passed]


@admin.register(Claim)
class ClaimAdmin(ReadOnlyAdmin):
    list_display = ("item", "position", "__str__", "judge_verdict", "current_verdict")
    list_filter = ("judge_verdict", "current_verdict")
    search_fields = ("text", "item__example__external_id")
    list_select_related = ITEM_LABEL


@admin.register(VerdictOverride)
class VerdictOverrideAdmin(ReadOnlyAdmin):
    list_display = ("claim", "claim_item", "old_verdict", "new_verdict", "reviewer", "created_at")
    list_filter = ("new_verdict",)
    list_select_related = ("claim__item__run", "claim__item__example", "reviewer")

    @admin.display(description="Item")
    def claim_item(self, override: VerdictOverride) -> str:
        return str(override.claim.item)


@admin.register(Audit)
class AuditAdmin(ReadOnlyAdmin):
    """Audits start from the run page (`services.audits.audit_start`); deleting one lets a run be audited afresh."""

    list_display = ("__str__", "run", "size", "population", "seed", "created_by", "created_at")
    list_select_related = ("run", "created_by")
    search_fields = ("run__name",)

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return bool(request.user.is_superuser)


@admin.register(AuditItem)
class AuditItemAdmin(ReadOnlyAdmin):
    list_display = ("audit", "position", "item", "audited_at", "audited_by")
    list_filter = (("audited_at", admin.EmptyFieldListFilter),)
    search_fields = ("item__example__external_id",)
    list_select_related = ("audit__run", "item__run", "item__example", "audited_by")
