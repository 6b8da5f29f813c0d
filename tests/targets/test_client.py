"""Calling a target: GET query strings, retries honouring Retry-After, and the target's own limits."""

from __future__ import annotations

import threading
import time

import pytest

from targets import client
from targets.check import target_check
from targets.client import TargetConfig, TargetError
from targets.mapping import Extracted

pytestmark = pytest.mark.django_db

FIELDS = {"query": "How much ARB did STIP allocate?", "id": "q-1", "metadata": {}, "tags": []}


@pytest.mark.slow
def test_a_get_target_sends_the_template_as_the_query_string(demo_rag, make_target):
    server = demo_rag()
    target = make_target(server.url, method="GET", request_template={"query": "{{query}}", "id": "{{id}}", "top_k": 2})

    report = target_check(target, query="How much ARB did STIP allocate?")

    assert report.ok, report.message
    assert len(report.extracted["contexts"]) == 2
    assert server.stats()["by_id"] == {"check": 1}


def test_a_429_is_retried_after_its_retry_after(monkeypatch, settings):
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.01
    calls: list[float] = []

    def send_once(config, fields):
        calls.append(time.monotonic())
        if len(calls) == 1:
            error = TargetError("target 'x': HTTP 429", http_status=429, retryable=True)
            error.retry_after = 0.4
            raise error
        return client.CallResult(Extracted(answer="ok"), 200, 5, 1, {}, "{}")

    monkeypatch.setattr(client, "send_once", send_once)
    config = TargetConfig(1, "x", "http://t/q", "POST", {}, {}, {"answer": "answer"}, 5.0, 0, None)

    result = client.call(config, FIELDS)

    assert result.attempts == 2
    assert calls[1] - calls[0] >= 0.4


def test_a_client_error_is_not_retried(monkeypatch):
    attempts = []

    def send_once(config, fields):
        attempts.append(1)
        raise TargetError("target 'x': HTTP 404", http_status=404)

    monkeypatch.setattr(client, "send_once", send_once)
    config = TargetConfig(2, "x", "http://t/q", "POST", {}, {}, {"answer": "answer"}, 5.0, 0, None)
    with pytest.raises(TargetError, match="HTTP 404$"):
        client.call(config, FIELDS)
    assert len(attempts) == 1


@pytest.mark.slow
def test_calls_stay_within_the_targets_own_concurrency(demo_rag, make_target):
    server = demo_rag("--latency-ms", "150")
    config = TargetConfig.of(make_target(server.url, max_concurrency=2))
    client_reset(config)

    threads = [threading.Thread(target=client.call, args=(config, FIELDS | {"id": f"q-{n}"})) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    stats = server.stats()
    assert stats["requests"] == 6 and stats["max_in_flight"] == 2


@pytest.mark.slow
def test_requests_per_minute_hold(demo_rag, make_target, settings):
    settings.JUDGE_RATE_WINDOW_SECONDS = 1.0  # the shared limiter's minute, shrunk
    config = TargetConfig.of(make_target(demo_rag().url, requests_per_minute=2, max_concurrency=0))
    client_reset(config)

    started = time.monotonic()
    for n in range(3):
        client.call(config, FIELDS | {"id": f"q-{n}"})

    assert time.monotonic() - started >= 0.9  # the third call waited for the window


def client_reset(config: TargetConfig) -> None:
    from judges import ratelimit

    ratelimit.reset_scope(f"target:{config.id}")
