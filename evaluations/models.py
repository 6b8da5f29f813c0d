from __future__ import annotations

from django.conf import settings as django_settings
from django.db import models

from datasets.models import DatasetVersion, Example
from judges.models import JudgeConfig


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    CANCELLING = "cancelling"
    COMPLETED = "completed"
    COMPLETED_WITH_ERRORS = "completed_with_errors"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINISHED_STATUSES = (RunStatus.COMPLETED, RunStatus.COMPLETED_WITH_ERRORS, RunStatus.FAILED, RunStatus.CANCELLED)


class Run(models.Model):
    name = models.CharField(max_length=200, blank=True)
    dataset_version = models.ForeignKey(DatasetVersion, related_name="runs", on_delete=models.PROTECT)
    judge_config = models.ForeignKey(JudgeConfig, related_name="runs", on_delete=models.PROTECT)
    # A live target the items' answers come from (None: the dataset's stored answers), and its
    # configuration as the run called it (targets.client.TargetConfig.as_dict; no secret in it).
    target = models.ForeignKey("targets.Target", related_name="runs", null=True, blank=True, on_delete=models.SET_NULL)
    target_config = models.JSONField(default=dict, blank=True)
    metrics = models.JSONField(default=list)  # metric names, in order
    settings = models.JSONField(default=dict)  # weights, thresholds, citation pattern, repeats, ...
    status = models.CharField(max_length=24, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True)
    error = models.TextField(blank=True)
    items_total = models.PositiveIntegerField(default=0)
    items_done = models.PositiveIntegerField(default=0)
    items_failed = models.PositiveIntegerField(default=0)
    aggregates = models.JSONField(default=dict)
    judge_calls = models.PositiveIntegerField(default=0)
    cache_hits = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    created_by = models.ForeignKey(django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Set every few seconds by an in-process executor (`evaluate --in-process`): while it is
    # fresh the reaper leaves the run's pending items alone; once stale, workers adopt the run.
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name or f"run {self.pk}"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_STATUSES


class ItemStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"


class RunItem(models.Model):
    run = models.ForeignKey(Run, related_name="items", on_delete=models.CASCADE)
    example = models.ForeignKey(Example, related_name="run_items", on_delete=models.PROTECT)
    status = models.CharField(max_length=12, choices=ItemStatus.choices, default=ItemStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # When the item's task was last handed to the broker; None: not queued (yet, or again).
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    overall_score = models.FloatField(null=True, blank=True)
    # Set when a person has reviewed the item (every claim overridden or confirmed, or marked reviewed).
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, related_name="+", on_delete=models.SET_NULL
    )

    class Meta:
        ordering = ["run", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "example"], name="uniq_run_item")]
        indexes = [
            models.Index(fields=["run", "status"], name="runitem_run_status"),
            # The next items to hand to the broker, in order (the run's feeding window).
            models.Index(
                fields=["run", "id"],
                condition=models.Q(status="pending", enqueued_at__isnull=True),
                name="runitem_unqueued",
            ),
            # The reaper's scan for expired leases.
            models.Index(
                fields=["lease_expires_at"], condition=models.Q(status="running"), name="runitem_running_lease"
            ),
        ]

    def __str__(self) -> str:
        # Lists that show items select their run and example (see the admin), or this costs two queries.
        return f"{self.run} · {self.example.external_id}"


class MetricResult(models.Model):
    item = models.ForeignKey(RunItem, related_name="results", on_delete=models.CASCADE)
    metric = models.CharField(max_length=32)
    score = models.FloatField(null=True, blank=True)  # None: skipped
    passed = models.BooleanField(null=True)
    threshold = models.FloatField(null=True, blank=True)
    feedback = models.TextField(blank=True)
    details = models.JSONField(default=dict)
    raw_value = models.JSONField(null=True, blank=True)  # the judge's values before clamps / overrides
    prompt_version = models.CharField(max_length=64, blank=True)
    skipped_reason = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "metric"]
        constraints = [models.UniqueConstraint(fields=["item", "metric"], name="uniq_item_metric")]

    def __str__(self) -> str:
        return f"{self.metric}={self.score}"


CLAIM_LABEL_CHARS = 60


def shorten(text: str, limit: int) -> str:
    """At most `limit` characters of the text, cut at a word boundary with "…" when it is longer.

    A single word longer than the limit is cut inside it: there is no boundary to cut at.
    """
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    if text[limit - 1] != " " and " " in head:
        head = head[: head.rindex(" ")]
    return head.rstrip(" ,;:") + "…"


class Verdict(models.TextChoices):
    SUPPORTED = "SUPPORTED"
    PARTIALLY_SUPPORTED = "PARTIALLY_SUPPORTED"
    CONTRADICTED = "CONTRADICTED"
    NOT_ENOUGH_INFO = "NOT_ENOUGH_INFO"


class Claim(models.Model):
    item = models.ForeignKey(RunItem, related_name="claims", on_delete=models.CASCADE)
    position = models.PositiveIntegerField()
    text = models.TextField()
    judge_verdict = models.CharField(max_length=24, choices=Verdict.choices)
    current_verdict = models.CharField(max_length=24, choices=Verdict.choices)
    evidence = models.TextField(blank=True)
    context_ids = models.JSONField(default=list)
    # Set by the first human review (override or confirmation); history is in VerdictOverride.
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["item", "position"]
        constraints = [models.UniqueConstraint(fields=["item", "position"], name="uniq_claim_position")]

    def __str__(self) -> str:
        return shorten(self.text, CLAIM_LABEL_CHARS)


class VerdictOverride(models.Model):
    """One human review of a claim. A confirmation has new_verdict == old_verdict; an undo is a new
    entry back to the earlier verdict, never a deletion. The claim keeps its judge_verdict."""

    claim = models.ForeignKey(Claim, related_name="overrides", on_delete=models.CASCADE)
    reviewer = models.ForeignKey(django_settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    old_verdict = models.CharField(max_length=24, choices=Verdict.choices)
    new_verdict = models.CharField(max_length=24, choices=Verdict.choices)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.old_verdict} → {self.new_verdict}"


class Audit(models.Model):
    """A uniformly random sample of a finished run's scored items, for people to label (human-calibrated scores).

    One audit per run. `size` is what was asked for; fewer items are drawn when the run has fewer.
    The sample is `numpy.random.default_rng(seed)` over the run's scored items in id order
    (`services.audits.sample_positions`), so the seed reproduces it.
    """

    run = models.OneToOneField(Run, related_name="audit", on_delete=models.CASCADE)
    size = models.PositiveIntegerField()
    seed = models.PositiveBigIntegerField()
    population = models.PositiveIntegerField()  # scored items the sample was drawn from
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, related_name="+", on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"audit of {self.run} ({self.size} items, seed {self.seed})"


class AuditItem(models.Model):
    """One drawn item, at its draw position (1 = drawn first). Audited once every claim has a human verdict."""

    audit = models.ForeignKey(Audit, related_name="items", on_delete=models.CASCADE)
    item = models.ForeignKey(RunItem, related_name="audit_entries", on_delete=models.CASCADE)
    position = models.PositiveIntegerField()
    audited_at = models.DateTimeField(null=True, blank=True)
    audited_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, null=True, blank=True, related_name="+", on_delete=models.SET_NULL
    )

    class Meta:
        ordering = ["audit", "position"]
        constraints = [
            models.UniqueConstraint(fields=["audit", "position"], name="uniq_audit_position"),
            models.UniqueConstraint(fields=["audit", "item"], name="uniq_audit_item"),
        ]

    def __str__(self) -> str:
        return f"audit {self.audit_id} · #{self.position}"
