"""Reads behind the dashboard (`/`): recent runs with progress and review backlog, each dataset's metric
trends over its runs, judge spend over the last 30 days, and each dataset's latest comparison.

A fixed number of queries whatever the data: recent runs (1) and their items awaiting review (1),
the trend runs (1, only the aggregates' `metrics` and `overall` keys) and their prompt versions (1),
the spend per judge (1). Trends read the figures stored in `Run.aggregates` when a run finished (a
review keeps them current), never the items. Error bars are the run's mean standard deviation across
repeats (`std_mean`), shown only for runs with repeats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Min
from django.utils import timezone

from evaluations.aggregates import OVERALL
from evaluations.analysis_charts import TrendSeries, hover_text
from evaluations.comparison.common import joined_versions
from evaluations.metrics import execution_order
from evaluations.models import ItemStatus, MetricResult, Run, RunItem, RunStatus
from evaluations.review_selectors import FINISHED_ITEM_STATUSES
from judges import selectors as judge_selectors

RECENT_RUNS = 10
ACTIVE_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.CANCELLING)
# Runs whose scores are a run's result (a failed or cancelled run's aggregates cover part of it).
SCORED_STATUSES = (RunStatus.COMPLETED, RunStatus.COMPLETED_WITH_ERRORS)
TREND_RUNS_PER_DATASET = 20
TREND_RUNS_SCANNED = 400  # the newest scored runs read for all trends together
SPEND_DAYS = 30


@dataclass(frozen=True)
class RecentRun:
    id: int
    name: str
    status: str
    dataset_id: int
    dataset: str
    dataset_version: int
    judge: str
    items_total: int
    items_done: int
    items_failed: int
    created_at: datetime
    started_at: datetime | None
    to_review: int  # finished items nobody reviewed yet

    @property
    def items_finished(self) -> int:
        return self.items_done + self.items_failed

    @property
    def percent(self) -> int:
        return round(100 * self.items_finished / self.items_total) if self.items_total else 0

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES


def recent_runs(limit: int = RECENT_RUNS) -> list[RecentRun]:
    """The newest runs with their progress and the items awaiting review (two queries)."""
    rows = list(
        Run.objects.order_by("-created_at", "-id").values_list(
            "id",
            "name",
            "status",
            "dataset_version__dataset_id",
            "dataset_version__dataset__name",
            "dataset_version__number",
            "judge_config__name",
            "items_total",
            "items_done",
            "items_failed",
            "created_at",
            "started_at",
        )[:limit]
    )
    if not rows:
        return []
    awaiting = dict(
        RunItem.objects.filter(
            run_id__in=[row[0] for row in rows], status__in=FINISHED_ITEM_STATUSES, reviewed_at__isnull=True
        )
        .values("run_id")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("run_id", "n")
    )
    return [RecentRun(*row, to_review=awaiting.get(row[0], 0)) for row in rows]


def any_active(runs: list[RecentRun]) -> bool:
    return any(run.is_active for run in runs)


@dataclass(frozen=True)
class DatasetTrend:
    dataset_id: int
    dataset: str
    runs: int  # scored runs plotted
    series: list[TrendSeries]
    latest_pair: tuple[int, int] | None  # (base, candidate): the dataset's last two scored runs
    latest_names: tuple[str, str] | None = None


@dataclass
class _TrendRun:
    id: int
    name: str
    started: datetime
    version: int
    judge: str
    model: str
    repeats: int
    metrics: dict[str, Any]
    overall: dict[str, Any]
    prompts: dict[str, str] = field(default_factory=dict)


def dataset_trends(per_dataset: int = TREND_RUNS_PER_DATASET) -> list[DatasetTrend]:
    """Per dataset (most recently run first): each metric's mean over its last scored runs, oldest first."""
    rows = (
        Run.objects.filter(status__in=SCORED_STATUSES)
        .order_by("-started_at", "-id")
        .values_list(
            "id",
            "name",
            "started_at",
            "created_at",
            "dataset_version__number",
            "dataset_version__dataset_id",
            "dataset_version__dataset__name",
            "judge_config__name",
            "judge_config__model",
            "settings__repeats",
            "aggregates__metrics",
            "aggregates__overall",
        )[:TREND_RUNS_SCANNED]
    )
    by_dataset: dict[tuple[int, str], list[_TrendRun]] = {}
    for run_id, name, started, created, version, dataset_id, dataset, judge, model, repeats, metrics, overall in rows:
        runs = by_dataset.setdefault((dataset_id, dataset), [])
        if len(runs) < per_dataset:
            runs.append(
                _TrendRun(
                    id=run_id,
                    name=name or f"run {run_id}",
                    started=started or created,
                    version=version,
                    judge=judge,
                    model=model,
                    repeats=int(repeats or 1),
                    metrics=metrics if isinstance(metrics, dict) else {},
                    overall=overall if isinstance(overall, dict) else {},
                )
            )
    prompts = _first_item_prompt_versions([run.id for runs in by_dataset.values() for run in runs])
    trends = []
    for (dataset_id, dataset), runs in by_dataset.items():
        for run in runs:
            run.prompts = prompts.get(run.id, {})
        runs.sort(key=lambda run: (run.started, run.id))
        latest = runs[-2:] if len(runs) >= 2 else None
        trends.append(
            DatasetTrend(
                dataset_id=dataset_id,
                dataset=dataset,
                runs=len(runs),
                series=_series(runs),
                latest_pair=(latest[0].id, latest[1].id) if latest else None,
                latest_names=(latest[0].name, latest[1].name) if latest else None,
            )
        )
    return trends


