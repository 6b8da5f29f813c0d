from __future__ import annotations

from typing import Any

from drf_spectacular.views import SpectacularAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
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


class SchemaView(SpectacularAPIView):
    """The OpenAPI document (YAML, or JSON with ?format=json); its errors in the API's JSON shape."""

    def handle_exception(self, exc: Exception) -> Response:
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)
