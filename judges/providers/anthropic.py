"""Anthropic Messages API through the official `anthropic` SDK (2.x, API version 2026-10-21).

No temperature: the 2026-10-21 API rejects sampling parameters and SDK 2.x removed them. No JSON
mode either (structured outputs need a schema per prompt): the shared parser reads the text.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from judges.providers.base import ClientCache, ProviderReply, api_key, elapsed_ms, sdk_error

if TYPE_CHECKING:
    import anthropic

    from judges.models import JudgeConfig
    from judges.prompts import RenderedPrompt

_clients = ClientCache()


def complete(config: JudgeConfig, prompt: RenderedPrompt) -> ProviderReply:
    import anthropic  # on first use: the SDK takes seconds to import and most processes never call it

    secret = api_key(config)
    client = _clients.get(config, secret, lambda: _build_client(config, secret))
    started = time.monotonic()
    try:
        message = client.messages.create(
            model=config.model,
            max_tokens=config.max_tokens,
            system=prompt.system,
            messages=[{"role": "user", "content": prompt.user}],
        )
    except anthropic.APIError as exc:
        raise sdk_error(exc, anthropic, config, secret) from None
    usage = message.usage
    input_tokens = usage.input_tokens + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
    return ProviderReply(
        text="".join(block.text for block in message.content if block.type == "text"),
        input_tokens=input_tokens,
        output_tokens=usage.output_tokens,
        latency_ms=elapsed_ms(started),
        truncated=message.stop_reason == "max_tokens",
    )


def _build_client(config: JudgeConfig, secret: str) -> anthropic.Anthropic:
    import anthropic

    # max_retries=0: the gateway retries, with backoff shared across rate limits and parse failures.
    return anthropic.Anthropic(
        api_key=secret, base_url=config.base_url or None, timeout=config.timeout_seconds, max_retries=0
    )
