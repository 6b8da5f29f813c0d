"""What every provider returns and raises, and the helpers the SDK-backed providers share."""

from __future__ import annotations

import email.utils
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from judges.types import JudgeError

if TYPE_CHECKING:
    from judges.models import JudgeConfig
    from judges.prompts import RenderedPrompt

# Servers such as vLLM or Ollama accept any key; the SDKs still want a non-empty one.
PLACEHOLDER_API_KEY = "not-needed"


@dataclass(frozen=True)
class ProviderReply:
    text: str
    input_tokens: int
    output_tokens: int
    latency_ms: int = 0  # of the API call alone (not the SDK's import or client set-up on first use)
    truncated: bool = False  # the model stopped at max_tokens


class Provider(Protocol):
    def __call__(self, config: JudgeConfig, prompt: RenderedPrompt) -> ProviderReply: ...


class ProviderError(JudgeError):
    """One failed API call. `retryable` tells the gateway whether another attempt may succeed."""

    def __init__(
        self, message: str, *, retryable: bool, retry_after: float | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


def elapsed_ms(started: float) -> int:
    """Milliseconds since `started` (a time.monotonic() reading)."""
    return round((time.monotonic() - started) * 1000)


def estimate_tokens(text: str) -> int:
    """~4 characters a token for English text: close enough for budgets and the offline judge."""
    return max(1, len(text) // 4)


def api_key(config: JudgeConfig, *, required: bool = True) -> str:
    """The key from `os.environ[config.api_key_env]`. Errors name the variable, never a value."""
    if not config.api_key_env:
        if required:
            raise ProviderError(
                f"judge {config.name!r} has no API key variable: set api_key_env to the name of the "
                f"environment variable holding its {config.provider} API key",
                retryable=False,
            )
        return PLACEHOLDER_API_KEY
    key = os.environ.get(config.api_key_env, "")
    if not key:
        raise ProviderError(
            f"environment variable {config.api_key_env} is not set: it must hold the API key of judge {config.name!r}",
            retryable=False,
        )
    return key


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms` or `Retry-After` (seconds or an HTTP date); None when absent or unreadable."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _api_message(body: object) -> str:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(body or "")[:500]


def _redact(text: str, secret: str) -> str:
    return text.replace(secret, "[redacted]") if secret and secret != PLACEHOLDER_API_KEY else text


def sdk_error(exc: Exception, sdk: Any, config: JudgeConfig, secret: str) -> ProviderError:
    """Translate an `openai` / `anthropic` SDK exception (both share the same classes) into a ProviderError.

    Messages carry the status and the API's own explanation, with the key scrubbed out; for 401/403
    the body is left out entirely (OpenAI echoes part of the key back).
    """
    where = f"{config.provider} ({config.model})"
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError(f"{where}: no reply within {config.timeout_seconds:g}s", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f"{type(cause).__name__}: {cause}" if cause else exc.message
        return ProviderError(f"{where}: connection failed ({_redact(detail, secret)})", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        if status in (401, 403):
            variable = config.api_key_env or "(no api_key_env)"
            verb = "rejected" if status == 401 else "not allowed to use this model"
            return ProviderError(
                f"{where}: HTTP {status}, the API key in {variable} was {verb}", retryable=False, status=status
            )
        message = _redact(_api_message(exc.body), secret)
        return ProviderError(
            f"{where}: HTTP {status}: {message}",
            retryable=status in (408, 429) or status >= 500,
            retry_after=retry_after_seconds(exc.response.headers),
            status=status,
        )
    return ProviderError(f"{where}: {type(exc).__name__}: {_redact(str(exc), secret)}", retryable=False)


ClientT = TypeVar("ClientT")


class ClientCache:
    """One SDK client per judge config per process (the SDK clients are thread-safe and pool connections).

    A client is rebuilt when what it was built from changes (base URL, timeout, key) or after a fork.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: dict[object, tuple[tuple, Any]] = {}

    def get(self, config: JudgeConfig, secret: str, build: Callable[[], ClientT]) -> ClientT:
        signature = (os.getpid(), config.base_url, config.timeout_seconds, secret)
        slot = (config.provider, config.pk)
        with self._lock:
            cached = self._clients.get(slot)
            if cached is not None and cached[0] == signature:
                return cached[1]
            client = build()
            self._clients[slot] = (signature, client)
            return client

    def clear(self) -> None:
        with self._lock:
            self._clients.clear()
