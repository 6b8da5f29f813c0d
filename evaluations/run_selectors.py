"""Reads behind the run pages: the runs list, one run with its relations, review counts, stored score distributions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.db.models import Count, Q, QuerySet

from evaluations.aggregates import SCORE_SCALES
from evaluations.models import Run, RunItem, RunStatus


@dataclass(frozen=True)
class RunFilters:
    dataset: int | None = None
    judge: int | None = None
    status: str = ""

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> RunFilters:
        """Unparseable ids and unknown statuses are ignored (the list is then unfiltered by them)."""
        status = params.get("status", "")
        return cls(
            dataset=_int_or_none(params.get("dataset")),
            judge=_int_or_none(params.get("judge")),
            status=status if status in RunStatus.values else "",
        )

    @property
    def is_filtered(self) -> bool:
        return bool(self.dataset or self.judge or self.status)

    @property
    def params(self) -> str:
        """The query string of these filters (for page links)."""
        return urlencode({name: value for name, value in vars(self).items() if value})


def runs_of_target(target_id: int, limit: int = 10) -> list[Run]:
    """The latest runs that called a live target (the target page lists them)."""
    runs = Run.objects.filter(target_id=target_id).select_related("dataset_version__dataset", "judge_config")
    return list(runs.order_by("-created_at", "-id")[:limit])


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def run_list(filters: RunFilters) -> QuerySet[Run]:
    """Runs newest first with their dataset, version and judge (one query per page)."""
    runs = Run.objects.select_related("dataset_version__dataset", "judge_config").order_by("-created_at", "-id")
    if filters.dataset:
        runs = runs.filter(dataset_version__dataset_id=filters.dataset)
    if filters.judge:
        runs = runs.filter(judge_config_id=filters.judge)
    if filters.status:
        runs = runs.filter(status=filters.status)
    return runs


def run_get(run_id: int) -> Run | None:
    return (
        Run.objects.select_related("dataset_version__dataset", "judge_config", "created_by").filter(pk=run_id).first()
    )


@dataclass(frozen=True)
class ReviewCounts:
    reviewed: int
    total: int

    @property
    def to_review(self) -> int:
        return self.total - self.reviewed


def run_review_counts(run_id: int) -> ReviewCounts:
    """Items a person has reviewed (RunItem.reviewed_at) out of the run's items: one query."""
    counts = RunItem.objects.filter(run_id=run_id).aggregate(
        total=Count("id"), reviewed=Count("id", filter=Q(reviewed_at__isnull=False))
    )
    return ReviewCounts(reviewed=counts["reviewed"], total=counts["total"])


@dataclass(frozen=True)
class Histogram:
    name: str
    low: float
    high: float
    counts: list[int]  # equal bins from low to high

    @property
    def width(self) -> float:
        return (self.high - self.low) / len(self.counts)

    @property
    def centers(self) -> list[float]:
        return [round(self.low + (i + 0.5) * self.width, 4) for i in range(len(self.counts))]


def run_histograms(aggregates: Mapping[str, Any], names: Sequence[str]) -> list[Histogram]:
    """The stored score distributions (Run.aggregates["histograms"], written when the run finished), in `names` order."""
    stored = aggregates.get("histograms") or {}
    return [
        Histogram(name, *SCORE_SCALES.get(name, (0.0, 1.0)), counts=list(stored[name]))
        for name in names
        if name in stored
    ]
