"""Reads for evaluations: run progress and the rows aggregates are computed from."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Count, Q

from evaluations.aggregates import ItemSummary, MetricScore
from evaluations.models import ItemStatus, MetricResult, Run, RunItem


@dataclass(frozen=True)
class RunProgress:
    status: str
    items_total: int
    items_done: int
    items_failed: int
    judge_calls: int
    cache_hits: int
    cost: Decimal
    started_at: datetime | None
    finished_at: datetime | None

    @property
    def items_finished(self) -> int:
        return self.items_done + self.items_failed


def run_progress(run_id: int) -> RunProgress | None:
    row = (
        Run.objects.filter(pk=run_id)
        .values(
            "status",
            "items_total",
            "items_done",
            "items_failed",
            "judge_calls",
            "cache_hits",
            "cost",
            "started_at",
            "finished_at",
        )
        .first()
    )
    return RunProgress(**row) if row else None


def run_status(run_id: int) -> str | None:
    """The run's status, None when the run is gone."""
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).first()


def run_item_counts(run_id: int) -> dict[str, int]:
    """Items per status, every status present (0 when none)."""
    counts = dict.fromkeys(ItemStatus.values, 0)
    for row in RunItem.objects.filter(run_id=run_id).values("status").annotate(n=Count("id")).order_by():
        counts[row["status"]] = row["n"]
    return counts


def run_active_statuses(run_id: int) -> set[str]:
    """Which of pending / running the run still has (a cheap index lookup, run after every item)."""
    active = (
        RunItem.objects.filter(run_id=run_id, status__in=[ItemStatus.PENDING, ItemStatus.RUNNING])
        .values_list("status", flat=True)
        .distinct()
        .order_by()
    )
    return set(active)


def run_in_flight(run_id: int) -> int:
    """Items handed to the broker or being executed: the run's current share of the queue."""
    return RunItem.objects.filter(
        Q(status=ItemStatus.RUNNING) | Q(status=ItemStatus.PENDING, enqueued_at__isnull=False), run_id=run_id
    ).count()


def run_pending_item_ids(run_id: int) -> list[int]:
    return list(
        RunItem.objects.filter(run_id=run_id, status=ItemStatus.PENDING).order_by("id").values_list("id", flat=True)
    )


def run_item_summaries(run_id: int) -> list[ItemSummary]:
    """Every item of the run with its tags, overall and metric scores, for `aggregates.run_aggregates`."""
    scores: dict[int, dict[str, MetricScore]] = defaultdict(dict)
    results = MetricResult.objects.filter(item__run_id=run_id).values_list(
        "item_id", "metric", "score", "passed", "details__std"
    )
    for item_id, metric, score, passed, std in results:
        scores[item_id][metric] = MetricScore(score=score, passed=passed, std=std)
    items = RunItem.objects.filter(run_id=run_id).values_list("id", "status", "overall_score", "example__tags")
    return [
        ItemSummary(status=status, tags=tuple(str(tag) for tag in tags or ()), overall=overall, results=scores[item_id])
        for item_id, status, overall, tags in items
    ]
