"""Calling a live target: render the request, send it (httpx), read the response through the mapping.

Headers: a value is either a literal string (not secret: it is stored) or
`{"env": "RAG_TOKEN", "format": "Bearer {}"}`, read from the environment at call time. Only the
variable's name is ever stored (on the target, in a run's config snapshot, in a snapshot's
request record); the secret is also scrubbed from error messages and stored bodies.

`call` retries 429s, 5xx, timeouts and connection errors with the judges' exponential backoff
and jitter (`judges.gateway.backoff_seconds`, honouring Retry-After), inside the target's own
concurrency and requests-per-minute limits (`judges.ratelimit.acquire_slot`, scope
"target:<id>"), up to TARGET_MAX_ATTEMPTS attempts. `send_once` is one attempt and no limiter:
the check's call.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.conf import settings

from judges import ratelimit
from judges.gateway import backoff_seconds
from judges.providers.base import retry_after_seconds
from targets import mapping, templating

DEFAULT_MAX_ATTEMPTS = 4  # settings.TARGET_MAX_ATTEMPTS overrides it
MAX_BODY_CHARS = 100_000  # of a raw body kept in a snapshot
ERROR_BODY_CHARS = 500  # of a body quoted in an error message
STOP_CHECK_SECONDS = 1.0
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class TargetError(Exception):
    """A target call failed for good; the message says why (HTTP status, mapping, body)."""

    def __init__(
        self, message: str, *, http_status: int | None = None, body: str = "", mapping_key: str = "", retryable=False
    ) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.body = body
        self.mapping_key = mapping_key
        self.retryable = retryable
        self.retry_after: float | None = None
        self.attempts = 1
        self.latency_ms: int | None = None


@dataclass(frozen=True)
class TargetConfig:
    """What a call needs: a Target's fields, or the snapshot of them stored on a run (`as_dict`)."""

    id: int
    name: str
    url: str
    method: str
    headers: dict[str, Any]
    request_template: Any
    response_mapping: dict[str, str]
    timeout_seconds: float
    max_concurrency: int
    requests_per_minute: int | None

    @classmethod
    def of(cls, target: Any) -> TargetConfig:
        return cls(
            id=target.pk,
            name=target.name,
            url=target.url,
            method=target.method,
            headers=dict(target.headers or {}),
            request_template=target.request_template,
            response_mapping=dict(target.response_mapping or {}),
            timeout_seconds=float(target.timeout_seconds),
            max_concurrency=int(target.max_concurrency or 0),
            requests_per_minute=target.requests_per_minute,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TargetConfig:
        """From a run's snapshot (`as_dict`); a key it lacks takes the field's default."""
        defaults = {"method": "POST", "headers": {}, "request_template": {}, "timeout_seconds": 30.0}
        defaults |= {"max_concurrency": 0, "requests_per_minute": None}
        return cls(**{name: data.get(name, defaults.get(name)) for name in cls.__dataclass_fields__})

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass
class CallResult:
    extracted: mapping.Extracted
    http_status: int
    latency_ms: int
    attempts: int
    request: dict[str, Any]
    raw_body: str
    secrets: list[str] = field(default_factory=list, repr=False)


def header_values(headers: Mapping[str, Any], *, target_name: str) -> tuple[dict[str, str], list[str]]:
    """The headers to send and the secret values among them; TargetError names a missing variable."""
    values, secrets = {}, []
    for name, spec in headers.items():
        if isinstance(spec, dict):
            variable = spec.get("env", "")
            secret = os.environ.get(variable, "")
            if not secret:
                raise TargetError(
                    f"environment variable {variable} is not set: it must hold the {name} header of target "
                    f"{target_name!r}"
                )
            values[name] = str(spec.get("format") or "{}").replace("{}", secret)
            secrets.append(secret)
        else:
            values[name] = str(spec)
    return values, secrets


def request_record(config: TargetConfig, body: Any) -> dict[str, Any]:
    """What was sent, as stored: never a secret (env headers appear as their variable's name)."""
    headers = {
        name: f"${{{spec.get('env')}}}" if isinstance(spec, dict) else spec for name, spec in config.headers.items()
    }
    return {"method": config.method, "url": config.url, "headers": headers, "body": body}


def send_once(config: TargetConfig, fields: Mapping[str, Any]) -> CallResult:
    """One attempt, no limiter: render, send, decode, extract. TargetError says exactly what went wrong."""
    try:
        body = templating.render(config.request_template, fields)
    except templating.TemplateError as exc:
        raise TargetError(f"target {config.name!r}: request_template: {exc}") from None
    headers, secrets = header_values(config.headers, target_name=config.name)
    request = request_record(config, body)
    sending: dict[str, Any] = {"headers": headers, "timeout": config.timeout_seconds}
    if config.method == "GET":
        sending["params"] = {key: templating.as_text(value) for key, value in (body or {}).items()}
    elif body not in (None, {}, ""):
        sending["json"] = body
    started = time.monotonic()
    try:
        with httpx.Client(follow_redirects=True) as client:
            response = client.request(config.method, config.url, **sending)
    except httpx.TimeoutException:
        raise _scrubbed(
            TargetError(f"target {config.name!r}: no answer within {config.timeout_seconds:g} s", retryable=True),
            secrets,
        ) from None
    except httpx.HTTPError as exc:
        raise _scrubbed(
            TargetError(f"target {config.name!r}: {type(exc).__name__}: {exc} ({config.url})", retryable=True), secrets
        ) from None
    latency_ms = round((time.monotonic() - started) * 1000)
    raw = _scrub(response.text, secrets)
    if response.status_code >= 400:
        error = TargetError(
            f"target {config.name!r}: HTTP {response.status_code} from {config.url}: {_quote(raw)}",
            http_status=response.status_code,
            body=raw,
            retryable=response.status_code == 429 or response.status_code >= 500,
        )
        error.retry_after = retry_after_seconds(response.headers)
        error.latency_ms = latency_ms
        raise error
    try:
        decoded = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise TargetError(
            f"target {config.name!r}: HTTP {response.status_code}, but the body is not JSON: {_quote(raw)}",
            http_status=response.status_code,
            body=raw,
        ) from None
    try:
        extracted = mapping.extract(config.response_mapping, decoded)
    except mapping.MappingError as exc:
        error = TargetError(
            f"target {config.name!r}: HTTP {response.status_code}, mapping {exc}; the body: {_quote(raw)}",
            http_status=response.status_code,
            body=raw,
            mapping_key=exc.key,
        )
        error.latency_ms = latency_ms
        raise error from None
    return CallResult(extracted, response.status_code, latency_ms, 1, request, raw[:MAX_BODY_CHARS], secrets)


def call(
    config: TargetConfig, fields: Mapping[str, Any], *, should_stop: Callable[[], bool] | None = None
) -> CallResult:
    """`send_once` within the target's limits, retried on 429/5xx/timeouts; the last TargetError when all fail.

    A SlotWaitCancelled (a JudgeCancelled) leaves when `should_stop()` turns true while waiting.
    """
    limits = ratelimit.Limits(config.max_concurrency or 0, config.requests_per_minute or 0, 0)
    max_attempts = int(getattr(settings, "TARGET_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS))
    attempt = 0
    while True:
        attempt += 1
        try:
            with ratelimit.acquire_slot(
                f"target:{config.id}",
                limits,
                label=f"target {config.name!r}",
                lease_seconds=2 * config.timeout_seconds + 10,
                should_stop=should_stop,
            ):
                result = send_once(config, fields)
            result.attempts = attempt
            return result
        except TargetError as exc:
            exc.attempts = attempt
            if not exc.retryable or attempt >= max_attempts:
                if attempt > 1:
                    exc.args = (f"{exc.args[0]} (after {attempt} attempts)",)
                raise
            _sleep(backoff_seconds(attempt, exc.retry_after), config, should_stop)


def _sleep(seconds: float, config: TargetConfig, should_stop: Callable[[], bool] | None) -> None:
    deadline = time.monotonic() + seconds
    while (remaining := deadline - time.monotonic()) > STOP_CHECK_SECONDS:
        time.sleep(STOP_CHECK_SECONDS)
        if should_stop is not None and should_stop():
            raise ratelimit.SlotWaitCancelled(f"target {config.name!r}: stopped while backing off")
    time.sleep(max(0.0, remaining))


def _quote(body: str) -> str:
    body = " ".join(body.split())
    if not body:
        return "(empty body)"
    return body if len(body) <= ERROR_BODY_CHARS else body[: ERROR_BODY_CHARS - 1] + "…"


def _scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return text


def _scrubbed(error: TargetError, secrets: list[str]) -> TargetError:
    error.args = (_scrub(str(error), secrets),)
    return error
