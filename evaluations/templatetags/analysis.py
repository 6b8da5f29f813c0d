"""Filters of the analyst's pages (dashboard, comparison, agreement): signed deltas, p-values, intervals, κ."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

register = template.Library()


@register.filter
def signed(value: float | None, digits: int = 3) -> str:
    """A delta with its sign: +0.012, −0.034, 0.000; an en dash when there is none."""
    if value is None:
        return "–"
    if round(value, int(digits)) == 0:
        return f"{0:.{int(digits)}f}"
    text = f"{value:+.{int(digits)}f}"
    return text.replace("-", "−")


@register.filter
def pvalue(value: float | None) -> str:
    """p = 0.034, p < 0.001; an en dash when there is none."""
    if value is None:
        return "–"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


@register.filter
def interval(estimate: Any, digits: int = 3) -> str:
    """ "[−0.051, −0.012]" from an object or a dict with ci_low / ci_high; an en dash without an interval."""
    low, high = _bounds(estimate)
    if low is None or high is None:
        return "–"
    return f"[{signed(low, digits)}, {signed(high, digits)}]"


@register.filter
def plain_interval(estimate: Any, digits: int = 2) -> str:
    """ "[0.12, 0.78]": an interval of a figure that is not a delta (κ, a calibrated mean), without signs."""
    low, high = _bounds(estimate)
    if low is None or high is None:
        return "–"
    return f"[{low:.{int(digits)}f}, {high:.{int(digits)}f}]".replace("-", "−")


def _bounds(estimate: Any) -> tuple[float | None, float | None]:
    if isinstance(estimate, Mapping):
        return estimate.get("ci_low"), estimate.get("ci_high")
    return getattr(estimate, "ci_low", None), getattr(estimate, "ci_high", None)


@register.filter
def delta_class(value: float | None) -> str:
    """CSS class of a delta: up (better), down (worse) or flat."""
    if value is None or value == 0:
        return "flat"
    return "up" if value > 0 else "down"


@register.filter
def show_setting(value: Any) -> str:
    """A settings diff value: "—" when the run has no such setting."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
