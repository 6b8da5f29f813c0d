from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User


@pytest.fixture
def make_user(db):
    def make(username: str = "user", *, role: str | None = None, password: str = "pw-12345678") -> User:
        user = User.objects.create_user(username=username, password=password)
        if role:
            user.groups.add(Group.objects.get_or_create(name=role)[0])
        return user

    return make


@pytest.fixture(autouse=True)
def fast_password_hashing(settings) -> None:
    # make_user hashes a password; the default hasher costs most of a view test's run time.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def login_throttle_off(settings) -> None:
    # Django's test client logs in without a request, which django-axes refuses; the throttle
    # has its own tests (tests/foundation/test_login_throttle.py), which turn it back on.
    settings.AXES_ENABLED = False
