"""Providers against the fake LLM server, through the real `openai` and `anthropic` SDKs."""

from __future__ import annotations

import email.utils
import socket
import time

import pytest

from fakellm import serve
from judges import heuristics, prompts
from judges.providers import PROVIDERS, ProviderError, get_provider
from judges.providers.base import retry_after_seconds
from judges.types import Context, JudgeError

pytestmark = pytest.mark.django_db

SECRET = "sk-test-secret-0123456789"


def relevancy_prompt(query: str = "What is the capital of France?") -> prompts.RenderedPrompt:
    return prompts.render(
        "relevancy",
        {"query": query, "response": "Paris.", "contexts": [Context(id="c1", text="Paris is the capital of France.")]},
    )


def claims_prompt() -> prompts.RenderedPrompt:
    return prompts.render("claim_extraction", {"query": "Capital?", "response": "Paris is the capital of France."})


def test_registry_names_the_four_providers():
    assert set(PROVIDERS) == {"openai", "anthropic", "openai_compatible", "offline"}
    with pytest.raises(JudgeError, match="unknown judge provider 'cohere'"):
        get_provider("cohere")


def test_openai_returns_text_and_usage_and_asks_for_json(make_judge, fake_llm):
    # given
    config = make_judge("openai", max_tokens=300, temperature=0.2)
    fake_llm.script({"match": "Capital\\?", "reply": '{"claims": ["Paris is the capital of France."]}'})
    prompt = claims_prompt()
    # when
    reply = PROVIDERS["openai"](config, prompt)
    # then
    assert reply.text == '{"claims": ["Paris is the capital of France."]}'
    assert reply.input_tokens == len(f"{prompt.system}\n{prompt.user}") // 4  # the fake server's count
    assert reply.output_tokens == len(reply.text) // 4
    assert not reply.truncated
    body = fake_llm.stats()["recent_bodies"][-1]
    assert body["response_format"] == {"type": "json_object"}
    assert body["max_completion_tokens"] == 300
    assert body["temperature"] == 0.2
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_openai_does_not_ask_for_json_when_the_prompt_expects_text(make_judge, fake_llm):
    config = make_judge("openai")
    fake_llm.script({"match": "", "reply": "YES\nIt answers."})
    assert PROVIDERS["openai"](config, relevancy_prompt()).text == "YES\nIt answers."
    assert "response_format" not in fake_llm.stats()["recent_bodies"][-1]


def test_anthropic_returns_text_and_usage_without_sampling_parameters(make_judge, fake_llm):
    config = make_judge("anthropic", max_tokens=200)
    fake_llm.script({"match": "", "reply": "NO\nThe contexts do not say."})
    prompt = relevancy_prompt()
    reply = PROVIDERS["anthropic"](config, prompt)
    assert reply.text == "NO\nThe contexts do not say."
    assert reply.input_tokens == len(f"{prompt.system}\n{prompt.user}") // 4
    assert reply.output_tokens == len(reply.text) // 4
    body = fake_llm.stats()["recent_bodies"][-1]
    assert body["system"] == prompt.system
    assert body["messages"] == [{"role": "user", "content": prompt.user}]
    assert body["max_tokens"] == 200
    assert "temperature" not in body


def test_reply_cut_at_max_tokens_is_flagged(make_judge, fake_llm):
    config = make_judge("anthropic", max_tokens=3)
    fake_llm.script({"match": "", "reply": "YES\n" + "long feedback " * 20})
    reply = PROVIDERS["anthropic"](config, relevancy_prompt())
    assert reply.truncated
    assert len(reply.text) == 12


def test_openai_compatible_needs_no_key_and_sends_max_tokens(make_judge, fake_llm):
    config = make_judge("openai_compatible", max_tokens=100)
    fake_llm.script({"match": "", "reply": "YES\nFine."})
    assert PROVIDERS["openai_compatible"](config, relevancy_prompt()).text == "YES\nFine."
    body = fake_llm.stats()["recent_bodies"][-1]
    assert body["max_tokens"] == 100
    assert "max_completion_tokens" not in body


