"""The one way to ask a judge: cache -> rate limiter -> provider SDK -> parser -> JudgeCall row.

`judge(config, prompt_name, fields, sample=..., run_id=..., run_item_id=..., should_stop=...)` renders the prompt,
returns the parsed value of an earlier successful identical call if there is one (cached=True, no
new spend), else calls the provider, retrying 429/5xx/timeouts/connection errors and unreadable
replies with exponential backoff and jitter (honouring Retry-After) up to
settings.JUDGE_MAX_ATTEMPTS attempts, and logs one JudgeCall either way. Final failures raise
JudgeError (JudgeResponseError when the reply could not be read) with the JudgeCall's id in
`call_id`. Thread-safe; per call: one cache SELECT, one INSERT, and two Redis round trips when the
config has limits.

The JudgeCall row names the run and run item whose evaluation made the call (`run_item_id`). A cache
hit writes no row (it would add an INSERT to every hit): its result's `call_id` is the reused row.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings

from judges import prompts, ratelimit, reply_parsing, selectors, services
from judges.models import JudgeCall, JudgeConfig
from judges.prompts import RenderedPrompt
from judges.providers import Provider, ProviderReply, estimate_tokens, get_provider
from judges.types import Context, JudgeCancelled, JudgeError, JudgeResponseError, JudgeResult

logger = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 30.0
MAX_RETRY_AFTER_SECONDS = 120.0  # a longer Retry-After (a daily quota) is not worth holding a worker thread for
STOP_CHECK_SECONDS = 1.0  # while sleeping between attempts, ask should_stop() this often

_cache_counts = {"hits": 0, "misses": 0}
_cache_counts_lock = threading.Lock()
# This thread's prefetched prompts (`cache_prefetched`), each with its cache answer (None: a known miss).
_prefetched = threading.local()


@dataclass(frozen=True)
class _Prefetched:
    config: JudgeConfig
    name: str
    fields: dict
    sample: int
    prompt: RenderedPrompt
    request: dict
    key: str
    call: JudgeCall | None


def judge(
    config: JudgeConfig,
    prompt_name: str,
    fields: dict,
    *,
    sample: int = 0,
    run_id: int | None = None,
    run_item_id: int | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> JudgeResult:
    """Ask `config`'s judge `prompt_name` about `fields`; `sample` > 0 asks again instead of reusing answer 0."""
    prefetched = _prefetched_entry(config, prompt_name, fields, sample)
    if prefetched is not None:  # rendered, keyed and looked up already
        prompt, request, key = prefetched.prompt, prefetched.request, prefetched.key
        cached = _result_from_cache(prefetched.call, prompt)
    else:
        prompt = prompts.render(prompt_name, fields)
        request = request_record(config, prompt, sample=sample)
        key = cache_key(request)
        cached = _result_from_cache(selectors.judge_call_cached(cache_key=key), prompt)
    _count("hits" if cached else "misses")
    if cached is not None:
        return cached

    outcome = _Outcome()
    try:
        _attempt(config, prompt, outcome, should_stop)
    except JudgeCancelled as exc:
        if outcome.sent:  # what was sent is still logged (and paid for)
            outcome.error = exc
            _record(config, prompt, request, key, (run_id, run_item_id), outcome)
        raise
    call = _record(config, prompt, request, key, (run_id, run_item_id), outcome)
    if outcome.error is not None:
        error_class = JudgeResponseError if isinstance(outcome.error, JudgeResponseError) else JudgeError
        error = error_class(_error_text(config, prompt, outcome))
        error.call_id = call.pk  # type: ignore[attr-defined]
        raise error
    return JudgeResult(
        value=outcome.value,
        prompt_name=prompt.name,
        prompt_version=prompt.version,
        call_id=call.pk,
        cached=False,
        input_tokens=call.input_tokens,
        output_tokens=call.output_tokens,
        cost=float(call.cost),
        latency_ms=call.latency_ms,
    )


def request_record(config: JudgeConfig, prompt: RenderedPrompt, *, sample: int) -> dict:
    """What is sent, as stored in JudgeCall.request and hashed into the cache key. Never holds the key."""
    return {
        "provider": config.provider,
        "model": config.model,
        "base_url": config.base_url,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "sample": sample,
        "messages": [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}],
    }


