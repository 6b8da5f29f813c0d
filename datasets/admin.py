"""Read-mostly admin: versions and their examples are immutable, so only a dataset's name and description change."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from datasets.models import Dataset, DatasetVersion, Example


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("name", "created_by", "created_at")
    search_fields = ("name", "description")
    fields = ("name", "description", "created_by", "created_at")
    readonly_fields = ("created_by", "created_at")


@admin.register(DatasetVersion)
class DatasetVersionAdmin(ReadOnlyAdmin):
    list_display = ("dataset", "number", "item_count", "source_filename", "source_format", "created_by", "created_at")
    list_filter = ("source_format",)
    search_fields = ("dataset__name", "source_filename", "content_sha256")
    list_select_related = ("dataset", "created_by")


@admin.register(Example)
class ExampleAdmin(ReadOnlyAdmin):
    list_display = ("external_id", "version", "position", "query")
    search_fields = ("external_id", "query", "version__dataset__name")
    list_select_related = ("version__dataset",)
