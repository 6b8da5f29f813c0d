"""Fixtures of the judge tests: the fake LLM server (a subprocess) and judge configs pointing at it."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from judges import ratelimit, services
from judges.models import JudgeConfig

REPO = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 20


class FakeLLMProcess:
    """A running `python -m fakellm`: its URL and its control endpoints."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fakellm", "--port", "0", *args],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        ready, _, _ = select.select([self.process.stdout], [], [], STARTUP_SECONDS)
        line = self.process.stdout.readline() if ready else ""
        if not line.startswith("fakellm listening on "):
            self.stop()
            raise RuntimeError(f"fake LLM server did not start (exit code {self.process.poll()}, said {line!r})")
        self.url = line.split()[-1]
        self.http = httpx.Client(base_url=self.url, timeout=10)

    def script(self, *rows: dict[str, Any]) -> None:
        """Replace the server's script (an empty call clears it)."""
        self.http.post("/script", json=list(rows)).raise_for_status()

    def stats(self) -> dict[str, Any]:
        return self.http.get("/stats").raise_for_status().json()

    def reset(self) -> None:
        self.http.post("/reset").raise_for_status()

    def stop(self) -> None:
        if getattr(self, "http", None) is not None:
            self.http.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="session")
def fake_llm_server() -> Iterator[FakeLLMProcess]:
    """One fake LLM server for the session: 5 ms latency, no random faults."""
    server = FakeLLMProcess("--latency-ms", "5", "--jitter-ms", "0", "--seed", "1")
    yield server
    server.stop()


@pytest.fixture
def fake_llm(fake_llm_server: FakeLLMProcess) -> Iterator[FakeLLMProcess]:
    """The session's fake LLM server with zeroed stats and no script."""
    fake_llm_server.script()
    fake_llm_server.reset()
    yield fake_llm_server
    fake_llm_server.script()


@pytest.fixture
def start_fake_llm() -> Iterator[Callable[..., FakeLLMProcess]]:
    """Start extra fake LLM servers with their own options; all are stopped after the test."""
    started: list[FakeLLMProcess] = []

    def start(*args: str) -> FakeLLMProcess:
        server = FakeLLMProcess(*args)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def fast_retries(settings: Any) -> Any:
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.01
    settings.JUDGE_MAX_ATTEMPTS = 3
    return settings


@pytest.fixture
def make_judge(fake_llm: FakeLLMProcess, monkeypatch: pytest.MonkeyPatch) -> Callable[..., JudgeConfig]:
    """Create a judge config pointing at the fake server, with a test key in FAKE_LLM_KEY (and clean rate limits)."""
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test-secret-0123456789")
    counter = iter(range(1, 1000))

    def make(provider: str = "openai", **overrides: Any) -> JudgeConfig:
        base_url = fake_llm.url if provider == "anthropic" else f"{fake_llm.url}/v1"
        fields: dict[str, Any] = {
            "name": f"{provider}-judge-{next(counter)}",
            "provider": provider,
            "model": {"anthropic": "claude-test", "offline": "heuristic-v1"}.get(provider, "gpt-test"),
            "base_url": "" if provider == "offline" else base_url,
            "api_key_env": "" if provider in ("offline", "openai_compatible") else "FAKE_LLM_KEY",
            "timeout_seconds": 5.0,
            "max_concurrency": 8,
        }
        config = services.judge_config_create(**(fields | overrides))
        ratelimit.reset(config)
        return config

    return make


def redis_url() -> str:
    return os.environ.get("REDIS_URL", "")
