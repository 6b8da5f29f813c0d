"""Judge providers: one module each behind a small registry. A provider sends one rendered prompt.

`PROVIDERS[config.provider](config, prompt) -> ProviderReply(text, input_tokens, output_tokens)`;
failures raise `ProviderError` (with `retryable` and `retry_after`); the gateway does retries,
rate limits, caching and logging.
"""

from __future__ import annotations

from judges.providers import anthropic, offline, openai, openai_compatible
from judges.providers.base import Provider, ProviderError, ProviderReply, estimate_tokens
from judges.types import JudgeError

PROVIDERS: dict[str, Provider] = {
    "openai": openai.complete,
    "anthropic": anthropic.complete,
    "openai_compatible": openai_compatible.complete,
    "offline": offline.complete,
}

__all__ = ["PROVIDERS", "Provider", "ProviderError", "ProviderReply", "estimate_tokens", "get_provider"]


def get_provider(name: str) -> Provider:
    try:
        return PROVIDERS[name]
    except KeyError:
        raise JudgeError(f"unknown judge provider {name!r}; choose one of {', '.join(PROVIDERS)}") from None
