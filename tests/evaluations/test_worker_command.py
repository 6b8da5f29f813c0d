"""The shipped worker command (`make worker` → scripts/worker.py): N Celery processes × threads, one stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evaluations.conftest import REPO, worker_env
from tests.evaluations.helpers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def children_of(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_launcher(tmp_path: Path, processes: int = 2, threads: int = 2) -> tuple[subprocess.Popen, Path]:
    log_path = tmp_path / "launcher.log"
    command = [sys.executable, "scripts/worker.py", "--name", f"launch{os.getpid()}-", "-l", "info"]
    command += ["--without-gossip", "--without-mingle"]
    env = worker_env(WORKER_PROCESSES=str(processes), WORKER_THREADS=str(threads))
    launcher = subprocess.Popen(command, cwd=REPO, env=env, stdout=log_path.open("w"), stderr=subprocess.STDOUT)
    wait_until(lambda: log_path.read_text().count("ready.") == processes, timeout=60, message="workers ready")
    return launcher, log_path


def test_make_worker_runs_the_launcher():
    dry_run = subprocess.run(["make", "-n", "worker"], cwd=REPO, capture_output=True, text=True, check=True)

    assert "scripts/worker.py" in dry_run.stdout


def test_the_launcher_starts_one_process_per_worker_with_threads_and_stops_them_all_on_sigterm(tmp_path):
    # given the launcher asked for 2 processes × 3 threads
    launcher, log_path = start_launcher(tmp_path, processes=2, threads=3)
    workers = children_of(launcher.pid)
    assert len(workers) == 2 and all(alive(pid) for pid in workers)
    log = log_path.read_text()
    assert "2 Celery worker process(es) × 3 threads" in log
    assert log.count(".> concurrency: 3 (thread)") == 2, log

    # when it gets SIGTERM (docker stop, compose restart)
    launcher.send_signal(signal.SIGTERM)
    code = launcher.wait(timeout=30)

    # then both workers shut down warm, none is left, and the launcher exits 0
    assert code == 0, log_path.read_text()
    assert not any(alive(pid) for pid in workers)
    assert log_path.read_text().count("Warm shutdown") == 2


def test_a_worker_that_dies_on_its_own_stops_the_launcher_with_an_error(tmp_path):
    launcher, log_path = start_launcher(tmp_path)
    first, second = children_of(launcher.pid)

    os.kill(first, signal.SIGKILL)
    code = launcher.wait(timeout=30)

    assert code == 1
    assert not alive(second)
    assert f"worker process {first} exited with -9: stopping the others" in log_path.read_text()
