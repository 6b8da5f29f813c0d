"""Failed logins are throttled per (account, address) pair by django-axes."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

PASSWORD = "pw-12345678"


@pytest.fixture(autouse=True)
def throttle_on(settings) -> None:
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 3


def log_in(username: str, password: str, address: str = "10.0.0.1", **headers: str):
    return Client(REMOTE_ADDR=address, **headers).post("/login/", {"username": username, "password": password})


def lock_out(username: str, address: str = "10.0.0.1", **headers: str) -> None:
    statuses = [log_in(username, "wrong-guess", address, **headers).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]  # the form again twice, then the lockout page


def test_the_right_password_is_refused_once_an_account_is_locked_from_an_address(make_user):
    make_user("ann")

    lock_out("ann")
    response = log_in("ann", PASSWORD)

    assert response.status_code == 429
    assert b"Too many failed logins" in response.content
    assert "_auth_user_id" not in response.client.session


def test_fewer_failures_than_the_limit_do_not_lock(make_user):
    make_user("ann")

    for _ in range(2):
        log_in("ann", "wrong-guess")

    assert log_in("ann", PASSWORD).status_code == 302


def test_the_same_account_from_another_address_and_another_account_from_this_one_get_in(make_user):
    make_user("ann")
    make_user("bob")

    lock_out("ann", "10.0.0.1")

    assert log_in("ann", PASSWORD, "10.0.0.2").status_code == 302
    assert log_in("bob", PASSWORD, "10.0.0.1").status_code == 302
    assert log_in("ann", PASSWORD, "10.0.0.1").status_code == 429


def test_behind_a_trusted_proxy_the_forwarded_address_counts(make_user, settings):
    settings.EVALSITE_TRUSTED_PROXIES = 1
    make_user("ann")

    # every request comes from the proxy; X-Forwarded-For carries the client (a forged left part is ignored)
    lock_out("ann", "172.16.0.9", HTTP_X_FORWARDED_FOR="1.2.3.4, 10.0.0.1")

    assert log_in("ann", PASSWORD, "172.16.0.9", HTTP_X_FORWARDED_FOR="10.0.0.2").status_code == 302
    assert log_in("ann", PASSWORD, "172.16.0.9", HTTP_X_FORWARDED_FOR="5.6.7.8, 10.0.0.1").status_code == 429
