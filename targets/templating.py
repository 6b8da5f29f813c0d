"""The request template: any JSON, whose strings carry placeholders for the example's fields.

Placeholders: {{query}}, {{id}}, {{reference_answer}}, {{response}}, {{expected_context_ids}},
{{tags}}, {{metadata}} and {{metadata.<key>[.<key>...]}}. Rendering works on the parsed JSON,
never on its text, so a quote or a newline in a question cannot break the request:

- a string that is exactly one placeholder becomes the field's JSON value itself
  (`"k": "{{metadata.top_k}}"` sends the number 5; `"{{tags}}"` a list);
- a placeholder inside a longer string is replaced by the value's text (a string as it is,
  anything else as compact JSON).

A metadata key the example lacks renders as null (or "" inside a longer string). An unknown
placeholder is an error naming it, raised when the target is saved (`placeholders_check`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_\-]+)*)\s*\}\}")
FIELDS = ("query", "id", "reference_answer", "response", "expected_context_ids", "tags", "metadata")


class TemplateError(ValueError):
    """A template names a field examples do not have."""


def example_fields(example: Any) -> dict[str, Any]:
    """The placeholder values of a dataset Example (or anything with its attributes)."""
    return {
        "query": example.query,
        "id": example.external_id,
        "reference_answer": example.reference_answer,
        "response": example.response,
        "expected_context_ids": list(example.expected_context_ids or []),
        "tags": list(example.tags or []),
        "metadata": dict(example.metadata or {}),
    }


def render(template: Any, fields: Mapping[str, Any]) -> Any:
    """The template with every placeholder replaced by the value of `fields` it names."""
    if isinstance(template, str):
        return _render_string(template, fields)
    if isinstance(template, list):
        return [render(value, fields) for value in template]
    if isinstance(template, dict):
        # a key is always text: a placeholder in it is replaced by the value's text
        return {_render_text(key, fields): render(value, fields) for key, value in template.items()}
    return template


def placeholders_check(template: Any) -> None:
    """TemplateError naming the first placeholder that is not an example field."""
    for name in _placeholders(template):
        if name.split(".", 1)[0] not in FIELDS:
            known = ", ".join("{{" + field + "}}" for field in FIELDS)
            raise TemplateError(f"unknown placeholder {{{{{name}}}}}: use {known} or {{{{metadata.<key>}}}}")


def _placeholders(template: Any) -> Iterator[str]:
    if isinstance(template, str):
        yield from PLACEHOLDER.findall(template)
    elif isinstance(template, list):
        for value in template:
            yield from _placeholders(value)
    elif isinstance(template, dict):
        for key, value in template.items():
            yield from _placeholders(key)
            yield from _placeholders(value)


def _render_string(text: str, fields: Mapping[str, Any]) -> Any:
    whole = PLACEHOLDER.fullmatch(text.strip()) if text.strip().startswith("{{") else None
    if whole is not None:
        return _value(whole.group(1), fields)
    return _render_text(text, fields)


def _render_text(text: str, fields: Mapping[str, Any]) -> str:
    return PLACEHOLDER.sub(lambda match: as_text(_value(match.group(1), fields)), text)


def _value(name: str, fields: Mapping[str, Any]) -> Any:
    head, *path = name.split(".")
    if head not in FIELDS:
        raise TemplateError(f"unknown placeholder {{{{{name}}}}}")
    value = fields.get(head)
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
