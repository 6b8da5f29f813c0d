"""Roles as the pages have them: every signed-in user reads; writes need the role the service needs."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from evalsite.roles import ADMIN, REVIEWER, has_role


class _RoleForWrites(BasePermission):
    role = ADMIN

    def has_permission(self, request: Request, view: Any) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if request.method in SAFE_METHODS or not hasattr(view, request.method.lower()):
            return True  # reads are for everyone; an unknown method gets its 405
        if has_role(request.user, self.role):
            return True
        self.message = f"{request.method} {request.path} needs the {self.role} role."
        return False


class ReviewerWrites(_RoleForWrites):
    """Starting or steering runs, reviewing claims, checking a judge."""

    role = REVIEWER


class AdminWrites(_RoleForWrites):
    """Creating and changing judges, uploading datasets."""

    role = ADMIN
