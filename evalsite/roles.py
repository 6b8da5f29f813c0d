"""The three roles. Each is a Group; a higher role includes the lower ones' rights."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied

VIEWER = "viewer"
REVIEWER = "reviewer"
ADMIN = "admin"
ROLES = (VIEWER, REVIEWER, ADMIN)
_RANK = {VIEWER: 0, REVIEWER: 1, ADMIN: 2}


def user_role(user: AbstractBaseUser | AnonymousUser) -> str | None:
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return ADMIN
    names = set(user.groups.values_list("name", flat=True))
    held = [role for role in ROLES if role in names]
    return max(held, key=_RANK.__getitem__) if held else VIEWER


def has_role(user: AbstractBaseUser | AnonymousUser, role: str) -> bool:
    """Every signed-in user is at least a viewer."""
    held = user_role(user)
    return held is not None and _RANK[held] >= _RANK[role]


def require_role(user: AbstractBaseUser | AnonymousUser, role: str, action: str) -> None:
    """PermissionDenied naming the action and the role it needs, unless the user holds that role."""
    if not has_role(user, role):
        raise PermissionDenied(f"{action} needs the {role} role.")
