"""End to end on a live server and a real Celery worker: upload → trigger → poll → gate through the API,
the run's callback delivered to a local HTTP server (a first 500, then the retry), and scripts/ci-gate.sh."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from api.services import token_create
from evaluations.models import Run
from judges.services import judge_config_create
from tests.evaluations.helpers import example

REPO = Path(__file__).resolve().parents[2]
FINISHED = ("completed", "completed_with_errors", "failed", "cancelled")
WORKER_ENV = {"API_CALLBACK_ALLOW_PRIVATE": "1", "API_CALLBACK_BACKOFF_SECONDS": "0.3"}

pytestmark = pytest.mark.slow


class CallbackServer:
    """Records every POST; answers 500 to the first `failures` of them, then 200."""

    def __init__(self, failures: int = 1) -> None:
        self.bodies: list[dict] = []
        self.statuses: list[int] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status = 500 if len(server.bodies) < failures else 200
                server.bodies.append(body)
                server.statuses.append(status)
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok" if status == 200 else b"try again")

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def callback_server() -> Iterator[CallbackServer]:
    server = CallbackServer(failures=1)
    yield server
    server.httpd.shutdown()


def jsonl(count: int) -> bytes:
    return "".join(json.dumps(example(n)) + "\n" for n in range(1, count + 1)).encode()


def wait_for(read, done, *, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {value}")
        time.sleep(0.3)


def test_upload_trigger_poll_gate_and_callback_with_a_retry(
    live_server, celery_worker, make_user, callback_server, settings
) -> None:
    settings.API_CALLBACK_ALLOW_PRIVATE = True
    judge_config_create(name="offline-flow", provider="offline", model="heuristic-v1", max_concurrency=4)
    key = token_create(user=make_user("ci", role="admin")).key
    api = httpx.Client(base_url=live_server.url, headers={"Authorization": f"Token {key}"}, timeout=30)
    worker = celery_worker(concurrency=4, **WORKER_ENV)

    uploaded = api.post("/api/datasets/", data={"name": "flow"}, files={"file": ("flow.jsonl", jsonl(8))})
    assert uploaded.status_code == 201, uploaded.text
    body = {
        "dataset": "flow",
        "judge": "offline-flow",
        "metrics": ["faithfulness", "rubric", "citation_audit"],
        "callback_url": callback_server.url,
    }
    started = api.post("/api/runs/", json=body, headers={"Idempotency-Key": "pipeline-1"})
    assert started.status_code == 201, started.text
    run_url = started.json()["url"]
    again = api.post("/api/runs/", json=body, headers={"Idempotency-Key": "pipeline-1"})
    assert again.status_code == 200 and again.json()["id"] == started.json()["id"]

    run = wait_for(lambda: api.get(run_url).json(), lambda r: r["status"] in FINISHED, timeout=120, what="the run")
    assert run["status"] == "completed" and run["progress"]["items_done"] == 8
    assert run["aggregates"]["metrics"]["faithfulness"]["covered"] == 8

    overall = run["aggregates"]["overall"]["mean"]
    gate = api.get(f"{run_url}gate/", params={"fail_under": f"overall={overall - 0.05:.3f}"}).json()
    assert gate["passed"] is True and gate["exit_code"] == 0
    gate = api.get(f"{run_url}gate/", params={"fail_under": f"overall={overall + 0.05:.3f}"}).json()
    assert gate["passed"] is False and gate["exit_code"] == 1
    items = api.get(f"{run_url}items/", params={"sort": "overall"}).json()
    assert items["count"] == 8
    assert api.get(items["results"][0]["url"]).json()["claims"]

    run = wait_for(
        lambda: api.get(run_url).json(),
        lambda r: r["callback"]["status"] in ("delivered", "failed"),
        timeout=60,
        what=f"the callback (worker log: {worker.output()[-3000:]})",
    )
    assert run["callback"]["status"] == "delivered" and run["callback"]["attempts"] == 2
    assert run["callback"]["last_status_code"] == 200 and run["callback"]["delivered_at"]
    assert callback_server.statuses == [500, 200]
    delivered = callback_server.bodies[-1]
    assert delivered["event"] == "run.finished"
    assert delivered["run"]["id"] == run["id"] and delivered["run"]["status"] == "completed"
    assert delivered["run"]["url"] == run_url and delivered["run"]["summary"]


def run_script(live_server, key: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, EVALSITE_URL=live_server.url, EVALSITE_TOKEN=key, EVALSITE_POLL_SECONDS="0.5")
    for name in ("CI_PIPELINE_ID", "GITHUB_RUN_ID", "BUILD_ID"):
        env.pop(name, None)
    return subprocess.run(
        ["bash", str(REPO / "scripts" / "ci-gate.sh"), *args], env=env, capture_output=True, text=True, timeout=180
    )


def test_the_ci_gate_script_against_a_live_server(live_server, celery_worker, make_user, tmp_path) -> None:
    judge_config_create(name="offline-ci", provider="offline", model="heuristic-v1", max_concurrency=4)
    key = token_create(user=make_user("ci", role="reviewer")).key
    admin_key = token_create(user=make_user("boss", role="admin")).key
    data = tmp_path / "answers.jsonl"
    data.write_bytes(jsonl(5))
    common = ["--file", str(data), "--dataset", "ci", "--judge", "offline-ci", "--metrics", "faithfulness,rubric"]

    bad = run_script(live_server, admin_key, *common)
    assert bad.returncode == 2 and "--fail-under is required" in bad.stderr
    refused = run_script(live_server, key, *common, "--fail-under", "overall=0")
    assert refused.returncode == 2 and "needs the admin role" in refused.stderr  # reviewers cannot upload

    no_worker_yet = run_script(
        live_server, admin_key, *common, "--fail-under", "overall=0", "--key", "build-6", "--timeout", "0"
    )
    assert no_worker_yet.returncode == 2 and "still queued after 0s" in no_worker_yet.stderr

    celery_worker(concurrency=4)
    passed = run_script(live_server, admin_key, *common, "--fail-under", "overall=0.01", "--key", "build-7")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "started run" in passed.stdout and "gate passed" in passed.stdout and "PASS overall" in passed.stdout
    retried = run_script(live_server, admin_key, *common, "--fail-under", "faithfulness=1.01", "--key", "build-7")
    assert retried.returncode == 1, retried.stdout + retried.stderr
    assert "following run" in retried.stdout and "FAIL faithfulness" in retried.stdout
    assert Run.objects.count() == 2  # build-6 (queued, then picked up) and build-7, started once
    reused = run_script(live_server, admin_key, *common, "--fail-under", "overall=0", "--key", "build-7", "--name", "x")
    assert reused.returncode == 2 and "different request body" in reused.stderr