def cache_key(request: dict) -> str:
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def cache_stats() -> dict[str, int]:
    """Cache hits and misses of this process since it started."""
    with _cache_counts_lock:
        return dict(_cache_counts)


def backoff_seconds(attempt: int, retry_after: float | None = None) -> float:
    """Exponential backoff with jitter after the `attempt`-th failure, at least the server's Retry-After."""
    ceiling = min(settings.JUDGE_BACKOFF_BASE_SECONDS * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS)
    delay = random.uniform(ceiling / 2, ceiling)
    if retry_after is not None:
        delay = max(delay, min(retry_after, MAX_RETRY_AFTER_SECONDS))
    return delay


@dataclass(frozen=True)
class CheckResult:
    latency_ms: int
    input_tokens: int
    output_tokens: int
    reply: str
    value: object


CHECK_PROMPT = "relevancy"
CHECK_FIELDS = {
    "query": "What is the capital of France?",
    "response": "Paris is the capital of France.",
    "contexts": (Context(id="1", text="Paris is the capital and largest city of France."),),
}


def check(config: JudgeConfig) -> CheckResult:
    """Send one tiny prompt straight to the provider (no cache, retries or log) and read the reply.

    Raises JudgeError with the provider's exact error, or JudgeResponseError if the reply breaks the contract.
    """
    prompt = prompts.render(CHECK_PROMPT, CHECK_FIELDS)
    reply = get_provider(config.provider)(config, prompt)
    value = reply_parsing.parse_reply(prompt.name, reply.text, prompt.fields)
    return CheckResult(reply.latency_ms, reply.input_tokens, reply.output_tokens, reply.text, value)


@dataclass
class _Outcome:
    attempts: int = 0  # begun
    sent: int = 0  # reached the provider
    raw_reply: str = ""
    input_tokens: int = 0  # summed over attempts: failed parses cost tokens too
    output_tokens: int = 0
    latency_ms: int = 0  # of the last API call that answered
    truncated: bool = False
    value: object = None
    error: JudgeError | None = None


def _attempt(
    config: JudgeConfig, prompt: RenderedPrompt, outcome: _Outcome, should_stop: Callable[[], bool] | None
) -> None:
    provider = get_provider(config.provider)
    # Tokens reserved against tokens_per_minute: the prompt's estimate plus the whole reply budget.
    budget = estimate_tokens(prompt.system) + estimate_tokens(prompt.user) + config.max_tokens
    while True:
        if should_stop is not None and should_stop():
            raise JudgeCancelled(f"judge {config.name!r}: stopped before attempt {outcome.attempts + 1}")
        outcome.attempts += 1
        outcome.error, retry_after = None, None
        try:
            reply = _send(config, prompt, provider, budget, should_stop, outcome)
            outcome.value = reply_parsing.parse_reply(prompt.name, reply.text, prompt.fields)
            return
        except JudgeCancelled:
            raise
        except JudgeResponseError as exc:
            outcome.error = exc
        except JudgeError as exc:
            outcome.error = exc
            if not getattr(exc, "retryable", False):
                return
            retry_after = getattr(exc, "retry_after", None)
        except Exception as exc:  # a bug in a provider or parser: log it, record it, do not retry
            logger.exception("judge %s: unexpected error in %s", config.name, prompt.name)
            outcome.error = JudgeError(f"unexpected {type(exc).__name__}: {exc}")
            return
        if outcome.attempts >= settings.JUDGE_MAX_ATTEMPTS:
            return
        delay = backoff_seconds(outcome.attempts, retry_after)
        logger.info(
            "judge %s: %s attempt %d failed (%s); retrying in %.2fs",
            config.name,
            prompt.name,
            outcome.attempts,
            outcome.error,
            delay,
        )
        _sleep(delay, config, should_stop)


def _send(
    config: JudgeConfig,
    prompt: RenderedPrompt,
    provider: Provider,
    budget: int,
    should_stop: Callable[[], bool] | None,
    outcome: _Outcome,
) -> ProviderReply:
    if config.is_heuristic:  # local CPU work: nothing to rate-limit
        return _call(config, prompt, provider, outcome)
    with ratelimit.acquire(config, tokens=budget, should_stop=should_stop) as lease:
        reply = _call(config, prompt, provider, outcome)
        lease.actual_tokens = reply.input_tokens + reply.output_tokens
    return reply


