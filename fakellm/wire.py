"""The fake server's wire formats: reading requests, reply texts, and the OpenAI and Anthropic response and error bodies."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

GENERIC_REPLY = "This is a generic reply from the fake LLM server: it could not read the prompt."
PROSE_REPLY = "I'm sorry, I can't help with that request."  # no digits, no yes/no: unreadable for every contract


def text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [] if isinstance(block, dict))


def messages(api: str, body: dict[str, Any]) -> tuple[str, str]:
    """(system, user) text of a chat request of either API."""
    messages = body["messages"]
    system = [text(body.get("system"))] if api == "anthropic" else []
    system += [text(m["content"]) for m in messages if m["role"] in ("system", "developer")]
    user = [text(m["content"]) for m in messages if m["role"] not in ("system", "developer")]
    return "\n".join(s for s in system if s), "\n".join(user)


def wants_json(body: dict[str, Any]) -> bool:
    return (body.get("response_format") or {}).get("type") in ("json_object", "json_schema")


def presented_key(headers: Any) -> str:
    authorization = headers.get("Authorization") or ""
    if authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return headers.get("x-api-key") or ""


def unauthorized_message(api: str, key: str) -> str:
    if api == "anthropic":
        return "invalid x-api-key"
    masked = f"{key[:3]}***{key[-4:]}" if len(key) > 8 else "***"
    return f"Incorrect API key provided: {masked}. You can find your API key at https://platform.openai.com/account/api-keys."


def default_reply(system: str, user: str, *, wants_json: bool) -> str:
    try:
        from judges import heuristics, prompts

        name, fields = prompts.read_fields(system, user)
        return heuristics.reply(name, fields)
    except Exception:  # a foreign prompt (ValueError) or the prompt modules unavailable: a generic answer
        return json.dumps({"reply": GENERIC_REPLY}) if wants_json else GENERIC_REPLY


def malformed(text: str, roll: float) -> str:
    if text.lstrip().startswith(("{", "[")) and roll < 0.5:
        return text[: max(1, len(text) // 2)]  # cut mid-JSON, as a reply stopped by a dropped connection
    return PROSE_REPLY


def count_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def openai_completion(model: str, text: str, tokens_in: int, tokens_out: int, truncated: bool) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None, "annotations": []},
                "logprobs": None,
                "finish_reason": "length" if truncated else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": "fp_fakellm",
    }


def anthropic_message(model: str, text: str, tokens_in: int, tokens_out: int, truncated: bool) -> dict[str, Any]:
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "max_tokens" if truncated else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "service_tier": "standard",
        },
    }


OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 429: "requests"}
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(api: str, status: int, message: str) -> dict[str, Any]:
    if api == "openai":
        error_type = OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
        code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)
        return {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    error_type = ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": f"req_{uuid.uuid4().hex[:24]}",
    }
