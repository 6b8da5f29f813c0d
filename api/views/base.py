from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.views import APIView

from api.pagination import ApiPagination


def base_url(request: Request) -> str:
    """The scheme and host the request came to: the prefix of the absolute URLs in responses."""
    return request.build_absolute_uri("/").rstrip("/")


class ApiView(APIView):
    """Every API view: URLs in responses are absolute, lists use ApiPagination."""

    def context(self, **extra: Any) -> dict[str, Any]:
        return {"request": self.request, "base_url": base_url(self.request), **extra}

    def paginator(self) -> ApiPagination:
        return ApiPagination()
