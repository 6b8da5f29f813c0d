"""Reads behind the run pages: the runs list, one run with its relations, score distributions, review counts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import Round

from evaluations.metrics.settings import THRESHOLD_RANGES
from evaluations.models import MetricResult, Run, RunItem, RunStatus

HISTOGRAM_BINS = 20
# Score ranges that are not 0..1 (correctness is the judge's 1..5).
SCORE_RANGES: dict[str, tuple[float, float]] = {"correctness": THRESHOLD_RANGES["correctness"]}


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
    counts: list[int]  # HISTOGRAM_BINS equal bins from low to high (high falls in the last bin)

    @property
    def width(self) -> float:
        return (self.high - self.low) / len(self.counts)

    @property
    def centers(self) -> list[float]:
        return [round(self.low + (i + 0.5) * self.width, 4) for i in range(len(self.counts))]


def score_histograms(run_id: int, metrics: Sequence[str], *, with_overall: bool) -> list[Histogram]:
    """Score distributions of the run's metrics (and the item overall), binned from values rounded in the database.

    Two grouped queries whatever the run size: scores are rounded to 2 decimals and counted per value
    by PostgreSQL, then the (few hundred) value counts are binned here.
    """
    values: dict[str, list[tuple[float, int]]] = defaultdict(list)
    rows = (
        MetricResult.objects.filter(item__run_id=run_id, metric__in=list(metrics), score__isnull=False)
        .annotate(value=Round("score", 2))
        .values_list("metric", "value")
        .annotate(n=Count("id"))
        .order_by()
    )
    for metric, value, n in rows:
        values[metric].append((value, n))
    names = list(metrics)
    if with_overall:
        names = ["overall", *names]
        overall = (
            RunItem.objects.filter(run_id=run_id, overall_score__isnull=False)
            .annotate(value=Round("overall_score", 2))
            .values_list("value")
            .annotate(n=Count("id"))
            .order_by()
        )
        values["overall"] = list(overall)
    return [_binned(name, values[name]) for name in names if values[name]]


def _binned(name: str, value_counts: list[tuple[float, int]]) -> Histogram:
    low, high = SCORE_RANGES.get(name, (0.0, 1.0))
    counts = [0] * HISTOGRAM_BINS
    for value, n in value_counts:
        share = (min(max(value, low), high) - low) / (high - low)
        counts[min(int(share * HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += n
    return Histogram(name=name, low=low, high=high, counts=counts)
