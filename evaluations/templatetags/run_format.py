"""Number formatting for the run pages: percentages, durations, scores with their pass state."""

from __future__ import annotations

from typing import Any

from django import template

from evaluations.item_table import VERDICT_LABELS

register = template.Library()


@register.filter
def percent(value: float | None, digits: int = 0) -> str:
    """0.8231 -> "82%"; None -> "–"."""
    if value is None:
        return "–"
    return f"{value * 100:.{digits}f}%"


@register.filter
def duration(seconds: float | None) -> str:
    """Seconds as "42 s", "3 min 5 s" or "2 h 4 min"; None -> "–"."""
    if seconds is None:
        return "–"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


@register.filter
def score(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


@register.filter
def get(mapping: Any, key: str) -> Any:
    """mapping[key] or None (templates cannot index with a variable)."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def verdict_label(verdict: str) -> str:
    """The word shown with a verdict's colour (never colour alone)."""
    return VERDICT_LABELS.get(verdict, verdict.lower())


@register.filter
def label(name: str) -> str:
    """A metric or setting name for people: "citation_audit" -> "citation audit"."""
    return name.replace("_", " ")
