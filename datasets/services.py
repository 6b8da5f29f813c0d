"""Writes for datasets: importing a file as a new immutable version."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, BinaryIO

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from datasets.models import Dataset, DatasetVersion, Example
from datasets.parsing import NO_SIZE_LIMIT, DatasetImportError, Item, ItemStream, resolve_format

__all__ = ["NO_SIZE_LIMIT", "DatasetImportError", "ImportResult", "dataset_import"]

# Rows per INSERT, and items held in memory at once. bench/import_speed.py (20,000 items x 3 contexts,
# 50 MB) stored in the same 8-12 s with batches of 100 to 5,000 rows; 1,000 keeps each statement near 2.5 MB.
EXAMPLE_BATCH_SIZE = 1000
_NAME_MAX_LENGTH = Dataset._meta.get_field("name").max_length


@dataclass(frozen=True)
class ImportResult:
    version: DatasetVersion
    created: bool


class _SameContent(Exception):
    def __init__(self, version: DatasetVersion) -> None:
        self.version = version


def dataset_import(
    *,
    name: str,
    file: BinaryIO,
    filename: str,
    fmt: str | None = None,
    user: Any = None,
    max_bytes: int | None = None,
) -> ImportResult:
    """Validate the whole file while storing it as the dataset's next version (or find the identical one).

    The file is read and written a batch at a time inside one transaction, so memory stays flat;
    a problem anywhere (the last line too) rolls everything back: nothing is written unless every
    item is valid. Raises DatasetImportError listing the problems. `max_bytes`: default the upload
    limit DATASET_MAX_UPLOAD_BYTES; the command line passes NO_SIZE_LIMIT.
    """
    name = (name or "").strip()
    if not name:
        raise DatasetImportError("Give the dataset a name.")
    if len(name) > _NAME_MAX_LENGTH:
        raise DatasetImportError(f"The dataset name is longer than {_NAME_MAX_LENGTH} characters.")
    fmt = resolve_format(filename, fmt)
    stream = ItemStream(file, fmt=fmt, max_bytes=max_bytes or settings.DATASET_MAX_UPLOAD_BYTES)
    return _store_version(name=name, stream=stream, filename=filename, fmt=fmt, user=_real_user(user))


@transaction.atomic
def _store_version(*, name: str, stream: ItemStream, filename: str, fmt: str, user: Any) -> ImportResult:
    dataset, _ = Dataset.objects.get_or_create(name=name, defaults={"created_by": user})
    # Serialises imports into one dataset so version numbers and content checks don't race.
    Dataset.objects.select_for_update().filter(pk=dataset.pk).get()
    last_number = dataset.versions.aggregate(last=Max("number"))["last"] or 0
    try:
        with transaction.atomic():  # a savepoint: identical content undoes the rows written
            version = DatasetVersion.objects.create(
                dataset=dataset,
                number=last_number + 1,
                content_sha256=f"importing-{uuid.uuid4().hex}",  # the hash is known at the end of the file
                source_filename=filename[-255:],
                source_format=fmt,
                item_count=0,
                created_by=user,
            )
            for batch in stream.batches(EXAMPLE_BATCH_SIZE):
                first = stream.count - len(batch) + 1
                Example.objects.bulk_create(
                    [_example(version, position, item) for position, item in enumerate(batch, start=first)]
                )
            existing = dataset.versions.filter(content_sha256=stream.sha256).first()
            if existing is not None:
                raise _SameContent(existing)
            version.content_sha256, version.item_count = stream.sha256, stream.count
            version.save(update_fields=["content_sha256", "item_count"])
    except _SameContent as same:
        return ImportResult(version=same.version, created=False)
    return ImportResult(version=version, created=True)


def _example(version: DatasetVersion, position: int, item: Item) -> Example:
    return Example(
        version=version,
        position=position,
        external_id=item["id"],
        query=item["query"],
        response=item["response"],
        contexts=item["contexts"],
        reference_answer=item["reference_answer"],
        expected_context_ids=item["expected_context_ids"],
        retrieved_ids=item["retrieved_ids"],
        tags=item["tags"],
        metadata=item["metadata"],
    )


def _real_user(user: Any) -> Any:
    return user if user is not None and getattr(user, "is_authenticated", False) else None
