"""bench/throughput.py still runs end to end (its figures are measured by hand; here only that it works)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from datasets.models import Dataset
from evaluations.models import Run
from judges.models import JudgeConfig
from tests.evaluations.conftest import REPO, worker_env


@pytest.mark.parametrize("mode", ["in-process", "worker"])
def test_the_throughput_bench_runs_its_three_runs_and_cleans_up(transactional_db, mode) -> None:
    command = [sys.executable, "bench/throughput.py", "--items", "6", "--latency-ms", "20", "--concurrency", "4"]
    command += ["--mode", mode, "--worker-processes", "1"]

    result = subprocess.run(command, cwd=REPO, env=worker_env(), capture_output=True, text=True, timeout=300)

    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "DEBUG off" in out
    assert re.search(r"run \d+ completed: 6 items done, 0 errors; 30 calls, 0 cache hits", out), out
    assert re.search(r"efficiency \d\.\d\d", out) and re.search(r"\d+ items/s, \d+ calls/s", out), out
    assert re.search(r"run \d+ completed: 6 items done, 0 errors; 0 calls, 30 cache hits", out), out
    assert "0 new calls" in out
    assert not Run.objects.exists() and not Dataset.objects.exists() and not JudgeConfig.objects.exists()
