from __future__ import annotations

from typing import Any

from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
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


class _JsonErrors:
    """Errors in the API's JSON shape, whatever the view renders on success (YAML, HTML)."""

    def handle_exception(self, exc: Exception) -> Response:
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)


class SchemaView(_JsonErrors, SpectacularAPIView):
    """The OpenAPI document (YAML, or JSON with ?format=json)."""


# The docs pages load nothing from elsewhere: Redoc's bundle links a logo on a CDN, which this blocks.
DOCS_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self' 'unsafe-inline'; worker-src 'self' blob:; font-src 'self' data:; connect-src 'self'"
)


class _LocalOnly:
    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Content-Security-Policy"] = DOCS_CSP
        return response


class SwaggerView(_JsonErrors, _LocalOnly, SpectacularSwaggerView):
    pass


class RedocView(_JsonErrors, _LocalOnly, SpectacularRedocView):
    template_name = "api/redoc.html"
