"""Per-judge-config rate limits: concurrent calls, requests per minute and tokens per minute.

`acquire(config)` is the judges' door; `acquire_slot(scope, limits)` is the primitive under it, which
live targets (targets/client.py) use with a scope of their own ("target:<id>"), so a target's
limits are kept apart from every judge's by the same machinery.

Two backends behind one `acquire()`:

- Redis (`settings.REDIS_URL` set): one Lua script checks and records all three limits atomically,
  so every worker process on every machine shares them; the clock is Redis's own (`TIME`).
- In-process (`REDIS_URL` empty, the embedded mode): the same bookkeeping under a `threading.Condition`.

Each admitted call holds a lease until it ends; then it is logged as done at its end time. A call
counts against requests and tokens per minute from its admission until 60 s after it *ended*
(a sliding-window log, not a token bucket, which lets up to twice the limit through around a
refill). Counting from the end rather than the start is what makes the limit hold where the
provider counts, on arrival: a request can reach the server well after it was admitted (first use
of an SDK client, a slow connect, a busy GIL), and it has always arrived by the time it ends. The
price is a window stretched by one call's latency.

Leases expire (2 x timeout + 10 s after they were taken): a process that dies mid-call frees its
concurrency slot when its lease runs out instead of leaking it; the expired call is then logged as
done at that moment.

Tokens: a call reserves `estimate_tokens(prompt) + max_tokens` before it starts (its worst case, so
the limit holds even if the reply runs to `max_tokens`); when it ends the reservation is replaced by
the usage the API reported. A reservation larger than the whole `tokens_per_minute` is clamped to
it (the call then has the minute to itself) rather than waiting forever.

Longer than ~350 lines on purpose: the Redis Lua script and its in-process twin keep the same
bookkeeping and must change together; one module keeps them side by side.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import redis
from django.conf import settings

from judges.types import JudgeCancelled, JudgeError

if TYPE_CHECKING:
    from judges.models import JudgeConfig

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60.0  # settings.JUDGE_RATE_WINDOW_SECONDS overrides it (tests shrink the minute)
DEFAULT_WAIT_SECONDS = 600.0  # settings.JUDGE_RATE_LIMIT_WAIT_SECONDS: longest wait for a slot
STOP_CHECK_SECONDS = 1.0  # should_stop() may query the database: ask it at most once a second while waiting
POLL_MIN_SECONDS = 0.01  # the in-process backend's first wait, backing off to
POLL_MAX_SECONDS = 0.1  # at most this between checks
# Redis: every release pushes a wake-up token onto the config's list (capped at its max concurrency); a
# thread waiting for a concurrency slot BLPOPs it, so a freed slot is retried at once instead of after a
# sleep. The timeout is only the safety net for a slot freed without a release (an expired lease).
WAKE_WAIT_SECONDS = 0.5


class LimiterUnavailable(JudgeError):
    """The shared limiter (Redis) could not be reached; the gateway retries."""

    retryable = True


@dataclass(frozen=True)
class Limits:
    max_concurrency: int = 0  # 0: no limit
    requests_per_minute: int = 0
    tokens_per_minute: int = 0

    @classmethod
    def of(cls, config: JudgeConfig) -> Limits:
        return cls(config.max_concurrency or 0, config.requests_per_minute or 0, config.tokens_per_minute or 0)

    @property
    def unlimited(self) -> bool:
        return not (self.max_concurrency or self.requests_per_minute or self.tokens_per_minute)

    def __str__(self) -> str:
        return (
            f"max_concurrency={self.max_concurrency or '-'}, requests_per_minute={self.requests_per_minute or '-'}, "
            f"tokens_per_minute={self.tokens_per_minute or '-'}"
        )


@dataclass
class Lease:
    """A granted slot. Release it when the call is over, with the tokens the API reported (or use `with`)."""

    backend: Backend | None
    scope: str
    id: str
    limits: Limits
    tokens: int  # reserved
    window: float
    seconds: float  # lease lifetime
    actual_tokens: int | None = None  # set before leaving `with` to correct the reservation
    released: bool = False

    def release(self, actual_tokens: int | None = None) -> None:
        if self.released:
            return
        self.released = True
        if self.backend is not None:
            self.backend.release(self, actual_tokens)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release(self.actual_tokens)


class Backend(Protocol):
    def acquire_or_pause(self, lease: Lease, *, max_pause: float, poll: float) -> bool:
        """Take the lease's slot and return True, or wait a while (at most `max_pause`) and return False."""

    def release(self, lease: Lease, actual_tokens: int | None) -> None: ...

    def reset(self, scope: str) -> None: ...


