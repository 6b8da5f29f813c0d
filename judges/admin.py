from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from judges.forms import JudgeConfigForm
from judges.models import JudgeCall, JudgeConfig


@admin.register(JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    form = JudgeConfigForm
    list_display = (
        "name",
        "provider",
        "model",
        "is_heuristic",
        "base_url",
        "api_key_env",
        "max_concurrency",
        "requests_per_minute",
        "tokens_per_minute",
    )
    list_filter = ("provider",)
    search_fields = ("name", "model")

    @admin.display(boolean=True, description="heuristic (no LLM)")
    def is_heuristic(self, config: JudgeConfig) -> bool:
        return config.is_heuristic


@admin.register(JudgeCall)
class JudgeCallAdmin(admin.ModelAdmin):
    """The call log is read-only: it is also the cache, and every verdict points at it."""

    list_display = (
        "id",
        "created_at",
        "config",
        "prompt_name",
        "prompt_version",
        "run_id",
        "attempts",
        "input_tokens",
        "output_tokens",
        "cost",
        "latency_ms",
        "failed",
    )
    list_filter = ("config", "prompt_name")
    list_select_related = ("config",)
    search_fields = ("=cache_key", "error")
    date_hierarchy = "created_at"
    show_full_result_count = False  # COUNT(*) over millions of calls on every page is slow

    @admin.display(boolean=True, description="failed")
    def failed(self, call: JudgeCall) -> bool:
        return bool(call.error)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: JudgeCall | None = None) -> bool:
        return False
