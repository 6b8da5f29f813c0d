"""Filters of the review pages: verdicts as a word and a colour class, scores, JSON for reading."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()

VERDICT_WORDS = {
    "SUPPORTED": "Supported",
    "PARTIALLY_SUPPORTED": "Partly supported",
    "CONTRADICTED": "Contradicted",
    "NOT_ENOUGH_INFO": "Not enough info",
}


@register.filter
def verdict_word(verdict: str) -> str:
    return VERDICT_WORDS.get(verdict, verdict)


@register.filter
def verdict_class(verdict: str) -> str:
    return "v-" + str(verdict).lower().replace("_", "-")


@register.filter
def score(value: Any, digits: int = 2) -> str:
    """A score with `digits` decimals; an en dash when there is none."""
    if value is None or value == "":
        return "–"
    try:
        return f"{float(value):.{int(digits)}f}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON for reading; autoescaped like any other text when rendered."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@register.filter
def get(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def last_change(overrides: Any) -> Any:
    """The newest history entry that changed the verdict (what "undo" reverts), or None."""
    return next((entry for entry in overrides if entry.old_verdict != entry.new_verdict), None)
