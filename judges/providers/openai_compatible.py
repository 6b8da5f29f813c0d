"""OpenAI-compatible servers (vLLM, Ollama, LM Studio...) through the `openai` SDK and `base_url`.

The key is optional (a placeholder is sent when `api_key_env` is empty); JSON mode is asked for and
dropped for the config if the server rejects it; `max_tokens` rather than OpenAI's newer
`max_completion_tokens`, which not every server knows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judges.providers.base import ProviderReply, api_key
from judges.providers.openai import chat_completion

if TYPE_CHECKING:
    from judges.models import JudgeConfig
    from judges.prompts import RenderedPrompt


def complete(config: JudgeConfig, prompt: RenderedPrompt) -> ProviderReply:
    secret = api_key(config, required=False)
    return chat_completion(config, prompt, secret=secret, token_limit_param="max_tokens")