def _call(config: JudgeConfig, prompt: RenderedPrompt, provider: Provider, outcome: _Outcome) -> ProviderReply:
    outcome.sent += 1
    reply = provider(config, prompt)
    outcome.latency_ms = reply.latency_ms
    outcome.raw_reply = reply.text
    outcome.input_tokens += reply.input_tokens
    outcome.output_tokens += reply.output_tokens
    outcome.truncated = reply.truncated
    return reply


def _sleep(seconds: float, config: JudgeConfig, should_stop: Callable[[], bool] | None) -> None:
    """Back off for `seconds`, asking should_stop() every STOP_CHECK_SECONDS (the next attempt asks it anyway)."""
    deadline = time.monotonic() + seconds
    while (remaining := deadline - time.monotonic()) > STOP_CHECK_SECONDS:
        time.sleep(STOP_CHECK_SECONDS)
        if should_stop is not None and should_stop():
            raise JudgeCancelled(f"judge {config.name!r}: stopped while backing off")
    time.sleep(max(0.0, remaining))


@contextmanager
def cache_prefetched(config: JudgeConfig, requests: Iterable[tuple[str, dict]], *, sample: int = 0) -> Iterator[None]:
    """Render these prompts and look the cache up for all of them in one query; a `judge` call of
    this thread inside the block that asks one of them reuses the rendering and the answer (a
    prefetched miss asks the judge without querying the cache again).

    An item's first prompts depend only on the item: one query instead of one per call.
    """
    prepared = []
    for name, fields in requests:
        prompt = prompts.render(name, fields)
        request = request_record(config, prompt, sample=sample)
        prepared.append((name, fields, prompt, request, cache_key(request)))
    found = selectors.judge_calls_cached(cache_keys=[key for *_, key in prepared])
    previous = getattr(_prefetched, "entries", None)
    _prefetched.entries = [
        _Prefetched(config, name, fields, sample, prompt, request, key, found.get(key))
        for name, fields, prompt, request, key in prepared
    ]
    try:
        yield
    finally:
        _prefetched.entries = previous


def _prefetched_entry(config: JudgeConfig, prompt_name: str, fields: dict, sample: int) -> _Prefetched | None:
    for entry in getattr(_prefetched, "entries", None) or ():
        same_config = entry.config is config or entry.config.pk == config.pk
        if same_config and entry.name == prompt_name and entry.sample == sample and entry.fields == fields:
            return entry
    return None


def _result_from_cache(call: JudgeCall | None, prompt: RenderedPrompt) -> JudgeResult | None:
    if call is None:
        return None
    try:
        value = reply_parsing.parse_reply(prompt.name, call.raw_reply, prompt.fields)
    except JudgeResponseError:
        return None  # the parser has changed since: ask again
    return JudgeResult(
        value=value, prompt_name=prompt.name, prompt_version=call.prompt_version, call_id=call.pk, cached=True
    )


def _record(
    config: JudgeConfig,
    prompt: RenderedPrompt,
    request: dict,
    key: str,
    made_for: tuple[int | None, int | None],  # (run id, run item id)
    outcome: _Outcome,
) -> JudgeCall:
    return services.judge_call_record(
        config=config,
        run_id=made_for[0],
        run_item_id=made_for[1],
        cache_key=key,
        prompt_name=prompt.name,
        prompt_version=prompt.version,
        request=request,
        raw_reply=outcome.raw_reply,
        input_tokens=outcome.input_tokens,
        output_tokens=outcome.output_tokens,
        latency_ms=outcome.latency_ms,
        attempts=outcome.attempts,
        error=_error_text(config, prompt, outcome) if outcome.error is not None else "",
    )


def _error_text(config: JudgeConfig, prompt: RenderedPrompt, outcome: _Outcome) -> str:
    text = str(outcome.error)
    if isinstance(outcome.error, JudgeResponseError):
        text = f"unreadable {prompt.name} reply: {text}"
        if outcome.truncated:
            text += f" (the reply stopped at max_tokens={config.max_tokens})"
    attempts = "1 attempt" if outcome.attempts == 1 else f"{outcome.attempts} attempts"
    return f"judge {config.name!r}: {text} [{attempts}]"


def _count(name: str) -> None:
    with _cache_counts_lock:
        _cache_counts[name] += 1
