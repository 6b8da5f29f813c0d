from __future__ import annotations

from django.conf import settings
from django.db import models


class Dataset(models.Model):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def latest_version(self) -> DatasetVersion | None:
        return self.versions.order_by("-number").first()


class DatasetVersion(models.Model):
    """An immutable snapshot of a dataset's content; a changed upload makes the next number."""

    dataset = models.ForeignKey(Dataset, related_name="versions", on_delete=models.CASCADE)
    number = models.PositiveIntegerField()
    content_sha256 = models.CharField(max_length=64)
    source_filename = models.CharField(max_length=255, blank=True)
    source_format = models.CharField(max_length=10)
    item_count = models.PositiveIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "number"], name="uniq_dataset_version_number"),
            models.UniqueConstraint(fields=["dataset", "content_sha256"], name="uniq_dataset_version_content"),
        ]

    def __str__(self) -> str:
        return f"{self.dataset.name}@{self.number}"


class Example(models.Model):
    version = models.ForeignKey(DatasetVersion, related_name="examples", on_delete=models.CASCADE)
    position = models.PositiveIntegerField()
    external_id = models.CharField(max_length=255)
    query = models.TextField()
    response = models.TextField(blank=True)
    contexts = models.JSONField(default=list)  # [{"id", "text", "score"?, "metadata"?}]
    reference_answer = models.TextField(blank=True)
    expected_context_ids = models.JSONField(default=list)
    retrieved_ids = models.JSONField(null=True, blank=True)  # rank order; None: the contexts' order
    tags = models.JSONField(default=list)
    metadata = models.JSONField(default=dict)

    class Meta:
        ordering = ["version", "position"]
        constraints = [
            models.UniqueConstraint(fields=["version", "external_id"], name="uniq_example_external_id"),
        ]

    def __str__(self) -> str:
        return self.external_id