class SlotWaitTimeout(JudgeError):
    """No slot within the wait allowed (`acquire_slot`'s timeout)."""


class SlotWaitCancelled(JudgeCancelled):
    """`should_stop()` turned true while waiting for a slot."""


def acquire(
    config: JudgeConfig,
    *,
    tokens: int,
    should_stop: Callable[[], bool] | None = None,
    timeout: float | None = None,
    lease_seconds: float | None = None,
) -> Lease:
    """Block until `config`'s limits admit one more call reserving `tokens`; return its lease.

    Raises JudgeCancelled when `should_stop()` turns true while waiting, JudgeError after `timeout`.
    """
    return acquire_slot(
        str(config.pk),
        Limits.of(config),
        label=f"judge {config.name!r}",
        tokens=tokens,
        should_stop=should_stop,
        timeout=timeout,
        lease_seconds=lease_seconds if lease_seconds is not None else 2 * config.timeout_seconds + 10,
    )


def acquire_slot(
    scope: str,
    limits: Limits,
    *,
    label: str,
    lease_seconds: float,
    tokens: int = 0,
    should_stop: Callable[[], bool] | None = None,
    timeout: float | None = None,
) -> Lease:
    """The shared primitive: block until `limits` admit one more call in `scope`; return its lease.

    `scope` names whose limits these are: a judge config's id (`acquire`), or "target:<id>" for a
    live target (targets/client.py), so each keeps its own bookkeeping. `label` names it in errors.
    Raises SlotWaitCancelled when `should_stop()` turns true while waiting, SlotWaitTimeout after `timeout`.
    """
    if limits.tokens_per_minute:
        tokens = min(tokens, limits.tokens_per_minute)
    backend = None if limits.unlimited else get_backend()
    lease = Lease(
        backend=backend,
        scope=scope,
        id=uuid.uuid4().hex,
        limits=limits,
        tokens=tokens,
        window=float(getattr(settings, "JUDGE_RATE_WINDOW_SECONDS", WINDOW_SECONDS)),
        seconds=lease_seconds,
    )
    if backend is None:
        return lease
    if timeout is None:
        timeout = float(getattr(settings, "JUDGE_RATE_LIMIT_WAIT_SECONDS", DEFAULT_WAIT_SECONDS))
    start = time.monotonic()
    deadline = start + timeout
    next_stop_check = start + STOP_CHECK_SECONDS
    poll = POLL_MIN_SECONDS
    while not backend.acquire_or_pause(
        lease, max_pause=max(0.0, min(deadline, next_stop_check) - time.monotonic()), poll=poll
    ):
        poll = min(poll * 1.5, POLL_MAX_SECONDS)
        now = time.monotonic()
        if should_stop is not None and now >= next_stop_check:
            if should_stop():
                raise SlotWaitCancelled(f"{label}: stopped while waiting for a rate-limit slot")
            next_stop_check = now + STOP_CHECK_SECONDS
        if now >= deadline:
            raise SlotWaitTimeout(f"{label}: no rate-limit slot within {timeout:g}s ({limits})")
    return lease


def reset(config: JudgeConfig) -> None:
    """Forget the config's recorded calls and leases (after changing its limits, or between tests)."""
    reset_scope(str(config.pk))


def reset_scope(scope: str) -> None:
    """Forget one scope's recorded calls and leases (`acquire_slot`'s scope)."""
    get_backend().reset(scope)


_backends: dict[str, Backend] = {}
_backends_lock = threading.Lock()


def get_backend() -> Backend:
    url = settings.REDIS_URL
    with _backends_lock:
        backend = _backends.get(url)
        if backend is None:
            backend = RedisBackend(url) if url else LocalBackend()
            _backends[url] = backend
        return backend


# --- Redis ---------------------------------------------------------------------------------------

