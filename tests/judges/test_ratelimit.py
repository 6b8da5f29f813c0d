"""Rate limiter: both backends (in-process and Redis) keep the same rules."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time

import pytest

from judges import ratelimit
from judges.models import JudgeConfig
from judges.types import JudgeCancelled, JudgeError

from .conftest import REPO, redis_url

WINDOW = 0.5  # the "minute" of these tests
_ids = itertools.count(900_000_000 + int(time.time()) % 1_000_000 * 100)


@pytest.fixture(params=["local", "redis"])
def backend(request, settings):
    if request.param == "redis":
        if not redis_url():
            pytest.skip("needs REDIS_URL")
        settings.REDIS_URL = redis_url()
    else:
        settings.REDIS_URL = ""
    settings.JUDGE_RATE_WINDOW_SECONDS = WINDOW
    return request.param


def judge_config(**limits) -> JudgeConfig:
    """An unsaved config: the limiter needs only its id, name, timeout and limits."""
    config = JudgeConfig(pk=next(_ids), name="limited", timeout_seconds=5, **{"max_concurrency": 0, **limits})
    ratelimit.reset(config)
    return config


def test_concurrency_slots(backend):
    config = judge_config(max_concurrency=2)
    first, second = ratelimit.acquire(config, tokens=1), ratelimit.acquire(config, tokens=1)
    with pytest.raises(JudgeError, match=r"no rate-limit slot within 0.2s \(max_concurrency=2"):
        ratelimit.acquire(config, tokens=1, timeout=0.2)
    threading.Timer(0.1, first.release).start()
    started = time.monotonic()
    third = ratelimit.acquire(config, tokens=1, timeout=5)
    assert time.monotonic() - started < 0.5
    second.release()
    third.release()


def test_requests_per_window_count_from_the_end_of_each_call(backend):
    # given: 3 requests a window
    config = judge_config(requests_per_minute=3)
    started = time.monotonic()
    for _ in range(3):
        ratelimit.acquire(config, tokens=1).release()
    ended = time.monotonic()
    # when
    ratelimit.acquire(config, tokens=1).release()
    # then: the 4th waited until the 1st had ended a window ago
    assert time.monotonic() - started >= WINDOW
    assert time.monotonic() - ended < WINDOW + 0.2


def test_calls_in_flight_count_against_requests_per_window(backend):
    config = judge_config(requests_per_minute=2)
    held = [ratelimit.acquire(config, tokens=1), ratelimit.acquire(config, tokens=1)]
    time.sleep(WINDOW + 0.1)  # still in flight after a whole window: still counted
    with pytest.raises(JudgeError):
        ratelimit.acquire(config, tokens=1, timeout=0.2)
    for lease in held:
        lease.release()
    with pytest.raises(JudgeError):  # ended just now: counted for another window
        ratelimit.acquire(config, tokens=1, timeout=0.2)
    ratelimit.acquire(config, tokens=1, timeout=2).release()


def test_a_burst_never_exceeds_the_window(backend):
    # given: 16 threads, 5 requests a window, calls of 20 ms
    config = judge_config(requests_per_minute=5, max_concurrency=3)
    spans: list[tuple[float, float]] = []
    lock = threading.Lock()

    def call() -> None:
        with ratelimit.acquire(config, tokens=1, timeout=10):
            start = time.monotonic()
            time.sleep(0.02)
            end = time.monotonic()
        with lock:
            spans.append((start, end))

    # when
    threads = [threading.Thread(target=call) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # then: at most 5 calls start within any window, at most 3 at once
    starts = sorted(start for start, _ in spans)
    for index, start in enumerate(starts):
        assert len([s for s in starts[index:] if s < start + WINDOW]) <= 5
    for start, _ in spans:
        assert len([1 for s, e in spans if s <= start < e]) <= 3


def test_tokens_are_reserved_then_corrected_to_actual_usage(backend):
    config = judge_config(tokens_per_minute=1000)
    lease = ratelimit.acquire(config, tokens=800)
    with pytest.raises(JudgeError):  # 800 reserved + 300 > 1000
        ratelimit.acquire(config, tokens=300, timeout=0.1)
    lease.release(actual_tokens=200)  # the reply was short
    ratelimit.acquire(config, tokens=300, timeout=0.1).release(actual_tokens=300)
    with pytest.raises(JudgeError):  # 200 + 300 used, 600 more would be 1100
        ratelimit.acquire(config, tokens=600, timeout=0.1)


def test_a_reservation_larger_than_the_limit_gets_the_window_to_itself(backend):
    config = judge_config(tokens_per_minute=100)
    lease = ratelimit.acquire(config, tokens=5000, timeout=1)
    assert lease.tokens == 100
    lease.release()


def test_expired_lease_frees_its_slot(backend):
    config = judge_config(max_concurrency=1)
    ratelimit.acquire(config, tokens=1, lease_seconds=0.3)  # never released, as if its process died
    started = time.monotonic()
    ratelimit.acquire(config, tokens=1, timeout=3).release()
    assert 0.2 <= time.monotonic() - started < 1.5


def test_should_stop_is_honoured_while_waiting(backend, monkeypatch):
    monkeypatch.setattr(ratelimit, "STOP_CHECK_SECONDS", 0.05)
    config = judge_config(max_concurrency=1)
    held = ratelimit.acquire(config, tokens=1)
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    with pytest.raises(JudgeCancelled):
        ratelimit.acquire(config, tokens=1, should_stop=stop.is_set, timeout=10)
    assert time.monotonic() - started < 1
    held.release()


def test_unlimited_config_touches_no_backend(settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # unreachable: it must not be asked
    lease = ratelimit.acquire(JudgeConfig(pk=1, name="free", max_concurrency=0), tokens=10)
    assert lease.backend is None
    lease.release()


def test_unreachable_redis_is_a_retryable_error(settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    with pytest.raises(ratelimit.LimiterUnavailable, match="Redis unreachable") as caught:
        ratelimit.acquire(JudgeConfig(pk=2, name="limited", max_concurrency=1), tokens=1)
    assert caught.value.retryable


DYING_WORKER = """
import os, sys
import django
django.setup()
from judges import ratelimit
from judges.models import JudgeConfig
config = JudgeConfig(pk=int(sys.argv[1]), name="limited", max_concurrency=1, timeout_seconds=5)
ratelimit.acquire(config, tokens=1, lease_seconds=1.5)
os._exit(0)  # dies holding the slot
"""


@pytest.mark.slow
@pytest.mark.skipif(not redis_url(), reason="needs REDIS_URL: only Redis leases outlive a process")
def test_slot_of_a_dead_process_comes_back_after_its_lease(settings):
    settings.REDIS_URL = redis_url()
    config = judge_config(max_concurrency=1)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "evalsite.settings", "REDIS_URL": redis_url()}
    subprocess.run([sys.executable, "-c", DYING_WORKER, str(config.pk)], cwd=REPO, env=env, check=True, timeout=60)
    with pytest.raises(JudgeError):
        ratelimit.acquire(config, tokens=1, timeout=0.05)
    ratelimit.acquire(config, tokens=1, timeout=3).release()
