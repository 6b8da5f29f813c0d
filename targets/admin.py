from __future__ import annotations

from django.contrib import admin

from targets.forms import TargetForm
from targets.models import Target, TargetSnapshot


@admin.register(Target)
class TargetAdmin(admin.ModelAdmin):
    form = TargetForm
    list_display = ("name", "method", "url", "timeout_seconds", "max_concurrency", "requests_per_minute")
    search_fields = ("name", "url")
    fieldsets = (
        (None, {"fields": ("name", "url", "method")}),
        ("Request", {"fields": ("headers", "request_template")}),
        ("Response mapping (JMESPath)", {"fields": ("answer", "contexts", "retrieved_ids")}),
        ("Limits", {"fields": ("timeout_seconds", "max_concurrency", "requests_per_minute")}),
    )


@admin.register(TargetSnapshot)
class TargetSnapshotAdmin(admin.ModelAdmin):
    """Read-only: a snapshot is what the target answered a run item, kept as it was."""

    list_display = ("item_id", "status", "http_status", "latency_ms", "attempts", "created_at")
    list_filter = ("status",)
    readonly_fields = [field.name for field in TargetSnapshot._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
