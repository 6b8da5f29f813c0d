"""Filters of the target pages: JSON shown indented, a body shown pretty when it is JSON, headers without secrets."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


@register.filter
def pretty_body(body: str) -> str:
    """A response body indented when it is JSON, else as it came."""
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return body


@register.filter
def header_display(spec: Any) -> str:
    """How a header's value is shown: `from $RAG_TOKEN as "Bearer {}"` for a secret, else the value."""
    if isinstance(spec, dict):
        shape = spec.get("format") or "{}"
        return f"from ${spec.get('env')}" + (f' as "{shape}"' if shape != "{}" else "")
    return str(spec)


@register.filter
def latency(value: Any) -> str:
    return "–" if value is None else f"{float(value):.0f} ms"


@register.filter
def get_item(mapping: Any, key: str) -> Any:
    return mapping.get(key, "") if isinstance(mapping, dict) else ""
