"""One error shape for every API response that is not a success:

    {"error": {"code": "invalid", "message": "...", "fields": {"metrics": ["..."]}}}

`fields` names the request fields or parameters at fault (empty when none is); dataset import
errors also carry `problems`, one per line / item / row as the importer reports them.
Django's own exceptions (404, PermissionDenied, a request body over the limit) and anything
unexpected (logged, then a 500 in this shape) go through the same handler.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig, ValidationError
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

logger = logging.getLogger(__name__)

NON_FIELD = "non_field_errors"
_FIELD_NAME = re.compile(r"^[A-Za-z_][\w.]*$")


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is over the size limit."
    default_code = "payload_too_large"


class Conflict(exceptions.APIException):
    """The resource is not in a state that allows this (a finished run cannot be cancelled)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The resource's state does not allow this."
    default_code = "conflict"


class IdempotencyKeyReused(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = "This Idempotency-Key was used with a different request body."
    default_code = "idempotency_key_reused"


class InvalidInput(exceptions.ValidationError):
    """A 400 naming its field, from a service's ValueError ("metrics: ...") or a lookup."""

    def __init__(self, field: str, message: str | list[str], *, problems: list[dict[str, Any]] | None = None) -> None:
        super().__init__({field: [message] if isinstance(message, str) else message})
        self.problems = problems


def field_error(exc: ValueError, default_field: str) -> InvalidInput:
    """A service's ValueError whose message starts with "<field>: " as a 400 on that field."""
    message = str(exc)
    head, sep, _ = message.partition(":")
    field = head.strip() if sep and _FIELD_NAME.match(head.strip()) else default_field
    return InvalidInput(field, message)


def error_body(code: str, message: str, fields: dict[str, list[str]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}, **extra}}


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge(f"The request body is over the size limit: {exc}")
    elif isinstance(exc, ValidationError):  # a service's model validation, keyed by field
        exc = exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else {NON_FIELD: exc.messages})
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "Not found.")
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or "You do not have permission to do this.")
    response = drf_exception_handler(exc, context)
    if response is None:
        request = context.get("request")
        logger.exception("API error on %s %s", getattr(request, "method", "?"), getattr(request, "path", "?"))
        return Response(
            error_body("server_error", "An unexpected error occurred; it has been logged."),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    assert isinstance(exc, exceptions.APIException)
    response.data = _shape(exc)
    return response


def _shape(exc: exceptions.APIException) -> dict[str, Any]:
    detail = exc.detail
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(detail)
        message = "; ".join(
            f"{name}: {messages[0]}" if name != NON_FIELD else messages[0] for name, messages in fields.items()
        )
        extra = {"problems": exc.problems} if getattr(exc, "problems", None) else {}
        return error_body("invalid", message or "Invalid input.", fields, **extra)
    codes = exc.get_codes()
    code = codes if isinstance(codes, str) else exc.default_code
    return error_body(str(code), str(detail))


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail as {"field": [...], "settings.weights": [...], "metrics.2": [...]}."""
    if isinstance(detail, dict):
        flat: dict[str, list[str]] = {}
        for key, value in detail.items():
            flat.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    if isinstance(detail, list):
        if all(not isinstance(value, dict | list) for value in detail):
            return {prefix or NON_FIELD: [str(value) for value in detail]}
        flat = {}
        for index, value in enumerate(detail):
            flat.update(_flatten(value, f"{prefix}.{index}" if prefix else str(index)))
        return flat
    return {prefix or NON_FIELD: [str(detail)]}


# --- Django-level handlers for /api/ (URLs no view matched, and errors outside DRF) ------------


@csrf_exempt  # a POST to no endpoint is a 404 in the API's shape, not Django's CSRF page
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    return JsonResponse(error_body("not_found", f"No API endpoint at {request.path}."), status=404)
