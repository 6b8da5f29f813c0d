"""The API's own tables: per-user tokens (hashed), idempotency keys of run creation, run callbacks."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from evaluations.models import Run


class ApiToken(models.Model):
    """A personal API token. Only its SHA-256 is stored: the token itself is shown once, at creation."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, related_name="api_tokens", on_delete=models.CASCADE)
    name = models.CharField(max_length=100, blank=True)
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)  # the token's first characters, to tell tokens apart
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class IdempotencyKey(models.Model):
    """`Idempotency-Key` of a POST /api/runs/: the same key from the same user within 24 h returns this run."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, related_name="+", on_delete=models.CASCADE)
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)
    run = models.ForeignKey(Run, null=True, related_name="+", on_delete=models.CASCADE)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="uniq_idempotency_user_key")]

    def __str__(self) -> str:
        return f"{self.key} → run {self.run_id}"


class CallbackStatus(models.TextChoices):
    PENDING = "pending"  # the run has not finished yet
    DELIVERING = "delivering"  # finished; attempts under way
    DELIVERED = "delivered"
    FAILED = "failed"  # every attempt failed


class RunCallback(models.Model):
    """A run's `callback_url`: one POST of its summary when it finishes, retried with backoff."""

    run = models.OneToOneField(Run, primary_key=True, related_name="api_callback", on_delete=models.CASCADE)
    url = models.URLField(max_length=2000)
    # Where the run's API and web URLs point (the request's scheme and host when the run was created).
    base_url = models.CharField(max_length=500)
    status = models.CharField(max_length=12, choices=CallbackStatus.choices, default=CallbackStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"run {self.run_id} → {self.url} ({self.status})"
