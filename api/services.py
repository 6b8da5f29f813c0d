"""Writes of the API's own tables: tokens, idempotent run creation, run callbacks (and their delivery)."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.utils import timezone

from api.models import ApiToken, CallbackStatus, IdempotencyKey, RunCallback
from evaluations.models import Run

logger = logging.getLogger(__name__)

TOKEN_PREFIX = "es_"
IDEMPOTENCY_WINDOW = timedelta(hours=24)
# last_used_at is written at most this often per token: one UPDATE a minute, not one a request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


# --- Tokens ----------------------------------------------------------------------------------


def token_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class CreatedToken:
    token: ApiToken
    key: str  # the token itself: shown once, never stored


def token_create(*, user: Any, name: str = "") -> CreatedToken:
    """A new token for `user`; only its hash is stored, so `key` is the one chance to read it."""
    key = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name.strip()[:100], key_hash=token_hash(key), prefix=key[:10])
    return CreatedToken(token=token, key=key)


def token_revoke(*, user: Any, token_id: int) -> bool:
    """Revoke one of the user's own tokens; False when it is not theirs or already revoked."""
    return bool(
        ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
    )


def token_authenticate(key: str) -> ApiToken | None:
    """The active token with this key, with its user (one query; an UPDATE of last_used_at a minute at most)."""
    token = ApiToken.objects.select_related("user").filter(key_hash=token_hash(key), revoked_at__isnull=True).first()
    if token is not None:
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
    return token


# --- Idempotent run creation -----------------------------------------------------------------


class IdempotencyConflict(Exception):
    """The key was used (within the window) with a different request body."""


def request_fingerprint(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


@transaction.atomic
def run_create_idempotent(*, user: Any, key: str, body: Any, create: Callable[[], Run]) -> tuple[Run, bool]:
    """(run, created): the run this user's `key` made within 24 h, or a new one from `create()`.

    The key row and the run are written in one transaction, and (user, key) is unique: a second
    request with the same key waits on the first one's INSERT, then finds its run. If `create`
    raises, nothing is kept (the key can be used again with a corrected body).
    Raises IdempotencyConflict when the key came with a different body.
    """
    fingerprint = request_fingerprint(body)
    IdempotencyKey.objects.filter(user=user, key=key, created_at__lt=timezone.now() - IDEMPOTENCY_WINDOW).delete()
    try:
        with transaction.atomic():
            record = IdempotencyKey.objects.create(user=user, key=key, request_hash=fingerprint)
    except IntegrityError:
        record = IdempotencyKey.objects.select_related("run").get(user=user, key=key)
        if record.request_hash != fingerprint:
            raise IdempotencyConflict from None
        assert record.run is not None  # written in the same transaction as the key
        return record.run, False
    run = create()
    IdempotencyKey.objects.filter(pk=record.pk).update(run=run)
    return run, True


# --- Callbacks -------------------------------------------------------------------------------


class CallbackUrlError(ValueError):
    pass


def callback_url_check(url: str) -> None:
    """CallbackUrlError unless `url` is http(s) to a public address (any address with API_CALLBACK_ALLOW_PRIVATE)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CallbackUrlError("must be an http:// or https:// URL with a host")
    if settings.API_CALLBACK_ALLOW_PRIVATE:
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        addresses = {info[4][0] for info in socket.getaddrinfo(parts.hostname, port, proto=socket.IPPROTO_TCP)}
    except (OSError, ValueError, UnicodeError):
        raise CallbackUrlError(f"cannot resolve the host {parts.hostname!r}") from None
    for address in addresses:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if not ip.is_global or ip.is_multicast:
            raise CallbackUrlError(
                f"{parts.hostname} resolves to {address}, a private or loopback address: refused "
                "(set API_CALLBACK_ALLOW_PRIVATE=1 to allow it)"
            )


def run_callback_create(*, run: Run, url: str, base_url: str) -> RunCallback:
    callback_url_check(url)
    return RunCallback.objects.create(run=run, url=url, base_url=base_url.rstrip("/"))


def callback_due(run_id: int) -> bool:
    """Mark the run's callback as being delivered; True if there is one to deliver (only once per callback)."""
    return bool(
        RunCallback.objects.filter(run_id=run_id, status=CallbackStatus.PENDING).update(
            status=CallbackStatus.DELIVERING
        )
    )


@dataclass(frozen=True)
class Attempt:
    delivered: bool
    retry_in: float | None  # seconds before the next attempt; None: no more attempts


def callback_attempt(*, run_id: int, payload_for: Callable[[Run, str], dict[str, Any]]) -> Attempt:
    """One POST of the run's summary to its callback URL; records the outcome and says whether to retry."""
    callback = RunCallback.objects.select_related("run").filter(run_id=run_id).first()
    if callback is None or callback.status != CallbackStatus.DELIVERING:
        return Attempt(delivered=callback is not None and callback.status == CallbackStatus.DELIVERED, retry_in=None)
    attempt = callback.attempts + 1
    status_code, error = None, ""
    try:
        callback_url_check(callback.url)  # again: the name may resolve elsewhere now
        payload = json.dumps(payload_for(callback.run, callback.base_url), cls=DjangoJSONEncoder)
        response = httpx.post(
            callback.url,
            content=payload.encode(),
            headers={
                "Content-Type": "application/json",
                "User-Agent": "evalsite-callback/1",
                "X-Evalsite-Event": "run.finished",
            },
            timeout=settings.API_CALLBACK_TIMEOUT_SECONDS,
            follow_redirects=False,
        )
        status_code = response.status_code
        if not 200 <= status_code < 300:
            error = f"HTTP {status_code}: {response.text[:200]}"
    except (CallbackUrlError, httpx.HTTPError) as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
    except Exception as exc:  # recorded and retried like a refused delivery: a callback never stays stuck
        logger.exception("run %s callback: building or sending the summary failed", run_id)
        error = f"{type(exc).__name__}: {exc}"[:500]
    now = timezone.now()
    delivered = not error
    final = delivered or attempt >= settings.API_CALLBACK_MAX_ATTEMPTS
    state = CallbackStatus.DELIVERED if delivered else CallbackStatus.FAILED if final else CallbackStatus.DELIVERING
    RunCallback.objects.filter(pk=callback.pk).update(
        attempts=attempt,
        status=state,
        last_status_code=status_code,
        last_error=error,
        last_attempt_at=now,
        delivered_at=now if delivered else None,
    )
    if not delivered:
        logger.warning("run %s callback attempt %s to %s failed: %s", run_id, attempt, callback.url, error)
    retry_in = None if final else settings.API_CALLBACK_BACKOFF_SECONDS * 2 ** (attempt - 1)
    return Attempt(delivered=delivered, retry_in=retry_in)
