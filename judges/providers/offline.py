"""The offline judge: deterministic heuristics (`judges.heuristics`), no network, no key, no cost."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from judges.providers.base import ProviderReply, elapsed_ms, estimate_tokens

if TYPE_CHECKING:
    from judges.models import JudgeConfig
    from judges.prompts import RenderedPrompt


def complete(config: JudgeConfig, prompt: RenderedPrompt) -> ProviderReply:
    from judges import heuristics

    started = time.monotonic()
    text = heuristics.reply(prompt.name, prompt.fields)
    return ProviderReply(
        text=text,
        input_tokens=estimate_tokens(prompt.system + prompt.user),
        output_tokens=estimate_tokens(text),
        latency_ms=elapsed_ms(started),
    )
