"""The judge gateway end to end: real SDKs over HTTP against the fake LLM server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from django.db import connection

from fakellm import serve
from judges import gateway, heuristics
from judges.models import JudgeCall
from judges.reply_parsing import parse_reply
from judges.types import Context, JudgeCancelled, JudgeError, JudgeResponseError, Relevancy

from .conftest import REPO, redis_url

SECRET = "sk-test-secret-0123456789"
PROSE = "I'm sorry, I can't help with that request."


def relevancy_fields(query: str = "What is the capital of France?") -> dict:
    return {
        "query": query,
        "response": "Paris.",
        "contexts": [Context(id="c1", text="Paris is the capital of France.")],
    }


@pytest.mark.django_db
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_success_returns_parsed_value_and_logs_the_call(provider, make_judge, fake_llm):
    # given
    config = make_judge(provider, input_price_per_million="2.5", output_price_per_million="10")
    fake_llm.script({"match": "capital", "reply": "YES\nThe contexts say Paris is the capital.", "delay_ms": 30})
    # when
    result = gateway.judge(config, "relevancy", relevancy_fields(), run_id=42)
    # then
    assert result.value == Relevancy(passing=True, feedback="The contexts say Paris is the capital.")
    assert not result.cached
    assert result.prompt_name == "relevancy" and result.prompt_version == "1"
    stats = fake_llm.stats()
    assert stats["requests"] == 1
    assert (result.input_tokens, result.output_tokens) == (stats["tokens_in"], stats["tokens_out"])
    expected_cost = (Decimal(result.input_tokens) * Decimal("2.5") + Decimal(result.output_tokens) * 10) / 1_000_000
    assert result.cost == pytest.approx(float(expected_cost))
    call = JudgeCall.objects.get(pk=result.call_id)
    assert (call.config, call.run_id, call.prompt_name, call.prompt_version) == (config, 42, "relevancy", "1")
    assert call.raw_reply == "YES\nThe contexts say Paris is the capital."
    assert (call.input_tokens, call.output_tokens, call.attempts, call.error) == (
        result.input_tokens,
        result.output_tokens,
        1,
        "",
    )
    assert call.cost == expected_cost.quantize(Decimal("0.000001"))
    assert 30 <= call.latency_ms == result.latency_ms < 1000
    assert call.request["model"] == config.model
    assert call.request["messages"][1]["content"].startswith("<question>")
    assert len(call.cache_key) == 64


@pytest.mark.django_db
def test_default_replies_of_the_fake_server_are_the_heuristic_judges(make_judge, fake_llm):
    config = make_judge("openai")
    fields = {"query": "Capital?", "response": "Paris is the capital of France. It has 2 million people."}
    result = gateway.judge(config, "claim_extraction", fields)
    assert result.value == parse_reply("claim_extraction", heuristics.reply("claim_extraction", fields), fields)
    assert len(result.value) == 2


@pytest.mark.django_db
def test_429_with_retry_after_is_retried(make_judge, fake_llm, fast_retries):
    config = make_judge("openai")
    fake_llm.script({"match": "", "status": 429, "retry_after": 0.3, "times": 1}, {"match": "", "reply": "YES\nok"})
    started = time.monotonic()
    result = gateway.judge(config, "relevancy", relevancy_fields())
    assert time.monotonic() - started >= 0.3  # Retry-After honoured (the backoff alone is ~10 ms)
    assert result.value.passing
    assert JudgeCall.objects.get(pk=result.call_id).attempts == 2
    assert fake_llm.stats()["requests"] == 2


@pytest.mark.django_db
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_server_error_is_retried(provider, make_judge, fake_llm, fast_retries):
    config = make_judge(provider)
    fake_llm.script({"match": "", "status": 500, "times": 2}, {"match": "", "reply": "NO\nnot in the contexts"})
    result = gateway.judge(config, "relevancy", relevancy_fields())
    assert result.value == Relevancy(passing=False, feedback="not in the contexts")
    assert JudgeCall.objects.get(pk=result.call_id).attempts == 3


@pytest.mark.django_db
def test_malformed_reply_is_retried_with_a_new_sample(make_judge, fake_llm, fast_retries):
    config = make_judge("openai")
    fake_llm.script({"match": "", "reply": PROSE, "times": 1}, {"match": "", "reply": "YES\nfine"})
    result = gateway.judge(config, "relevancy", relevancy_fields())
    call = JudgeCall.objects.get(pk=result.call_id)
    assert (call.attempts, call.raw_reply, call.error) == (2, "YES\nfine", "")
    stats = fake_llm.stats()
    assert call.input_tokens == stats["tokens_in"]  # both attempts' tokens are accounted
    assert stats["requests"] == 2


@pytest.mark.django_db
def test_persistently_malformed_reply_is_recorded_as_an_error(make_judge, fake_llm, fast_retries):
    config = make_judge("anthropic")
    fake_llm.script({"match": "", "reply": PROSE})
    with pytest.raises(JudgeResponseError, match="relevancy reply must start with YES or NO") as caught:
        gateway.judge(config, "relevancy", relevancy_fields())
    call = JudgeCall.objects.get(pk=caught.value.call_id)
    assert call.attempts == 3 == fake_llm.stats()["requests"]
    assert call.raw_reply == PROSE
    assert "unreadable relevancy reply" in call.error and "[3 attempts]" in call.error
    assert str(caught.value) == call.error


@pytest.mark.django_db
def test_reply_cut_at_max_tokens_says_so(make_judge, fake_llm, fast_retries, settings):
    settings.JUDGE_MAX_ATTEMPTS = 1
    config = make_judge("openai", max_tokens=4)
    fake_llm.script({"match": "", "reply": '{"claims": ["Paris is the capital of France and its largest city."]}'})
    with pytest.raises(JudgeResponseError, match="stopped at max_tokens=4"):
        gateway.judge(config, "claim_extraction", {"query": "Capital?", "response": "Paris is the capital."})


@pytest.mark.django_db
def test_exhausted_retries_raise_and_record_the_error(make_judge, fake_llm, fast_retries):
    config = make_judge("openai")
    fake_llm.script({"match": "", "status": 503})
    with pytest.raises(JudgeError, match="HTTP 503") as caught:
        gateway.judge(config, "relevancy", relevancy_fields(), run_id=7)
    assert not isinstance(caught.value, JudgeResponseError)
    call = JudgeCall.objects.get(pk=caught.value.call_id)
    assert (call.attempts, call.run_id, call.input_tokens) == (3, 7, 0)
    assert call.error.startswith(f"judge {config.name!r}: openai (gpt-test): HTTP 503")
    assert fake_llm.stats()["requests"] == 3


@pytest.mark.django_db
def test_rejected_key_is_not_retried_and_never_stored(make_judge, start_fake_llm, fast_retries):
    server = start_fake_llm("--latency-ms", "0", "--api-key", "the-right-key")
    config = make_judge("openai", base_url=f"{server.url}/v1")
    with pytest.raises(JudgeError, match="HTTP 401, the API key in FAKE_LLM_KEY was rejected") as caught:
        gateway.judge(config, "relevancy", relevancy_fields())
    assert server.stats()["requests"] == 1
    call = JudgeCall.objects.get(pk=caught.value.call_id)
    assert call.attempts == 1
    stored = json.dumps(call.request) + call.error + call.raw_reply
    assert SECRET not in stored and SECRET[-4:] not in stored


@pytest.mark.django_db
def test_missing_key_variable_is_named_and_the_key_is_not_stored(make_judge, fake_llm, monkeypatch):
    config = make_judge("anthropic", api_key_env="EVALSITE_TEST_ANTHROPIC_KEY")
    monkeypatch.delenv("EVALSITE_TEST_ANTHROPIC_KEY", raising=False)
    with pytest.raises(JudgeError, match="environment variable EVALSITE_TEST_ANTHROPIC_KEY is not set"):
        gateway.judge(config, "relevancy", relevancy_fields())
    assert fake_llm.stats()["requests"] == 0
    # with the key set, it is used but stored nowhere
    monkeypatch.setenv("EVALSITE_TEST_ANTHROPIC_KEY", "sk-ant-very-secret-9876")
    fake_llm.script({"match": "", "reply": "YES\nok"})
    result = gateway.judge(config, "relevancy", relevancy_fields())
    call = JudgeCall.objects.get(pk=result.call_id)
    assert "very-secret" not in json.dumps(call.request) + call.error
    assert set(call.request) == {"provider", "model", "base_url", "temperature", "max_tokens", "sample", "messages"}


@pytest.mark.django_db
def test_repeat_is_answered_from_the_cache(make_judge, fake_llm, django_assert_num_queries):
    config = make_judge("openai")
    fake_llm.script({"match": "", "reply": "YES\ncached answer"})
    with django_assert_num_queries(2):  # cache lookup + insert
        first = gateway.judge(config, "relevancy", relevancy_fields())
    hits_before = gateway.cache_stats()["hits"]
    with django_assert_num_queries(1):  # cache lookup only
        again = gateway.judge(config, "relevancy", relevancy_fields(), run_id=99)
    assert again.cached and again.call_id == first.call_id
    assert again.value == first.value
    assert (again.input_tokens, again.output_tokens, again.cost) == (0, 0, 0.0)
    assert fake_llm.stats()["requests"] == 1
    assert JudgeCall.objects.count() == 1
    assert gateway.cache_stats()["hits"] == hits_before + 1


@pytest.mark.django_db
def test_prefetched_prompts_are_looked_up_in_one_query(make_judge, fake_llm, django_assert_num_queries):
    # given one of two prompts answered before
    config = make_judge("openai")
    fake_llm.script({"match": "", "reply": "YES\nok"})
    known, unknown = relevancy_fields("Known?"), relevancy_fields("Unknown?")
    first = gateway.judge(config, "relevancy", known)
    # when both are prefetched, then asked
    prefetch = gateway.cache_prefetched(config, [("relevancy", known), ("relevancy", unknown)])
    with django_assert_num_queries(2), prefetch:  # the one lookup, then the new call's insert
        hit = gateway.judge(config, "relevancy", known)
        miss = gateway.judge(config, "relevancy", unknown)
    # then the known one came from the cache, the unknown one from the judge, without a lookup each
    assert hit.cached and hit.call_id == first.call_id and hit.value == first.value
    assert not miss.cached
    assert fake_llm.stats()["requests"] == 2
    # and outside the block each call looks the cache up again
    with django_assert_num_queries(1):
        assert gateway.judge(config, "relevancy", unknown).call_id == miss.call_id


@pytest.mark.django_db
def test_sample_index_bypasses_the_cache(make_judge, fake_llm):
    config = make_judge("openai")
    fake_llm.script({"match": "", "reply": "YES\nok"})
    first = gateway.judge(config, "relevancy", relevancy_fields())
    second = gateway.judge(config, "relevancy", relevancy_fields(), sample=1)
    assert not second.cached and second.call_id != first.call_id
    assert gateway.judge(config, "relevancy", relevancy_fields(), sample=1).call_id == second.call_id
    assert fake_llm.stats()["requests"] == 2


@pytest.mark.django_db
def test_cache_key_covers_the_model_and_the_messages(make_judge, fake_llm):
    fake_llm.script({"match": "", "reply": "YES\nok"})
    config = make_judge("openai")
    other_model = make_judge("openai", model="gpt-other")
    gateway.judge(config, "relevancy", relevancy_fields())
    assert not gateway.judge(other_model, "relevancy", relevancy_fields()).cached
    assert not gateway.judge(config, "relevancy", relevancy_fields("Another question?")).cached
    assert fake_llm.stats()["requests"] == 3


@pytest.mark.django_db
def test_failures_are_not_cached(make_judge, fake_llm, fast_retries, settings):
    settings.JUDGE_MAX_ATTEMPTS = 1
    config = make_judge("openai")
    fake_llm.script({"match": "", "status": 500, "times": 1}, {"match": "", "reply": "YES\nok"})
    with pytest.raises(JudgeError):
        gateway.judge(config, "relevancy", relevancy_fields())
    assert not gateway.judge(config, "relevancy", relevancy_fields()).cached


@pytest.mark.django_db
def test_should_stop_before_the_first_attempt_sends_nothing(make_judge, fake_llm):
    config = make_judge("openai")
    with pytest.raises(JudgeCancelled):
        gateway.judge(config, "relevancy", relevancy_fields(), should_stop=lambda: True)
    assert fake_llm.stats()["requests"] == 0
    assert not JudgeCall.objects.exists()


@pytest.mark.django_db
def test_should_stop_between_attempts_cancels_and_logs_the_spend(make_judge, fake_llm, fast_retries):
    config = make_judge("openai")
    fake_llm.script({"match": "", "status": 500})
    checks = iter([False, True])
    with pytest.raises(JudgeCancelled, match="stopped"):
        gateway.judge(config, "relevancy", relevancy_fields(), should_stop=lambda: next(checks))
    assert fake_llm.stats()["requests"] == 1
    call = JudgeCall.objects.get()
    assert call.attempts == 1 and "stopped" in call.error


@pytest.mark.django_db
def test_heuristic_judge_needs_no_server(make_judge, fake_llm):
    config = make_judge("offline")
    result = gateway.judge(config, "relevancy", relevancy_fields())
    assert isinstance(result.value, Relevancy)
    assert result.cost == 0.0 and result.input_tokens > 0
    assert fake_llm.stats()["requests"] == 0


@pytest.mark.django_db
def test_openai_compatible_server_without_json_mode(make_judge, fast_retries):
    server = serve(latency_ms=0, jitter_ms=0, reject_json_mode=True)
    try:
        config = make_judge("openai_compatible", base_url=f"{server.url}/v1")
        server.fake.set_script([{"match": "", "reply": '{"claims": ["Paris is the capital."]}'}])
        result = gateway.judge(config, "claim_extraction", {"query": "Capital?", "response": "Paris is the capital."})
        assert result.value == ["Paris is the capital."]
        assert JudgeCall.objects.get(pk=result.call_id).attempts == 2
    finally:
        server.close()


def test_backoff_grows_with_jitter_and_honours_retry_after(settings):
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.5
    delays = [gateway.backoff_seconds(attempt) for attempt in (1, 2, 3) for _ in range(20)]
    assert all(0.25 <= d <= 0.5 for d in delays[:20])
    assert all(1.0 <= d <= 2.0 for d in delays[40:])
    assert len(set(delays)) > 50  # jittered
    assert gateway.backoff_seconds(1, retry_after=5) == 5
    assert gateway.backoff_seconds(1, retry_after=3600) == gateway.MAX_RETRY_AFTER_SECONDS


@pytest.mark.django_db(transaction=True)
def test_threads_share_the_concurrency_limit(make_judge, fake_llm):
    # given: 32 threads and a judge allowing 3 calls at once, each taking ~50 ms
    config = make_judge("openai", max_concurrency=3, timeout_seconds=60)
    fake_llm.script({"match": "", "delay_ms": 50, "reply": "YES\nok"})

    def ask(index: int) -> bool:
        try:
            return gateway.judge(config, "relevancy", relevancy_fields(f"Question {index}?")).value.passing
        finally:
            connection.close()

    # when
    with ThreadPoolExecutor(32) as pool:
        answers = list(pool.map(ask, range(48)))
    # then
    assert all(answers)
    stats = fake_llm.stats()
    assert list(JudgeCall.objects.filter(config=config).values_list("attempts", flat=True)) == [1] * 48
    assert stats["requests"] == 48
    assert 1 < stats["max_in_flight"] <= 3


WORKER = """
import sys, threading
import django
django.setup()
from django.conf import settings
from django.db import connection
settings.JUDGE_RATE_WINDOW_SECONDS = float(sys.argv[2])
from judges import gateway, heuristics
from judges.reply_parsing import parse_reply
from judges.models import JudgeConfig
from judges.types import Context
config = JudgeConfig.objects.get(pk=int(sys.argv[1]))
worker = sys.argv[3]

