"""Settings read the environment only; a bad value stops start-up naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _check(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL"}
    }
    clean["EVALSITE_VAR_DIR"] = str(tmp_path / "var")
    clean.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DEBUG": "maybe"}, "DEBUG"),
        ({"DEBUG": "1", "DATASET_MAX_UPLOAD_BYTES": "fifty"}, "DATASET_MAX_UPLOAD_BYTES"),
        ({"DEBUG": "1", "JUDGE_MAX_ATTEMPTS": "0"}, "JUDGE_MAX_ATTEMPTS"),
        ({"DEBUG": "1", "DATABASE_URL": "nosuchdb://x"}, "DATABASE_URL"),
    ],
)
def test_bad_value_stops_startup_naming_the_variable(tmp_path, env, named):
    result = _check(tmp_path, **env)

    assert result.returncode != 0
    assert named in result.stderr
    assert "ImproperlyConfigured" in result.stderr


def test_production_refuses_to_start_without_secret_key(tmp_path):
    result = _check(tmp_path, DEBUG="0")

    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_development_generates_a_secret_key_once(tmp_path):
    first = _check(tmp_path, DEBUG="1")
    key = (tmp_path / "var" / "secret_key").read_text()
    second = _check(tmp_path, DEBUG="1")

    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    assert len(key) >= 40
    assert (tmp_path / "var" / "secret_key").read_text() == key


def test_defaults_are_the_embedded_mode(tmp_path):
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL, repr(s.REDIS_URL))"
    )
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL"}}
    clean.update(DEBUG="1", EVALSITE_VAR_DIR=str(tmp_path / "var"), DJANGO_SETTINGS_MODULE="evalsite.settings")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True)

    assert result.stdout.split() == ["django.db.backends.sqlite3", "filesystem://localhost/", "''"], result.stderr


HTTPS_SWITCHES = {
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_COOKIES": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "SECURE_PROXY_SSL_HEADER": "1",
}


def _deploy_check(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    # DJANGO_ALLOW_ASYNC_UNSAFE: set by the browser tests' fixtures, a deploy warning of its own.
    unset = {"DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE", *HTTPS_SWITCHES}
    clean = {k: v for k, v in os.environ.items() if k not in unset}
    clean.update(EVALSITE_VAR_DIR=str(tmp_path / "var"), DEBUG="0", SECRET_KEY="k" + os.urandom(40).hex(), **env)
    command = [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"]
    return subprocess.run(command, cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60)


def test_the_deploy_check_is_clean_with_the_https_switches_on(tmp_path):
    result = _deploy_check(tmp_path, **HTTPS_SWITCHES)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
    assert "WARNING" not in result.stdout + result.stderr


def test_the_deploy_check_names_each_switch_left_off(tmp_path):
    result = _deploy_check(tmp_path)

    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr, result.stderr