def test_openai_compatible_drops_json_mode_once_the_server_rejects_it(make_judge):
    server = serve(latency_ms=0, jitter_ms=0, reject_json_mode=True)
    try:
        config = make_judge("openai_compatible", base_url=f"{server.url}/v1")
        with pytest.raises(ProviderError, match="rejected JSON mode") as caught:
            PROVIDERS["openai_compatible"](config, claims_prompt())
        assert caught.value.retryable
        reply = PROVIDERS["openai_compatible"](config, claims_prompt())  # the next attempt, without JSON mode
        assert "response_format" not in server.fake.stats()["recent_bodies"][-1]
        assert reply.text
    finally:
        server.close()


def test_missing_key_variable_is_named(make_judge, monkeypatch):
    config = make_judge("openai", api_key_env="EVALSITE_TEST_MISSING_KEY")
    monkeypatch.delenv("EVALSITE_TEST_MISSING_KEY", raising=False)
    with pytest.raises(ProviderError, match="environment variable EVALSITE_TEST_MISSING_KEY is not set") as caught:
        PROVIDERS["openai"](config, relevancy_prompt())
    assert not caught.value.retryable


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_rejected_key_is_not_retryable_and_never_echoed(provider, make_judge, start_fake_llm):
    server = start_fake_llm("--latency-ms", "0", "--api-key", "the-right-key")
    base_url = server.url if provider == "anthropic" else f"{server.url}/v1"
    config = make_judge(provider, base_url=base_url)
    with pytest.raises(ProviderError) as caught:
        PROVIDERS[provider](config, relevancy_prompt())
    error = caught.value
    assert error.status == 401 and not error.retryable
    assert "FAKE_LLM_KEY" in str(error)
    assert SECRET[:6] not in str(error) and SECRET[-4:] not in str(error)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_server_errors_and_rate_limits_are_retryable(provider, make_judge, fake_llm):
    config = make_judge(provider)
    fake_llm.script(
        {"match": "", "status": 429, "retry_after": 2, "times": 1},
        {"match": "", "status": 503, "times": 1},
        {"match": "", "status": 400, "times": 1},
    )
    with pytest.raises(ProviderError) as rate_limited:
        PROVIDERS[provider](config, relevancy_prompt())
    assert (rate_limited.value.status, rate_limited.value.retryable, rate_limited.value.retry_after) == (429, True, 2.0)
    with pytest.raises(ProviderError, match="HTTP 503") as unavailable:
        PROVIDERS[provider](config, relevancy_prompt())
    assert unavailable.value.retryable
    with pytest.raises(ProviderError, match="HTTP 400: Scripted error") as bad_request:
        PROVIDERS[provider](config, relevancy_prompt())
    assert not bad_request.value.retryable


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_timeouts_are_retryable(provider, make_judge, fake_llm):
    config = make_judge(provider, timeout_seconds=0.2)
    fake_llm.script({"match": "", "delay_ms": 1000, "times": 1})
    started = time.monotonic()
    with pytest.raises(ProviderError, match="no reply within 0.2s") as caught:
        PROVIDERS[provider](config, relevancy_prompt())
    assert caught.value.retryable
    assert time.monotonic() - started < 0.9


def test_connection_errors_are_retryable(make_judge):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = make_judge("openai", base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ProviderError, match="connection failed") as caught:
        PROVIDERS["openai"](config, relevancy_prompt())
    assert caught.value.retryable


def test_sdk_client_is_reused_until_its_settings_change(make_judge, fake_llm, monkeypatch):
    from judges.providers import openai as openai_provider

    config = make_judge("openai")
    built = []
    original = openai_provider._build_client
    monkeypatch.setattr(openai_provider, "_build_client", lambda *a: built.append(1) or original(*a))
    for _ in range(3):
        PROVIDERS["openai"](config, relevancy_prompt())
    assert len(built) == 1
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-rotated-key-000")
    PROVIDERS["openai"](config, relevancy_prompt())
    assert len(built) == 2


def test_heuristic_provider_answers_without_network(make_judge):
    config = make_judge("offline")
    prompt = relevancy_prompt()
    reply = PROVIDERS["offline"](config, prompt)
    assert reply.text == heuristics.reply(prompt.name, prompt.fields)
    assert reply.input_tokens == (len(prompt.system) + len(prompt.user)) // 4
    assert reply.output_tokens == max(1, len(reply.text) // 4)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_header(headers, expected):
    assert retry_after_seconds(headers) == expected


def test_retry_after_http_date():
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= retry_after_seconds({"retry-after": when}) <= 30
