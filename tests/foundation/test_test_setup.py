"""`make test` on a fresh machine: its set-up script, its own Redis database, and a flush that spares the app's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import redis

from tests.evaluations.conftest import APP_REDIS_DB, flush_test_redis

REPO = Path(__file__).resolve().parents[2]
SETUP = REPO / "scripts" / "test-setup.sh"


def run_setup(**env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SETUP)], env={**os.environ, **env}, capture_output=True, text=True, timeout=60)


def test_setup_passes_when_the_services_are_up_and_chromium_is_there():
    # given: the services this suite is running against right now
    result = run_setup(DATABASE_URL=os.environ.get("DATABASE_URL", ""), REDIS_URL=os.environ.get("REDIS_URL", ""))

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_setup_stops_with_one_line_naming_what_to_install():
    result = run_setup(CHROMIUM_PATH="/nonexistent/chromium")

    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "Chromium at /nonexistent/chromium" in lines[0] and "apt-get install chromium" in lines[0]


def test_setup_names_an_unreachable_remote_redis():
    result = run_setup(REDIS_URL="redis://192.0.2.1:6390/1")  # TEST-NET-1: nothing answers there

    assert result.returncode == 1
    assert result.stderr.strip() == "test setup: Redis is not reachable at 192.0.2.1:6390: start it or set REDIS_URL"


def test_make_test_gives_the_tests_their_own_redis_database_and_stays_overridable():
    def dry_run(*overrides: str) -> str:
        env = {key: value for key, value in os.environ.items() if key not in {"DATABASE_URL", "REDIS_URL"}}
        command = ["make", "-n", "test", *overrides]
        return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout

    default = dry_run()
    custom = dry_run("REDIS_URL=redis://127.0.0.1:6379/9", "DATABASE_URL=postgres://x@db/y")

    assert "REDIS_URL=redis://127.0.0.1:6379/15" in default and "CELERY_BROKER_URL=redis://127.0.0.1:6379/15" in default
    assert "scripts/test-setup.sh" in default
    assert "REDIS_URL=redis://127.0.0.1:6379/9" in custom and "/15" not in custom
    assert "DATABASE_URL=postgres://x@db/y" in custom


def test_the_worker_tests_refuse_to_flush_the_apps_redis_database():
    # An unreachable server: the refusal must come before any command is sent.
    with pytest.raises(pytest.fail.Exception, match=f"database {APP_REDIS_DB}, the app's"):
        flush_test_redis(f"redis://127.0.0.1:1/{APP_REDIS_DB}")


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL")
def test_the_worker_tests_flush_their_own_redis_database():
    url = os.environ["REDIS_URL"]
    client = redis.Redis.from_url(url)
    if client.connection_pool.connection_kwargs.get("db", 0) == APP_REDIS_DB:
        pytest.skip("REDIS_URL is the app's database")
    client.set("evalsite-test-setup-probe", "1")

    flush_test_redis(url)

    assert client.get("evalsite-test-setup-probe") is None
