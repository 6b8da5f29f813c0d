"""bench/compare.py still runs end to end (its figure is measured by hand; here only that it works)."""

from __future__ import annotations

import re
import subprocess
import sys

from datasets.models import Dataset
from evaluations.models import Run
from judges.models import JudgeConfig
from tests.evaluations.conftest import REPO, worker_env


def test_the_compare_bench_times_run_compare_and_cleans_up(transactional_db) -> None:
    command = [sys.executable, "bench/compare.py", "--items", "1000", "--repeat", "2"]

    result = subprocess.run(command, cwd=REPO, env=worker_env(), capture_output=True, text=True, timeout=300)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "seeded 2 runs of 1000 items" in result.stdout and "DEBUG off" in result.stdout
    assert re.search(r"^1000 pairs; faithfulness [+-]0\.\d+", result.stdout, re.M), result.stdout
    assert re.search(r"run_compare: median \d+\.\d+ s, slowest \d+\.\d+ s over 2 repeats, 3 queries", result.stdout)
    assert not Run.objects.exists() and not Dataset.objects.exists() and not JudgeConfig.objects.exists()
