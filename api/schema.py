"""OpenAPI pieces shared by the views: the error body and the JSON shapes of stored documents."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="invalid, not_authenticated, permission_denied, not_found, ...")
    message = serializers.CharField()
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Messages per request field or parameter at fault (empty when none is).",
    )
    problems = serializers.ListField(
        child=serializers.DictField(child=serializers.CharField(allow_null=True)),
        required=False,
        help_text="Dataset import problems: {where: 'line 3' | 'item 2' | 'data row 4', field, message}.",
    )


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


ERROR_CODES = {
    400: "Bad input: `fields` names each field or parameter at fault.",
    401: "No credentials, or an invalid or revoked token.",
    403: "Your role does not allow this.",
    404: "No such object or endpoint.",
    405: "Method not allowed.",
    500: "Unexpected error (logged).",
}


def responses(ok: dict[int, Any], *extra: int) -> dict[int, Any]:
    """The operation's success bodies plus the error body for every error status it can answer."""
    codes = {**ERROR_CODES, **{code: "" for code in extra}}
    errors = {
        code: OpenApiResponse(ErrorSerializer, description=description or _EXTRA[code])
        for code, description in codes.items()
        if code not in ok
    }
    return {**ok, **errors}


_EXTRA = {
    409: "The object's state does not allow this (e.g. cancelling a finished run).",
    413: "The upload is over DATASET_MAX_UPLOAD_BYTES.",
    415: "Unsupported media type.",
    422: "This Idempotency-Key was used with a different request body.",
}

_NUMBER = {"type": "number", "nullable": True}
_INT = {"type": "integer"}
STATS_SCHEMA = {
    "type": "object",
    "description": "Stats of one metric (or the overall) over the run's items.",
    "properties": {
        "mean": _NUMBER,
        "median": _NUMBER,
        "pass_rate": _NUMBER,
        "passed": _INT,
        "covered": _INT,
        "skipped": _INT,
        "errored": _INT,
        "std_mean": _NUMBER,
    },
}
ITEM_COUNTS_SCHEMA = {
    "type": "object",
    "properties": {"total": _INT, "done": _INT, "errored": _INT, "unfinished": _INT},
}
AGGREGATES_SCHEMA = {
    "type": "object",
    "description": "The run's statistics, written when it finishes and updated by reviews (empty before).",
    "properties": {
        "items": ITEM_COUNTS_SCHEMA,
        "metrics": {"type": "object", "additionalProperties": STATS_SCHEMA},
        "overall": STATS_SCHEMA,
        "tags": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "items": ITEM_COUNTS_SCHEMA,
                    "metrics": {"type": "object", "additionalProperties": STATS_SCHEMA},
                    "overall": STATS_SCHEMA,
                },
            },
        },
        "histograms": {
            "type": "object",
            "description": "Score counts in 20 equal bins over each metric's scale.",
            "additionalProperties": {"type": "array", "items": _INT},
        },
        "judge": {
            "type": "object",
            "properties": {
                "calls": _INT,
                "cache_hits": _INT,
                "input_tokens": _INT,
                "output_tokens": _INT,
                "cost": {"type": "number"},
            },
        },
        "wall_seconds": _NUMBER,
        "target": {
            "type": "object",
            "description": "Runs with a live target only: its calls (one per item, retries counted in attempts), "
            "the items it failed, and the latency of its answering calls in ms (null when none answered).",
            "properties": {
                "calls": _INT,
                "attempts": _INT,
                "answered": _INT,
                "errors": _INT,
                "latency_ms": {
                    "type": "object",
                    "properties": {"p50": _NUMBER, "p95": _NUMBER, "max": _NUMBER, "mean": _NUMBER},
                },
            },
        },
        "review": {
            "type": "object",
            "description": "The judge's figures beside the reviewed ones.",
            "properties": {
                "items": {"type": "object", "properties": {"reviewed": _INT, "to_review": _INT}},
                "overall": {"type": "object", "additionalProperties": STATS_SCHEMA},
                "faithfulness": {"type": "object", "additionalProperties": STATS_SCHEMA},
            },
        },
    },
}
JSON_VALUE_SCHEMA = {"description": "Any JSON value.", "nullable": True}
TARGET_HEADERS_SCHEMA = {
    "type": "object",
    "description": 'Header name → a literal (non-secret) value, or {"env": "VARIABLE", "format": "Bearer {}"}: '
    "the *name* of the environment variable holding a secret value, never the value itself.",
    "additionalProperties": {
        "oneOf": [
            {"type": "string"},
            {
                "type": "object",
                "properties": {"env": {"type": "string"}, "format": {"type": "string"}},
                "required": ["env"],
            },
        ]
    },
}
JSON_OBJECT_SCHEMA = {"type": "object", "additionalProperties": JSON_VALUE_SCHEMA}


_PAGINATED: dict[type, type] = {}


def paginated(serializer: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The list envelope of ApiPagination around `serializer` (one named component per item type)."""
    if serializer not in _PAGINATED:
        name = f"Paginated{serializer.__name__.removesuffix('Serializer')}List"
        _PAGINATED[serializer] = type(
            name,
            (serializers.Serializer,),
            {
                "count": serializers.IntegerField(help_text="Items in the whole list."),
                "next": serializers.URLField(allow_null=True, help_text="The next page; null on the last."),
                "previous": serializers.URLField(allow_null=True),
                "results": serializer(many=True),
                "__module__": __name__,
            },
        )
    return _PAGINATED[serializer]
