"""The demo RAG server (python -m evalsite.demo_rag) as the tests' live target, and targets pointing at it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from targets.models import Target
from targets.services import DEMO_MAPPING, DEMO_TEMPLATE, target_create

# The engine and worker fixtures (datasets, judges, fake LLM, Celery workers) of the run-engine tests.
from tests.evaluations.conftest import (  # noqa: F401
    PYTHON,
    celery_worker,
    fake_llm,
    make_dataset,
    make_fake_judge,
    offline_judge,
    start_server_process,
)


@dataclass
class DemoRAG:
    url: str
    process: subprocess.Popen

    def stats(self) -> dict[str, Any]:
        return httpx.get(self.url.removesuffix("/query") + "/stats", timeout=5).json()


@pytest.fixture
def demo_rag() -> Iterator[Callable[..., DemoRAG]]:
    started: list[subprocess.Popen] = []

    def start(*options: str, env: dict[str, str] | None = None) -> DemoRAG:
        command = [PYTHON, "-m", "evalsite.demo_rag", "--port", "0", *options]
        process, url = start_server_process(command, started, env)
        return DemoRAG(url=url, process=process)

    yield start
    for process in started:
        process.kill()
        process.wait()


@pytest.fixture
def make_target(db) -> Callable[..., Target]:
    counter = iter(range(1, 10_000))

    def make(url: str, **fields: Any) -> Target:
        fields = {
            "name": f"rag-{next(counter)}",
            "request_template": DEMO_TEMPLATE,
            "response_mapping": DEMO_MAPPING,
            "timeout_seconds": 5.0,
            "max_concurrency": 4,
        } | fields
        return target_create(url=url, **fields)

    return make
