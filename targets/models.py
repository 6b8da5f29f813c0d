"""Live targets: a running RAG application a run calls for each question, and what each call returned.

A target's secret header values are never stored: a header names the environment variable that
holds its value (see targets/client.py), like a judge's API key.
"""

from __future__ import annotations

from django.db import models


class Method(models.TextChoices):
    POST = "POST", "POST"
    GET = "GET", "GET"
    PUT = "PUT", "PUT"


class Target(models.Model):
    name = models.CharField(max_length=100, unique=True)
    url = models.CharField(max_length=500)
    method = models.CharField(max_length=8, choices=Method.choices, default=Method.POST)
    # {"X-Api-Key": "literal value"} or {"Authorization": {"env": "RAG_TOKEN", "format": "Bearer {}"}}
    headers = models.JSONField(default=dict, blank=True)
    # Any JSON; strings carry {{query}}, {{id}}, {{metadata.x}}, ... (targets/templating.py).
    request_template = models.JSONField(default=dict, blank=True)
    # {"answer": "<JMESPath>", "contexts": "<JMESPath>", "retrieved_ids": "<JMESPath>"} (targets/mapping.py)
    response_mapping = models.JSONField(default=dict)
    timeout_seconds = models.FloatField(default=30.0)
    max_concurrency = models.PositiveIntegerField(default=4)
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SnapshotStatus(models.TextChoices):
    OK = "ok"
    ERROR = "error"


class TargetSnapshot(models.Model):
    """What the target returned for one run item: written once, never changed by later edits of the target.

    The item's metrics read the answer, contexts and retrieved ids from here; a re-delivered item
    that finds its snapshot reuses it instead of calling the target again.
    """

    item = models.OneToOneField("evaluations.RunItem", related_name="target_snapshot", on_delete=models.CASCADE)
    status = models.CharField(max_length=8, choices=SnapshotStatus.choices)
    error = models.TextField(blank=True)
    answer = models.TextField(blank=True)
    contexts = models.JSONField(default=list)  # [{"id", "text", "score"?}]
    retrieved_ids = models.JSONField(default=list)  # rank order
    latency_ms = models.PositiveIntegerField(null=True, blank=True)  # the answering call's
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=1)
    request = models.JSONField(default=dict)  # method, url, rendered body; header names only
    raw_body = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item"]

    def __str__(self) -> str:
        return f"snapshot of item {self.item_id} ({self.status})"
