"""create_judge and check_judge, and the default offline judge."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from judges import services
from judges.models import JudgeConfig

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_judge_creates_then_updates():
    # when
    output = run(
        "create_judge",
        "--name", "gpt",
        "--provider", "openai",
        "--model", "gpt-4.1-mini",
        "--rpm", "500",
        "--tpm", "200000",
        "--max-concurrency", "16",
        "--input-price", "0.40",
        "--output-price", "1.60",
        "--temperature", "0",
        "--timeout", "30",
    )  # fmt: skip
    # then
    assert "created judge 'gpt': openai gpt-4.1-mini, key from $OPENAI_API_KEY" in output
    config = JudgeConfig.objects.get(name="gpt")
    assert (config.requests_per_minute, config.tokens_per_minute, config.max_concurrency) == (500, 200000, 16)
    assert (config.input_price_per_million, config.output_price_per_million) == (Decimal("0.40"), Decimal("1.60"))
    assert (config.temperature, config.timeout_seconds, config.api_key_env) == (0.0, 30.0, "OPENAI_API_KEY")
    # when: the same name again changes only what is given
    output = run("create_judge", "--name", "gpt", "--model", "gpt-4.1", "--rpm", "0")
    config.refresh_from_db()
    assert output.startswith("updated judge 'gpt': openai gpt-4.1")
    assert (config.model, config.requests_per_minute, config.tokens_per_minute) == ("gpt-4.1", None, 200000)
    assert JudgeConfig.objects.count() == 1


def test_create_judge_for_a_local_server():
    run(
        "create_judge", "--name", "vllm", "--provider", "openai_compatible",
        "--model", "qwen", "--base-url", "http://vllm:8000/v1",
    )  # fmt: skip
    config = JudgeConfig.objects.get(name="vllm")
    assert (config.base_url, config.api_key_env) == ("http://vllm:8000/v1", "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--provider", "cohere", "--model", "m"], "argument --provider: invalid choice: 'cohere'"),
        (["--model", "m"], "--provider required to create it"),
        (["--provider", "openai"], "--model required to create it"),
        (["--provider", "openai", "--model", "m", "--rpm", "many"], "argument --rpm: invalid int value: 'many'"),
        (["--provider", "openai", "--model", "m", "--max-concurrency", "-1"], "--max-concurrency: Ensure this value"),
        (["--provider", "openai", "--model", "m", "--temperature", "3"], "--temperature: must be between 0 and 2"),
        (["--provider", "openai", "--model", "m", "--input-price", "cheap"], "argument --input-price: invalid"),
        (["--provider", "openai_compatible", "--model", "m"], "--base-url: is required for openai_compatible"),
        (
            ["--provider", "openai", "--model", "m", "--base-url", "localhost:8000"],
            "--base-url: 'localhost:8000' is not",
        ),
        (
            ["--provider", "openai", "--model", "m", "--api-key-env", "sk-proj-123"],
            "--api-key-env: is not an environment",
        ),
    ],
)
def test_create_judge_errors_name_the_parameter(args, message):
    with pytest.raises(CommandError) as caught:
        call_command("create_judge", "--name", "bad", *args, stdout=StringIO(), stderr=StringIO())
    assert message in str(caught.value)
    assert "sk-proj-123" not in str(caught.value)
    assert not JudgeConfig.objects.filter(name="bad").exists()


def test_check_judge_reports_latency(make_judge, fake_llm):
    config = make_judge("anthropic")
    output = run("check_judge", config.name)
    assert output.startswith(f"ok: judge {config.name!r} (anthropic claude-test at {fake_llm.url}) answered in ")
    assert "Relevancy(passing=True" in output
    assert fake_llm.stats()["requests"] == 1


def test_check_judge_labels_the_heuristic_judge():
    config = services.judge_default_offline()
    assert "[offline heuristic, not an LLM]" in run("check_judge", config.name)


def test_check_judge_reports_the_exact_error(make_judge, fake_llm, monkeypatch):
    config = make_judge("openai", api_key_env="EVALSITE_TEST_NO_SUCH_KEY")
    monkeypatch.delenv("EVALSITE_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(CommandError, match="environment variable EVALSITE_TEST_NO_SUCH_KEY is not set"):
        run("check_judge", config.name)
    fake_llm.script({"match": "", "status": 500})
    with pytest.raises(CommandError, match="HTTP 500: Scripted error"):
        run("check_judge", make_judge("openai").name)
    assert fake_llm.stats()["requests"] == 1  # no retries


def test_check_judge_unknown_name():
    with pytest.raises(CommandError, match="no judge named 'nope'"):
        run("check_judge", "nope")


def test_default_heuristic_judge_is_created_once():
    first = services.judge_default_offline()
    assert (first.name, first.provider, first.model) == ("offline", "offline", "heuristic-v1")
    assert services.judge_default_offline() == first
    assert JudgeConfig.objects.count() == 1
