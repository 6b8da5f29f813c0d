from __future__ import annotations

from django.db import models


class Provider(models.TextChoices):
    OPENAI = "openai", "OpenAI"
    ANTHROPIC = "anthropic", "Anthropic"
    OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible (vLLM, Ollama, LM Studio)"
    OFFLINE = "offline", "Offline heuristic (no network)"


class JudgeConfig(models.Model):
    """How to reach one judge model. The API key itself is never stored: only its variable's name."""

    name = models.CharField(max_length=100, unique=True)
    provider = models.CharField(max_length=32, choices=Provider.choices)
    model = models.CharField(max_length=200)
    base_url = models.URLField(blank=True)
    api_key_env = models.CharField(
        max_length=100, blank=True, help_text="Name of the environment variable holding the API key"
    )
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(default=1024)
    timeout_seconds = models.FloatField(default=60.0)
    max_concurrency = models.PositiveIntegerField(default=8)
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    tokens_per_minute = models.PositiveIntegerField(null=True, blank=True)
    input_price_per_million = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    output_price_per_million = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_heuristic(self) -> bool:
        return self.provider == Provider.OFFLINE


class JudgeCall(models.Model):
    """One judge prompt sent (or answered from cache): the log and the cache."""

    config = models.ForeignKey(JudgeConfig, related_name="calls", on_delete=models.CASCADE)
    run_id = models.BigIntegerField(null=True, blank=True, db_index=True)  # evaluations.Run; no FK across apps
    # evaluations.RunItem whose evaluation made (or, from the cache, reused) this call.
    run_item_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    cache_key = models.CharField(max_length=64, db_index=True)
    prompt_name = models.CharField(max_length=64)
    prompt_version = models.CharField(max_length=16)
    request = models.JSONField()
    raw_reply = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=1)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["cache_key", "error"], name="judgecall_cache_lookup")]

    def __str__(self) -> str:
        return f"{self.prompt_name} v{self.prompt_version} ({self.config.name})"
