"""`Authorization: Token <key>` (or `Bearer <key>`): a personal token, looked up by its SHA-256."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from api import services

KEYWORDS = ("token", "bearer")


class ApiTokenAuthentication(BaseAuthentication):
    """Token auth. Its `authenticate_header` makes an anonymous request a 401 with WWW-Authenticate."""

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].decode(errors="replace").lower() not in KEYWORDS:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Invalid Authorization header: use 'Token <key>' with one key.")
        try:
            key = parts[1].decode()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        token = services.token_authenticate(key)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("This user is inactive.")
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Token realm="api"'
