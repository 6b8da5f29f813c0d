"""A run's aggregates (the JSON `aggregates.run_aggregates` stores) as rows for the admin's table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluations.aggregates import OVERALL

# (stats key, column heading, how to show a value)
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("mean", "Mean", "score"),
    ("median", "Median", "score"),
    ("pass_rate", "Pass rate", "score"),
    ("passed", "Passed", "count"),
    ("covered", "Covered", "count"),
    ("skipped", "Skipped", "count"),
    ("errored", "Errored", "count"),
    ("std_mean", "Std over repeats", "score"),
)
MISSING = "–"


def aggregate_tables(aggregates: Mapping[str, Any]) -> dict[str, Any]:
    """Headings and one section for all items, then one per tag, each with a row per metric."""
    sections = []
    if aggregates:
        sections.append(_section("All items", aggregates))
        for tag, stats in aggregates.get("tags", {}).items():
            sections.append(_section(f"Tag “{tag}”", stats))
    return {"headings": [heading for _, heading, _ in COLUMNS], "sections": sections}


def _section(title: str, stats: Mapping[str, Any]) -> dict[str, Any]:
    rows = [{"name": name, "cells": _cells(values)} for name, values in stats.get("metrics", {}).items()]
    overall = stats.get(OVERALL) or {}
    if overall.get("covered"):  # the overall score exists only when the rubric ran
        rows.append({"name": OVERALL, "cells": _cells(overall)})
    return {"title": title, "items": stats.get("items", {}), "rows": rows}


def _cells(values: Mapping[str, Any]) -> list[str]:
    return [_show(values.get(key), kind) for key, _, kind in COLUMNS]


def _show(value: Any, kind: str) -> str:
    if value is None:
        return MISSING
    return f"{value:.3f}" if kind == "score" else str(value)