_ACQUIRE_LUA = """
-- KEYS: 1 leases (zset "lease id:tokens" -> expiry ms), 2 done (zset "lease id:tokens" -> end ms),
--       3 tokens held by leases (string), 4 tokens of done calls in the window (string)
-- ARGV: 1 lease id, 2 max concurrency, 3 rpm, 4 tpm, 5 tokens, 6 window ms, 7 lease ms (limits: 0 = none)
-- Returns -1 when admitted, else the ms to wait (0: unknown, wait for a call to end).
local max_concurrency, rpm, tpm = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local tokens, window, lease_ms = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local track = rpm > 0 or tpm > 0
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function tokens_of(member) return tonumber(string.match(member, ':(%d+)$')) end
local held = tonumber(redis.call('GET', KEYS[3]) or '0')
local done_tokens = tonumber(redis.call('GET', KEYS[4]) or '0')

-- Leases of dead processes: free their slots, log them as done now.
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for _, member in ipairs(expired) do
  held = held - tokens_of(member)
  if track then
    redis.call('ZADD', KEYS[2], now, member)
    done_tokens = done_tokens + tokens_of(member)
  end
end
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) end
-- Done calls that left the window.
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - window)
for _, member in ipairs(old) do done_tokens = done_tokens - tokens_of(member) end
if #old > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window) end

local in_flight, done = redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2])
if in_flight == 0 or held < 0 then held = 0 end
if done == 0 or done_tokens < 0 then done_tokens = 0 end
local wait = -1
if max_concurrency > 0 and in_flight >= max_concurrency then wait = 0 end
if rpm > 0 and in_flight + done >= rpm then
  local leaving = in_flight + done - rpm + 1  -- done calls that must leave the window first
  if leaving <= done then
    local nth = redis.call('ZRANGE', KEYS[2], leaving - 1, leaving - 1, 'WITHSCORES')
    wait = math.max(wait, tonumber(nth[2]) + window - now)
  else
    wait = math.max(wait, 0)
  end
end
if tpm > 0 and held + done_tokens + tokens > tpm then
  if done > 0 then
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    wait = math.max(wait, tonumber(oldest[2]) + window - now)
  else
    wait = math.max(wait, 0)
  end
end
if wait < 0 then
  redis.call('ZADD', KEYS[1], now + lease_ms, ARGV[1] .. ':' .. tokens)
  held = held + tokens
end
local keep = window + lease_ms
redis.call('SET', KEYS[3], held, 'PX', keep)
redis.call('SET', KEYS[4], done_tokens, 'PX', keep)
redis.call('PEXPIRE', KEYS[1], keep)
if done > 0 or #expired > 0 then redis.call('PEXPIRE', KEYS[2], keep) end
return wait
"""

_RELEASE_LUA = """
-- KEYS: as for acquire, plus 5 wake-up list; ARGV: 1 lease id, 2 reserved tokens, 3 actual tokens (-1: unknown),
-- 4 track (1/0), 5 keep ms, 6 wake-up list length cap
local member = ARGV[1] .. ':' .. ARGV[2]
if redis.call('ZREM', KEYS[1], member) == 0 then return 0 end  -- expired meanwhile: already logged as done
redis.call('RPUSH', KEYS[5], 1)
redis.call('LTRIM', KEYS[5], -tonumber(ARGV[6]), -1)
redis.call('PEXPIRE', KEYS[5], ARGV[5])
local reserved, actual = tonumber(ARGV[2]), tonumber(ARGV[3])
if actual < 0 then actual = reserved end
redis.call('DECRBY', KEYS[3], reserved)
if ARGV[4] == '1' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZADD', KEYS[2], now, ARGV[1] .. ':' .. actual)
  redis.call('INCRBY', KEYS[4], actual)
  for key = 2, 4 do redis.call('PEXPIRE', KEYS[key], ARGV[5]) end
end
return 1
"""


def _keys(scope: str) -> list[str]:
    # The {scope} hash tag keeps one config's keys in one slot on Redis Cluster.
    names = ("leases", "done", "held_tokens", "done_tokens", "wake")
    return [f"evalsite:judge:{{{scope}}}:{name}" for name in names]


