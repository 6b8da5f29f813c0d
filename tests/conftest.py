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