def ask(index):
    fields = {"query": f"Worker {worker} question {index}?", "response": "Paris.", "contexts": [Context("c1", "Paris.")]}
    gateway.judge(config, "relevancy", fields)
    connection.close()

threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
for thread in threads: thread.start()
for thread in threads: thread.join()
"""


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not redis_url(), reason="needs REDIS_URL: the limits are shared through Redis")
def test_two_processes_share_the_rate_limits_through_redis(make_judge, fake_llm, settings):
    # given: a 1 s "minute" (the window shrunk for the test), 4 requests a window, 2 at once
    window, rpm = 1.0, 4
    config = make_judge("openai", requests_per_minute=rpm, max_concurrency=2)
    fake_llm.script({"match": "", "delay_ms": 40, "reply": "YES\nok"})
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "evalsite.settings",
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": settings.REDIS_URL,
        "FAKE_LLM_KEY": SECRET,
    }
    # when: two worker processes, 6 threads each, ask 12 different questions
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(config.pk), str(window), name], cwd=REPO, env=env)
        for name in "ab"
    ]
    assert [worker.wait(timeout=60) for worker in workers] == [0, 0]
    # then: never more than 2 in flight, never more than 4 starts in any window
    stats = fake_llm.stats()
    assert stats["requests"] == 12
    assert stats["max_in_flight"] <= 2
    times = sorted(stats["request_times"])
    for index, start in enumerate(times):
        in_window = [t for t in times[index:] if t < start + window - 0.01]
        assert len(in_window) <= rpm, f"{len(in_window)} requests within {window}s from {start}"
    assert times[-1] - times[0] >= 2 * window  # 12 requests at 4 a window need 3 windows
    assert JudgeCall.objects.filter(config=config, error="").count() == 12