class RedisBackend:
    def __init__(self, url: str) -> None:
        self.url = url
        self.client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5, health_check_interval=30)
        self._acquire = self.client.register_script(_ACQUIRE_LUA)
        self._release = self.client.register_script(_RELEASE_LUA)

    def acquire_or_pause(self, lease: Lease, *, max_pause: float, poll: float) -> bool:
        limits = lease.limits
        args = [
            lease.id,
            limits.max_concurrency,
            limits.requests_per_minute,
            limits.tokens_per_minute,
            lease.tokens,
            int(lease.window * 1000),
            int(lease.seconds * 1000),
        ]
        try:
            wait_ms = int(self._acquire(keys=_keys(lease.scope), args=args))
        except redis.RedisError as exc:
            raise LimiterUnavailable(f"rate limiter: Redis unreachable ({type(exc).__name__}: {exc})") from None
        if wait_ms < 0:
            return True
        if wait_ms > 0:  # requests/tokens per minute: the time is known
            time.sleep(min(wait_ms / 1000 + random.uniform(0, 0.01), max_pause))
            return False
        # All concurrency slots taken: wait for a release's wake-up token.
        timeout = min(WAKE_WAIT_SECONDS, max_pause)
        if timeout >= 0.001:  # BLPOP's 0 would mean forever
            try:
                self.client.blpop([_keys(lease.scope)[4]], timeout=timeout)
            except redis.RedisError as exc:
                raise LimiterUnavailable(f"rate limiter: Redis unreachable ({type(exc).__name__}: {exc})") from None
        return False

    def release(self, lease: Lease, actual_tokens: int | None) -> None:
        track = lease.limits.requests_per_minute > 0 or lease.limits.tokens_per_minute > 0
        args = [
            lease.id,
            lease.tokens,
            -1 if actual_tokens is None else actual_tokens,
            1 if track else 0,
            int((lease.window + lease.seconds) * 1000),
            max(lease.limits.max_concurrency, 1),
        ]
        try:
            self._release(keys=_keys(lease.scope), args=args)
        except redis.RedisError as exc:
            # Not worth failing a finished call for: the lease expires by itself.
            logger.warning("rate limiter: could not release lease %s: %s", lease.id, exc)

    def reset(self, scope: str) -> None:
        self.client.delete(*_keys(scope))


# --- In-process ------------------------------------------------------------------------------------


@dataclass
class _Scope:
    leases: dict[str, tuple[float, int]] = field(default_factory=dict)  # lease id -> (expiry, tokens)
    held_tokens: int = 0
    done: deque[tuple[float, int]] = field(default_factory=deque)  # (end time, tokens), oldest first
    done_tokens: int = 0


class LocalBackend:
    """The embedded mode's limiter: one process, so a Condition replaces Redis and releases wake waiters."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._scopes: dict[str, _Scope] = {}

    def acquire_or_pause(self, lease: Lease, *, max_pause: float, poll: float) -> bool:
        with self._cond:
            scope = self._scopes.setdefault(lease.scope, _Scope())
            wait = self._wait_for(scope, lease, time.monotonic())
            if wait is None:
                return True
            self._cond.wait(min(wait, max_pause) if wait > 0 else max_pause)
            return False

    def _wait_for(self, scope: _Scope, lease: Lease, now: float) -> float | None:
        """Same rules as the Lua script: None when admitted (and recorded), else seconds to wait (0: unknown)."""
        limits = lease.limits
        for lease_id in [lease_id for lease_id, (expiry, _) in scope.leases.items() if expiry <= now]:
            self._end(scope, lease, lease_id, None, now)
        while scope.done and scope.done[0][0] <= now - lease.window:
            scope.done_tokens -= scope.done.popleft()[1]
        in_flight, done = len(scope.leases), len(scope.done)
        wait = -1.0
        if limits.max_concurrency and in_flight >= limits.max_concurrency:
            wait = 0.0
        if limits.requests_per_minute and in_flight + done >= limits.requests_per_minute:
            leaving = in_flight + done - limits.requests_per_minute + 1
            wait = max(wait, scope.done[leaving - 1][0] + lease.window - now if leaving <= done else 0.0)
        if limits.tokens_per_minute and scope.held_tokens + scope.done_tokens + lease.tokens > limits.tokens_per_minute:
            wait = max(wait, scope.done[0][0] + lease.window - now if done else 0.0)
        if wait >= 0:
            return wait
        scope.leases[lease.id] = (now + lease.seconds, lease.tokens)
        scope.held_tokens += lease.tokens
        return None

    def release(self, lease: Lease, actual_tokens: int | None) -> None:
        with self._cond:
            scope = self._scopes.get(lease.scope)
            if scope is not None and lease.id in scope.leases:
                self._end(scope, lease, lease.id, actual_tokens, time.monotonic())
            self._cond.notify_all()

    @staticmethod
    def _end(scope: _Scope, lease: Lease, lease_id: str, actual_tokens: int | None, now: float) -> None:
        _, reserved = scope.leases.pop(lease_id)
        scope.held_tokens -= reserved
        if lease.limits.requests_per_minute or lease.limits.tokens_per_minute:
            tokens = reserved if actual_tokens is None else actual_tokens
            scope.done.append((now, tokens))
            scope.done_tokens += tokens

    def reset(self, scope: str) -> None:
        with self._cond:
            self._scopes.pop(scope, None)
            self._cond.notify_all()
