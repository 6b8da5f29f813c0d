"""Account writes: users with a role."""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import transaction

from evalsite.roles import ADMIN, ROLES


@transaction.atomic
def user_create_or_update(*, username: str, password: str, role: str, email: str = "") -> tuple[User, bool]:
    """Create the user (or reset its password) and give it exactly `role`. Admins are Django superusers too."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    user, created = User.objects.get_or_create(username=username, defaults={"email": email})
    user.set_password(password)
    user.is_staff = user.is_superuser = role == ADMIN
    if email:
        user.email = email
    user.save()
    user.groups.set([Group.objects.get_or_create(name=role)[0]])
    return user, created
