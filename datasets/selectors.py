"""Reads for datasets."""

from __future__ import annotations

from typing import Any

from django.db.models import F, Func, IntegerField, Max, OuterRef, QuerySet, Subquery

from datasets.models import Dataset, DatasetVersion, Example


class JSONArrayLength(Func):
    """Length of a JSON array column, computed in the database (PostgreSQL or SQLite)."""

    function = "jsonb_array_length"
    output_field = IntegerField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        return super().as_sql(compiler, connection, function="json_array_length", **extra_context)


def dataset_list() -> QuerySet[Dataset]:
    """Datasets with their latest version's number and item count and the time of the last upload."""
    latest = DatasetVersion.objects.filter(dataset=OuterRef("pk")).order_by("-number")
    return Dataset.objects.annotate(
        latest_number=Subquery(latest.values("number")[:1]),
        latest_item_count=Subquery(latest.values("item_count")[:1]),
        updated_at=Max("versions__created_at"),
    ).order_by("name")


def dataset_versions(dataset: Dataset) -> QuerySet[DatasetVersion]:
    return dataset.versions.select_related("created_by").order_by("-number")


def version_examples(version: DatasetVersion) -> QuerySet[Example]:
    """The version's examples in file order, with just what a list of them shows."""
    return (
        Example.objects.filter(version=version)
        .only("position", "external_id", "query", "response", "tags")
        .annotate(context_count=JSONArrayLength(F("contexts")))
        .order_by("position")
    )
