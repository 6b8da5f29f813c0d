"""Reads of the targets app: targets by id or name, snapshots, and a run's target latency figures."""

from __future__ import annotations

import math
from typing import Any

from django.db.models import QuerySet

from targets.models import SnapshotStatus, Target, TargetSnapshot


def target_list() -> QuerySet[Target]:
    return Target.objects.order_by("name")


def target_get(key: int | str) -> Target | None:
    """The target with this id (an int, or a string of digits no target is named) or this name; None if none."""
    if isinstance(key, int):
        return Target.objects.filter(pk=key).first()
    target = Target.objects.filter(name=key).first()
    if target is None and key.isdigit():
        target = Target.objects.filter(pk=int(key)).first()
    return target


def target_names() -> list[str]:
    return list(Target.objects.order_by("name").values_list("name", flat=True))


def snapshot_for_item(item_id: int) -> TargetSnapshot | None:
    return TargetSnapshot.objects.filter(item_id=item_id).first()


def snapshots_for_items(item_ids: list[int]) -> dict[int, TargetSnapshot]:
    return {snapshot.item_id: snapshot for snapshot in TargetSnapshot.objects.filter(item_id__in=item_ids)}


def percentile(values: list[int], share: float) -> float | None:
    """Nearest-rank percentile of sorted `values` (p50 of [10, 20, 30] is 20); None when empty."""
    if not values:
        return None
    rank = max(1, math.ceil(share * len(values)))
    return float(values[rank - 1])


def run_target_summary(run_id: int) -> dict[str, Any]:
    """Latency p50 / p95 / max of the target's answering calls, and the calls and errors of the run's items."""
    rows = TargetSnapshot.objects.filter(item__run_id=run_id).values_list("status", "latency_ms", "attempts")
    latencies, errors, calls, attempts = [], 0, 0, 0
    for status, latency_ms, tries in rows:
        calls += 1
        attempts += tries or 1
        if status == SnapshotStatus.ERROR:
            errors += 1
        elif latency_ms is not None:
            latencies.append(latency_ms)
    latencies.sort()
    return {
        "calls": calls,
        "attempts": attempts,
        "answered": len(latencies),
        "errors": errors,
        "latency_ms": {
            "p50": percentile(latencies, 0.50),
            "p95": percentile(latencies, 0.95),
            "max": float(latencies[-1]) if latencies else None,
            "mean": round(sum(latencies) / len(latencies), 1) if latencies else None,
        },
    }


def target_summary_line(summary: dict[str, Any]) -> str:
    """`run_target_summary` as one line: "target: 12 calls, 1 error; latency p50 40 ms, p95 90 ms, max 120 ms"."""
    latency = summary.get("latency_ms") or {}

    def ms(value: float | None) -> str:
        return "–" if value is None else f"{value:.0f} ms"

    errors = summary.get("errors", 0)
    return (
        f"target: {summary.get('calls', 0)} calls, {errors} error{'s' if errors != 1 else ''}; "
        f"latency p50 {ms(latency.get('p50'))}, p95 {ms(latency.get('p95'))}, max {ms(latency.get('max'))}"
    )
