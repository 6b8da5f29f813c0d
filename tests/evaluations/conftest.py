"""Factories and processes of the run-engine tests: datasets, judges, the fake LLM server, Celery workers.

Tests that execute runs are `transaction=True` (`transactional_db`): the engine's threads and
the worker process use their own database connections and only see committed rows. The
worker subprocess connects to pytest-django's test database (`test_<name>`; on SQLite the
`test-<name>` file beside the database, see settings).
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings
from django.db import connection

from datasets.models import DatasetVersion
from datasets.services import dataset_import
from judges.models import JudgeConfig
from judges.services import judge_config_create
from tests.evaluations.helpers import StubGateway, example

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
CELERY = str(Path(sys.executable).with_name("celery"))
# Long enough that a CPU-starved 2-core CI box still renews leases in time; short enough that
# the kill -9 test waits only seconds for the takeover.
TEST_LEASE_SECONDS = 8
# The Redis database an app (the broker, the rate limits) uses unless told otherwise: never the tests'.
APP_REDIS_DB = 0


@pytest.fixture
def make_dataset(transactional_db) -> Callable[..., DatasetVersion]:
    counter = iter(range(1, 10_000))

    def make(
        items: int | list[dict[str, Any]] = 6, *, name: str | None = None, tags: Callable[[int], tuple] | None = None
    ) -> DatasetVersion:
        if isinstance(items, int):
            items = [example(n, tags=tags(n) if tags else ()) for n in range(1, items + 1)]
        content = "".join(json.dumps(item) + "\n" for item in items).encode()
        result = dataset_import(
            name=name or f"ds-{next(counter)}", file=io.BytesIO(content), filename="data.jsonl", fmt="jsonl"
        )
        return result.version

    return make


@pytest.fixture
def offline_judge(transactional_db) -> JudgeConfig:
    return judge_config_create(name="offline-test", provider="offline", model="heuristic-v1", max_concurrency=4)


# --- Fake LLM server -------------------------------------------------------------------------


@dataclass
class FakeLLM:
    url: str
    process: subprocess.Popen

    def stats(self) -> dict[str, Any]:
        import httpx

        return httpx.get(self.url.removesuffix("/v1") + "/stats", timeout=5).json()


def start_server_process(
    command: list[str], started: list[subprocess.Popen], env: dict[str, str] | None = None
) -> tuple[subprocess.Popen, str]:
    """Start a test server (fakellm, evalsite.demo_rag) that prints its URL first; the process and that URL."""
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    started.append(process)
    line = process.stdout.readline()  # type: ignore[union-attr]
    match = re.search(r"https?://\S+", line)
    if not match:
        process.kill()
        raise RuntimeError(f"{' '.join(command[1:3])} did not start: {line!r}")
    return process, match.group(0)


@pytest.fixture
def fake_llm() -> Iterator[Callable[..., FakeLLM]]:
    """Start `python -m fakellm` with the given options; returns its /v1 URL and process."""
    started: list[subprocess.Popen] = []

    def start(*options: str, latency_ms: int = 20) -> FakeLLM:
        command = [PYTHON, "-m", "fakellm", "--port", "0", "--latency-ms", str(latency_ms)]
        command += ["--jitter-ms", "0", *options]
        process, url = start_server_process(command, started)
        url = url.rstrip("/")
        return FakeLLM(url=url if url.endswith("/v1") else f"{url}/v1", process=process)

    yield start
    for process in started:
        process.kill()
        process.wait()


@pytest.fixture
def make_fake_judge(transactional_db) -> Callable[..., JudgeConfig]:
    counter = iter(range(1, 10_000))

    def make(server: FakeLLM, **fields: Any) -> JudgeConfig:
        fields = {"max_concurrency": 8, "timeout_seconds": 10.0} | fields
        return judge_config_create(
            name=fields.pop("name", f"fake-{next(counter)}"),
            provider="openai_compatible",
            model=fields.pop("model", "fake-judge"),
            base_url=server.url,
            **fields,
        )

    return make


# --- Celery worker ---------------------------------------------------------------------------


def test_database_url() -> str:
    """DATABASE_URL of the test database (pytest-django's), for processes a test starts."""
    database = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{database['NAME']}"
    return f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"


def worker_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DEBUG="1",
        DATABASE_URL=test_database_url(),
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        REDIS_URL=settings.REDIS_URL,
        EVALSITE_ITEM_LEASE_SECONDS=str(TEST_LEASE_SECONDS),
        EVALSITE_REAP_INTERVAL_SECONDS="1",
        EVALSITE_REQUEUE_AFTER_SECONDS="5",
        JUDGE_BACKOFF_BASE_SECONDS="0.05",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def flush_test_redis(url: str) -> None:
    """Empty the tests' own Redis database, never database 0: that is the one a developer's app uses."""
    client = redis.Redis.from_url(url)
    db = client.connection_pool.connection_kwargs.get("db", 0)
    if int(db) == APP_REDIS_DB:
        pytest.fail(
            f"the worker tests empty their Redis database and {url} is database {APP_REDIS_DB}, the app's: "
            "give the tests their own, e.g. REDIS_URL=redis://127.0.0.1:6379/15 (make test does)"
        )
    client.flushdb()


@dataclass
class Worker:
    process: subprocess.Popen
    log_path: Path
    log: Any = field(repr=False, default=None)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def celery_worker(transactional_db, tmp_path) -> Iterator[Callable[..., Worker]]:
    """Start real `celery -A evalsite worker --pool threads` processes against the test database."""
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):  # the embedded broker: empty its queue folder
        for message in Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]).iterdir():
            message.unlink()
    else:
        assert settings.CELERY_BROKER_URL.startswith("redis://"), "worker tests need a redis:// or filesystem:// broker"
        flush_test_redis(settings.CELERY_BROKER_URL)
    if settings.REDIS_URL and settings.REDIS_URL != settings.CELERY_BROKER_URL:
        flush_test_redis(settings.REDIS_URL)
    workers: list[Worker] = []

    def start(concurrency: int = 8, **env: str) -> Worker:
        log_path = tmp_path / f"worker-{len(workers) + 1}.log"
        log = log_path.open("w")
        command = [CELERY, "-A", "evalsite", "worker", "--pool", "threads", "-c", str(concurrency), "-l", "info"]
        command += ["-n", f"test{len(workers) + 1}-{os.getpid()}@%h", "--without-gossip", "--without-mingle"]
        process = subprocess.Popen(command, cwd=REPO, env=worker_env(**env), stdout=log, stderr=subprocess.STDOUT)
        worker = Worker(process=process, log_path=log_path, log=log)
        workers.append(worker)
        deadline = time.monotonic() + 30
        while "ready." not in worker.output():
            if process.poll() is not None or time.monotonic() > deadline:
                worker.kill()
                raise RuntimeError(f"worker did not start:\n{worker.output()}")
            time.sleep(0.1)
        return worker

    yield start
    for worker in workers:
        worker.kill()
        worker.log.close()
    connection.close()  # the flush after the test must not wait on anything


# --- A stand-in gateway for in-process engine tests (no network, no JudgeCall rows) ----------


@pytest.fixture
def stub_gateway(monkeypatch) -> StubGateway:
    from judges import gateway

    stub = StubGateway()
    monkeypatch.setattr(gateway, "judge", stub)
    return stub