def _first_item_prompt_versions(run_ids: list[int]) -> dict[int, dict[str, str]]:
    """Per run, per metric: the prompt versions of its first scored item (one query, not a pass over every
    result; a run's prompts do not change mid-run unless the prompt files do)."""
    if not run_ids:
        return {}
    first_items = (
        RunItem.objects.filter(run_id__in=run_ids, status=ItemStatus.DONE)
        .values("run_id")
        .annotate(first=Min("id"))
        .order_by()
        .values("first")
    )
    rows = (
        MetricResult.objects.filter(item_id__in=first_items)
        .exclude(prompt_version="")
        .values_list("item__run_id", "metric", "prompt_version")
    )
    return joined_versions(rows)


def _series(runs: list[_TrendRun]) -> list[TrendSeries]:
    names = execution_order(list(dict.fromkeys(name for run in runs for name in run.metrics)))
    if any(run.overall.get("mean") is not None for run in runs):
        names = [OVERALL, *names]
    hovers = [_hover(run) for run in runs]
    series = []
    for name in names:
        stats = [run.overall if name == OVERALL else run.metrics.get(name) or {} for run in runs]
        means = [entry.get("mean") for entry in stats]
        if all(mean is None for mean in means):
            continue
        series.append(
            TrendSeries(
                metric=name,
                started=[run.started for run in runs],
                means=means,
                errors=[
                    entry.get("std_mean") if run.repeats > 1 else None for run, entry in zip(runs, stats, strict=True)
                ],
                hovers=hovers,
            )
        )
    return series


def _hover(run: _TrendRun) -> str:
    prompts = ", ".join(f"{metric} {version}" for metric, version in sorted(run.prompts.items())) or "–"
    lines = [
        f"<b>#{run.id} {hover_text(run.name, 60)}</b>",
        f"judge {hover_text(run.judge, 40)} · model {hover_text(run.model, 40)}",
        f"prompts: {hover_text(prompts, 160)}",
        f"dataset v{run.version}" + (f" · {run.repeats} repeats (bar: std across them)" if run.repeats > 1 else ""),
        f"started {run.started:%Y-%m-%d %H:%M}",
    ]
    return "<br>".join(lines)


@dataclass(frozen=True)
class JudgeSpend:
    judge_id: int
    judge: str
    provider: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost: Decimal
    errors: int

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class SpendSummary:
    days: int
    judges: list[JudgeSpend]

    @property
    def total_cost(self) -> Decimal:
        return sum((entry.cost for entry in self.judges), Decimal(0))

    @property
    def total_tokens(self) -> int:
        return sum(entry.tokens for entry in self.judges)

    @property
    def total_calls(self) -> int:
        return sum(entry.calls for entry in self.judges)


def judge_spend(days: int = SPEND_DAYS, *, now: datetime | None = None) -> SpendSummary:
    """Calls logged per judge since `days` ago: tokens and cost (cache hits log no call: they are free). One query."""
    rows = judge_selectors.judge_spend_since(since=(now or timezone.now()) - timedelta(days=days))
    return SpendSummary(
        days=days,
        judges=[
            JudgeSpend(
                judge_id=row["config_id"],
                judge=row["config__name"],
                provider=row["config__provider"],
                model=row["config__model"],
                calls=row["calls"],
                input_tokens=row["input_tokens"],
                output_tokens=row["output_tokens"],
                cost=row["cost"],
                errors=row["errors"],
            )
            for row in rows
        ],
    )
