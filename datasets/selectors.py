"""Reads for datasets."""

from __future__ import annotations

from collections.abc import Iterator
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


class DatasetVersionNotFound(ValueError):
    """`NAME[@V]` names no dataset version; the message says what exists."""


def dataset_version_by_spec(spec: str) -> DatasetVersion:
    """The version `NAME@V` names, or NAME's latest; DatasetVersionNotFound saying what exists otherwise."""
    name, _, number = spec.rpartition("@") if "@" in spec else (spec, "", "")
    if number and not number.isdigit():
        raise DatasetVersionNotFound(f"version {number!r} is not a number (use NAME@3)")
    return dataset_version_for(name, int(number) if number else None)


def dataset_version_for(dataset: int | str, number: int | None = None) -> DatasetVersion:
    """Version `number` (default the latest) of the dataset with this id (an int) or name (a str);
    DatasetVersionNotFound saying what exists otherwise."""
    if isinstance(dataset, int):
        found = Dataset.objects.filter(pk=dataset).first()
        label = f"id {dataset}"
    else:
        found = Dataset.objects.filter(name=dataset).first()
        label = repr(dataset)
    if found is None:
        known = ", ".join(Dataset.objects.order_by("name").values_list("name", flat=True)[:20]) or "none"
        raise DatasetVersionNotFound(f"unknown dataset {label} (known: {known})")
    if number is None:
        version = found.latest_version()
        if version is None:
            raise DatasetVersionNotFound(f"dataset {found.name!r} has no version")
        return version
    version = found.versions.filter(number=number).first()
    if version is None:
        versions = found.versions.order_by("number").values_list("number", flat=True)
        raise DatasetVersionNotFound(
            f"unknown version {number} of {found.name!r} (versions: {', '.join(map(str, versions))})"
        )
    return version


def version_examples_full(version: DatasetVersion) -> QuerySet[Example]:
    """The version's examples in file order with every field (the API's example list)."""
    return Example.objects.filter(version=version).order_by("position")


def version_example_count(version_id: int) -> int:
    return Example.objects.filter(version_id=version_id).count()


def version_example_ids(version_id: int) -> Iterator[int]:
    """The version's example ids in file order (streamed: a run creates one item per id)."""
    return iter(Example.objects.filter(version_id=version_id).order_by("position").values_list("id", flat=True))


def version_example(*, dataset_id: int, number: int, external_id: str) -> Example:
    """One example of a dataset's version, with its version and dataset. Raises Example.DoesNotExist."""
    return Example.objects.select_related("version__dataset").get(
        version__dataset_id=dataset_id, version__number=number, external_id=external_id
    )


def neighbour_ids(example: Example) -> tuple[str | None, str | None]:
    """External ids of the examples before and after this one in file order (None at either end)."""
    siblings = Example.objects.filter(version_id=example.version_id).values_list("external_id", flat=True)
    previous = siblings.filter(position__lt=example.position).order_by("-position").first()
    following = siblings.filter(position__gt=example.position).order_by("position").first()
    return previous, following


def version_choices() -> list[DatasetVersion]:
    """Every version with its dataset, grouped by dataset name, newest version first (for pickers)."""
    return list(DatasetVersion.objects.select_related("dataset").order_by("dataset__name", "-number"))


def latest_version_id(versions: list[DatasetVersion], *, dataset_id: int | None = None) -> int | None:
    """The newest version of `dataset_id`, else the most recently uploaded version of any dataset."""
    candidates = [version for version in versions if dataset_id is None or version.dataset_id == dataset_id]
    candidates = candidates or versions
    return max(candidates, key=lambda version: version.created_at).pk if candidates else None
