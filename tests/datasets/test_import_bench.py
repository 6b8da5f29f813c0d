"""bench/import_speed.py runs end to end (its figures are measured by hand; here only that it works)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from datasets.models import Dataset

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.django_db(transaction=True)
def test_the_import_bench_measures_parse_and_import_in_subprocesses_and_cleans_up() -> None:
    database = connection.settings_dict
    env = dict(os.environ, DEBUG="1")
    env["DATABASE_URL"] = f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"
    command = [sys.executable, "bench/import_speed.py", "--items", "300", "--batch-size", "100"]

    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "300 items x 3 contexts" in result.stdout
    for label in ("parse only ", "full import"):
        assert re.search(rf"{label}: +\d+\.\d\d s .* peak memory \d+ MB \(\d+ MB over start-up\)", result.stdout)
    assert not Dataset.objects.exists()
