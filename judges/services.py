"""Writes of the judges app: judge configs and the JudgeCall log."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import transaction

from evalsite.db import insert_rows
from judges.models import JudgeCall, JudgeConfig, Provider

OFFLINE_JUDGE_NAME = "offline"
OFFLINE_JUDGE_MODEL = "heuristic-v1"
DEFAULT_API_KEY_ENV = {Provider.OPENAI: "OPENAI_API_KEY", Provider.ANTHROPIC: "ANTHROPIC_API_KEY"}
EDITABLE_FIELDS = (
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "temperature",
    "max_tokens",
    "timeout_seconds",
    "max_concurrency",
    "requests_per_minute",
    "tokens_per_minute",
    "input_price_per_million",
    "output_price_per_million",
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MILLION = Decimal(1_000_000)
_COST_PLACES = Decimal("0.000001")


@transaction.atomic
def judge_config_create(
    *,
    name: str,
    provider: str,
    model: str,
    base_url: str = "",
    api_key_env: str = "",
    temperature: float = 0.0,
    max_tokens: int = 1024,
    timeout_seconds: float = 60.0,
    max_concurrency: int = 8,
    requests_per_minute: int | None = None,
    tokens_per_minute: int | None = None,
    input_price_per_million: Decimal | float | str = 0,
    output_price_per_million: Decimal | float | str = 0,
) -> JudgeConfig:
    """Create a judge config. `api_key_env` defaults to OPENAI_API_KEY / ANTHROPIC_API_KEY for those providers."""
    config = JudgeConfig(
        name=name,
        provider=provider,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env or DEFAULT_API_KEY_ENV.get(provider, ""),
        temperature=temperature,
        max_tokens=max_tokens,
        timeout_seconds=timeout_seconds,
        max_concurrency=max_concurrency,
        requests_per_minute=requests_per_minute,
        tokens_per_minute=tokens_per_minute,
        input_price_per_million=Decimal(str(input_price_per_million)),
        output_price_per_million=Decimal(str(output_price_per_million)),
    )
    judge_config_validate(config)
    config.save()
    return config


@transaction.atomic
def judge_config_update(*, config: JudgeConfig, **changes: Any) -> JudgeConfig:
    """Change some of a config's fields (names in EDITABLE_FIELDS); validates the result as a whole."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise ValidationError({field: "cannot be changed" for field in sorted(unknown)})
    for field, value in changes.items():
        if field.endswith("_price_per_million"):
            value = Decimal(str(value))
        setattr(config, field, value)
    if "provider" in changes and not config.api_key_env:
        config.api_key_env = DEFAULT_API_KEY_ENV.get(config.provider, "")
    judge_config_validate(config)
    config.save()
    return config


def judge_default_offline() -> JudgeConfig:
    """The judge that works with nothing configured: deterministic heuristics, no network, no key."""
    config, _ = JudgeConfig.objects.get_or_create(
        name=OFFLINE_JUDGE_NAME,
        defaults={"provider": Provider.OFFLINE, "model": OFFLINE_JUDGE_MODEL, "max_concurrency": 0},
    )
    return config


def judge_call_cost(config: JudgeConfig, *, input_tokens: int, output_tokens: int) -> Decimal:
    cost = (input_tokens * config.input_price_per_million + output_tokens * config.output_price_per_million) / _MILLION
    return cost.quantize(_COST_PLACES)


def judge_call_record(
    *,
    config: JudgeConfig,
    run_id: int | None,
    cache_key: str,
    run_item_id: int | None = None,
    prompt_name: str,
    prompt_version: str,
    request: dict,
    raw_reply: str,
    input_tokens: int,
    output_tokens: int,
    latency_ms: int,
    attempts: int,
    error: str = "",
) -> JudgeCall:
    """Log one judge call (success or final failure). A successful row is also the cache entry for its key.

    It runs for every judge call, so it is one plain-SQL INSERT ... RETURNING id (evalsite.db.insert_rows).
    """
    call = JudgeCall(
        config=config,
        run_id=run_id,
        run_item_id=run_item_id,
        cache_key=cache_key,
        prompt_name=prompt_name,
        prompt_version=prompt_version,
        request=request,
        raw_reply=raw_reply,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=judge_call_cost(config, input_tokens=input_tokens, output_tokens=output_tokens),
        latency_ms=latency_ms,
        attempts=attempts,
        error=error,
    )
    insert_rows([call], return_ids=True)
    return call


def judge_config_validate(config: JudgeConfig) -> None:
    """Model validation plus the rules the model cannot express; errors are keyed by field name."""
    errors: dict[str, list[str]] = {}
    try:
        # base_url is checked below: Django's URLValidator rejects docker host names such as http://vllm:8000/v1.
        config.full_clean(exclude=["base_url"])
    except ValidationError as exc:
        errors.update(exc.message_dict)

    def add(field: str, message: str) -> None:
        errors.setdefault(field, []).append(message)

    if config.base_url:
        parts = urlsplit(config.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            add("base_url", f"{config.base_url!r} is not an http(s) URL such as http://localhost:8000/v1")
    elif config.provider == Provider.OPENAI_COMPATIBLE:
        add("base_url", "is required for openai_compatible judges (e.g. http://localhost:8000/v1 for vLLM)")
    if config.api_key_env and not _ENV_NAME.match(config.api_key_env):
        # Not echoed: a mistyped value is often the key itself.
        add(
            "api_key_env",
            "is not an environment variable name: give the variable's name (e.g. OPENAI_API_KEY), not the key",
        )
    if config.provider in DEFAULT_API_KEY_ENV and not config.api_key_env:
        add("api_key_env", f"is required for {config.provider} judges")
    if not 0 <= config.temperature <= 2:
        add("temperature", "must be between 0 and 2")
    if config.timeout_seconds <= 0:
        add("timeout_seconds", "must be more than 0")
    if not config.max_tokens:
        add("max_tokens", "must be at least 1")
    for field in ("requests_per_minute", "tokens_per_minute"):
        if getattr(config, field) == 0:
            add(field, "must be at least 1 (leave it empty for no limit)")
    for field in ("input_price_per_million", "output_price_per_million"):
        if getattr(config, field) < 0:
            add(field, "must not be negative")
    if errors:
        raise ValidationError(errors)
