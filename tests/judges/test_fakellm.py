"""The fake LLM server: wire formats the SDKs accept, default replies, script, faults, stats, concurrency."""

from __future__ import annotations

import functools
import http.client
import json
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import anthropic
import httpx
import openai
import pytest

from fakellm import GENERIC_REPLY, PROSE_REPLY, serve
from judges import heuristics, prompts
from judges.types import Context

RELEVANCY_FIELDS = {
    "query": "When was the vote?",
    "response": "The vote was held in 2023.",
    "contexts": [Context(id="c1", text="The assembly held the vote in 2023.")],
}


def openai_client(url: str) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=f"{url}/v1", max_retries=0)


@functools.cache
def _openai_client(url: str) -> openai.OpenAI:
    return openai_client(url)


def anthropic_client(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-test", base_url=url, max_retries=0)


def ask_openai(url: str, system: str, user: str, **params) -> openai.types.chat.ChatCompletion:
    return _openai_client(url).chat.completions.create(
        model="gpt-test", messages=[{"role": "system", "content": system}, {"role": "user", "content": user}], **params
    )


def test_serves_both_apis_with_usage_and_counts_them(fake_llm):
    prompt = prompts.render("relevancy", RELEVANCY_FIELDS)
    expected = heuristics.reply("relevancy", RELEVANCY_FIELDS)
    # when
    completion = ask_openai(fake_llm.url, prompt.system, prompt.user)
    message = anthropic_client(fake_llm.url).messages.create(
        model="claude-test", max_tokens=500, system=prompt.system, messages=[{"role": "user", "content": prompt.user}]
    )
    # then: the offline judge's answer, in each API's format
    assert completion.choices[0].message.content == expected
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.prompt_tokens == len(f"{prompt.system}\n{prompt.user}") // 4
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    assert message.content[0].text == expected
    assert message.stop_reason == "end_turn"
    assert message.usage.output_tokens == len(expected) // 4
    stats = fake_llm.stats()
    assert stats["requests"] == 2
    assert stats["by_endpoint"] == {"/v1/chat/completions": 1, "/v1/messages": 1}
    assert stats["tokens_in"] == 2 * completion.usage.prompt_tokens
    assert stats["errors"] == {}
    assert stats["max_in_flight"] == 1
    assert len(stats["request_times"]) == 2
    # and /reset zeroes it all
    fake_llm.reset()
    assert fake_llm.stats()["requests"] == 0


def test_foreign_prompt_gets_a_generic_reply(fake_llm):
    assert ask_openai(fake_llm.url, "You are a pirate.", "Hello").choices[0].message.content == GENERIC_REPLY
    as_json = ask_openai(fake_llm.url, "You are a pirate.", "Hello", response_format={"type": "json_object"})
    assert json.loads(as_json.choices[0].message.content) == {"reply": GENERIC_REPLY}


def test_reply_is_cut_at_max_tokens(fake_llm):
    fake_llm.script({"match": "", "reply": "x" * 100})
    completion = ask_openai(fake_llm.url, "s", "u", max_completion_tokens=5)
    assert completion.choices[0].message.content == "x" * 20
    assert completion.choices[0].finish_reason == "length"


def test_script_rows_first_match_wins_and_times_runs_out(fake_llm):
    fake_llm.script(
        {"match": "apple", "reply": "first", "times": 1},
        {"match": "app", "reply": "second"},
        {"match": "pear", "status": 503, "retry_after": 2},
    )
    replies = [ask_openai(fake_llm.url, "s", "an apple").choices[0].message.content for _ in range(2)]
    assert replies == ["first", "second"]
    with pytest.raises(openai.InternalServerError) as caught:
        ask_openai(fake_llm.url, "s", "a pear")
    assert caught.value.status_code == 503
    assert caught.value.response.headers["retry-after"] == "2"
    assert fake_llm.stats()["errors"] == {"scripted_503": 1}


def test_script_file_and_command_line(start_fake_llm, tmp_path):
    script = tmp_path / "script.jsonl"
    script.write_text(
        json.dumps({"match": "limit", "status": 429, "retry_after": 1})
        + "\n"
        + json.dumps({"match": "", "reply": '{"claims": []}'})
        + "\n"
    )
    server = start_fake_llm("--latency-ms", "0", "--script", str(script))
    with pytest.raises(anthropic.RateLimitError) as caught:
        anthropic_client(server.url).messages.create(
            model="c", max_tokens=10, messages=[{"role": "user", "content": "over the limit"}]
        )
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.body["error"]["type"] == "rate_limit_error"
    assert ask_openai(server.url, "s", "anything").choices[0].message.content == '{"claims": []}'


def test_rpm_answers_429_with_retry_after(start_fake_llm):
    server = start_fake_llm("--latency-ms", "0", "--rpm", "2")
    for _ in range(2):
        ask_openai(server.url, "s", "u")
    with pytest.raises(openai.RateLimitError) as caught:
        ask_openai(server.url, "s", "u")
    assert 55 <= float(caught.value.response.headers["retry-after"]) <= 60
    assert server.stats()["errors"] == {"rate_limited": 1}


def test_error_rate_injects_server_errors_and_malformed_replies(start_fake_llm):
    server = start_fake_llm("--latency-ms", "0", "--error-rate", "1", "--seed", "7")
    prompt = prompts.render("claim_extraction", {"query": "q?", "response": "Paris is the capital of France."})
    outcomes = []
    for _ in range(30):
        try:
            outcomes.append(ask_openai(server.url, prompt.system, prompt.user).choices[0].message.content)
        except openai.InternalServerError:
            outcomes.append(500)
    errors = server.stats()["errors"]
    assert errors["server_error"] == outcomes.count(500) > 0
    replies = [o for o in outcomes if o != 500]
    assert errors["malformed"] == len(replies) > 0
    assert PROSE_REPLY in replies  # prose
    assert any(r.startswith("{") and r != PROSE_REPLY for r in replies)  # truncated JSON
    for reply in replies:
        with pytest.raises(ValueError):
            json.loads(reply)


def test_api_key_is_checked_when_given(start_fake_llm):
    server = start_fake_llm("--latency-ms", "0", "--api-key", "right-key")
    with pytest.raises(openai.AuthenticationError):
        ask_openai(server.url, "s", "u")
    good = openai.OpenAI(api_key="right-key", base_url=f"{server.url}/v1", max_retries=0)
    assert good.chat.completions.create(model="m", messages=[{"role": "user", "content": "u"}]).choices


def test_sixty_four_slow_requests_run_at_once():
    # given: 200 ms a reply
    server = serve(latency_ms=200, jitter_ms=0)
    host, port = urlsplit(server.url).hostname, urlsplit(server.url).port
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})

    def request(_: int) -> int:
        connection = http.client.HTTPConnection(host, port, timeout=10)
        try:
            for _ in range(2):  # two requests on one kept-alive connection
                connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
                assert response.status == 200
            return response.status
        finally:
            connection.close()

    try:
        # when
        started = time.monotonic()
        with ThreadPoolExecutor(64) as pool:
            assert set(pool.map(request, range(64))) == {200}
        elapsed = time.monotonic() - started
        # then: about two latencies, not 128
        assert elapsed < 1.5
        assert server.fake.stats()["max_in_flight"] >= 60
    finally:
        server.close()


def test_control_endpoints(fake_llm):
    http = httpx.Client(base_url=fake_llm.url)
    assert http.post("/script", json=[{"reply": "no match key"}]).status_code == 400
    assert http.post("/script", json=[{"match": "("}]).status_code == 400
    assert http.get("/nope").status_code == 404
    assert http.post("/v1/chat/completions", content=b"not json").status_code == 400
