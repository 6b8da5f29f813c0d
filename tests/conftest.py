from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User


@pytest.fixture
def make_user(db):
    def make(username: str = "user", *, role: str | None = None, password: str = "pw-12345678") -> User:
        user = User.objects.create_user(username=username, password=password)
        if role:
            user.groups.add(Group.objects.get(name=role))
        return user

    return make
