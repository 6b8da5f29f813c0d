"""Reads behind the comparison pages: the runs a person can pick, and the page's view of a `RunComparison`.

The figures themselves come from `evaluations.comparison` (the same service as `manage.py compare`
and the API); this module only picks the runs for the form and shapes one metric for the scatter.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

import numpy as np

from evaluations.aggregates import OVERALL, SCORE_SCALES
from evaluations.comparison import MetricComparison, RunComparison
from evaluations.models import Run

RUN_CHOICES_LIMIT = 300
UNMATCHED_SHOWN = 100


class CompareParamError(ValueError):
    """A query parameter of the comparison pages is missing or malformed; the message names it."""


@dataclass(frozen=True)
class RunChoice:
    id: int
    label: str  # "#12 nightly · judge gpt · completed · 2026-11-20"


@dataclass(frozen=True)
class DatasetRuns:
    dataset_id: int
    dataset: str
    runs: list[RunChoice]


def run_choices(*, dataset_id: int | None = None, limit: int = RUN_CHOICES_LIMIT) -> list[DatasetRuns]:
    """The newest runs grouped by dataset (one query); only `dataset_id`'s runs when given."""
    runs = Run.objects.order_by("dataset_version__dataset__name", "dataset_version__dataset_id", "-created_at", "-id")
    if dataset_id is not None:
        runs = runs.filter(dataset_version__dataset_id=dataset_id)
    rows = runs.values_list(
        "id",
        "name",
        "status",
        "created_at",
        "dataset_version__number",
        "dataset_version__dataset_id",
        "dataset_version__dataset__name",
        "judge_config__name",
    )[:limit]
    groups = []
    for (group_id, group_name), entries in groupby(rows, key=lambda row: (row[5], row[6])):
        groups.append(
            DatasetRuns(
                dataset_id=group_id,
                dataset=group_name,
                runs=[
                    RunChoice(
                        id=run_id,
                        label=f"#{run_id} {name or 'run'} · v{version} · judge {judge} · {status.replace('_', ' ')} "
                        f"· {created:%Y-%m-%d %H:%M}",
                    )
                    for run_id, name, status, created, version, _, _, judge in entries
                ],
            )
        )
    return groups


def run_id_param(params, name: str, *, required: bool = True) -> int | None:
    """A run id from the query string; CompareParamError naming the parameter when it is not a whole number."""
    value = (params.get(name) or "").strip()
    if not value:
        if required:
            raise CompareParamError(f"{name}: pick a run")
        return None
    if not value.isdigit():
        raise CompareParamError(f"{name}: {value!r} is not a run id (a whole number)")
    return int(value)


def dataset_of(run_id: int) -> int | None:
    return Run.objects.filter(pk=run_id).values_list("dataset_version__dataset_id", flat=True).first()


@dataclass(frozen=True)
class MetricView:
    """One metric of a comparison as the page shows it: its scatter's arrays and its changes."""

    entry: MetricComparison
    base: np.ndarray
    candidate: np.ndarray
    questions: list[str]
    external_ids: list[str]
    scale: tuple[float, float]


def selected_metric(comparison: RunComparison, requested: str | None) -> str:
    """`?metric=` if the runs compared it; by default the overall, else the first metric both ran."""
    names = [entry.metric for entry in comparison.metrics]
    if requested:
        if requested not in names:
            raise CompareParamError(f"metric: {requested!r} is not one of {', '.join(names)}")
        return requested
    both = [entry.metric for entry in comparison.metrics if entry.in_base and entry.in_candidate]
    if OVERALL in both:
        return OVERALL
    return both[0] if both else (names[0] if names else "")


def metric_view(comparison: RunComparison, name: str) -> MetricView | None:
    entry = comparison.metric(name)
    if entry is None:
        return None
    paired = [
        point
        for point in comparison.points
        if point.base.get(name) is not None
        and point.candidate.get(name) is not None
        and "error" not in (point.base_status, point.candidate_status)
    ]
    return MetricView(
        entry=entry,
        base=np.fromiter((point.base[name] for point in paired), dtype=float, count=len(paired)),
        candidate=np.fromiter((point.candidate[name] for point in paired), dtype=float, count=len(paired)),
        questions=[point.question for point in paired],
        external_ids=[point.external_id for point in paired],
        scale=SCORE_SCALES.get(name, (0.0, 1.0)),
    )
