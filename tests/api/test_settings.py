"""The API's settings read the environment like the rest: a bad value stops start-up naming the variable."""

from __future__ import annotations

import pytest

from tests.foundation.test_settings import _check


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DEBUG": "1", "API_CALLBACK_ALLOW_PRIVATE": "perhaps"}, "API_CALLBACK_ALLOW_PRIVATE"),
        ({"DEBUG": "1", "API_CALLBACK_BACKOFF_SECONDS": "soon"}, "API_CALLBACK_BACKOFF_SECONDS"),
        ({"DEBUG": "1", "API_CALLBACK_MAX_ATTEMPTS": "0"}, "API_CALLBACK_MAX_ATTEMPTS"),
        ({"DEBUG": "1", "API_CALLBACK_TIMEOUT_SECONDS": "0"}, "API_CALLBACK_TIMEOUT_SECONDS"),
    ],
)
def test_bad_callback_settings_stop_startup_naming_the_variable(tmp_path, env, named) -> None:
    result = _check(tmp_path, **env)
    assert result.returncode != 0
    assert named in result.stderr and "ImproperlyConfigured" in result.stderr
