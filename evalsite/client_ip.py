"""The client's address, as the login throttle (django-axes) counts it."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str:
    """REMOTE_ADDR, or behind `TRUSTED_PROXIES` reverse proxies the address the outermost one saw.

    Each proxy appends the address it received the request from to X-Forwarded-For, so with N
    trusted proxies the client is the N-th entry from the right; anything left of it was written
    by the client and proves nothing.
    """
    proxies = settings.EVALSITE_TRUSTED_PROXIES
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if proxies and len(forwarded) >= proxies:
        return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR", "")
