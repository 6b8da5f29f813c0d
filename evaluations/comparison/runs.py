"""`run_compare`: two runs of one dataset, metric by metric (see the package docstring)."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from evaluations.aggregates import OVERALL
from evaluations.comparison.common import (
    RunRef,
    SettingsDiff,
    compared_metrics,
    joined_versions,
    ran,
    run_ref,
    runs_for_comparison,
    settings_diff,
)
from evaluations.models import ItemStatus, MetricResult, Run, RunItem
from evaluations.statistics import mcnemar_exact, paired_bootstraps

REGRESSIONS_LIMIT = 50


@dataclass(frozen=True)
class Flips:
    n: int  # pairs where both runs gave a pass/fail verdict
    pass_to_fail: int
    fail_to_pass: int
    p_value: float  # McNemar's exact test


@dataclass(frozen=True)
class ItemChange:
    external_id: str
    question: str
    base_item_id: int
    candidate_item_id: int
    base_score: float
    candidate_score: float
    delta: float


@dataclass(frozen=True)
class MetricComparison:
    metric: str
    in_base: bool
    in_candidate: bool
    n_pairs: int
    base_mean: float | None
    candidate_mean: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    significant: bool
    errored: int
    unscored: int
    flips: Flips | None
    regressed: int  # pairs whose score dropped
    improved: int
    regressions: list[ItemChange]  # largest drop first, at most REGRESSIONS_LIMIT
    improvements: list[ItemChange]  # largest gain first


@dataclass(slots=True)  # not frozen: 10,000 points are built twice as fast
class ItemPoint:
    external_id: str
    question: str
    base_item_id: int
    candidate_item_id: int
    base_status: str
    candidate_status: str
    base: dict[str, float | None]  # score by metric (and "overall")
    candidate: dict[str, float | None]


@dataclass(frozen=True)
class RunComparison:
    base: RunRef
    candidate: RunRef
    matched: int
    only_in_base: list[str]  # external ids
    only_in_candidate: list[str]
    metrics: list[MetricComparison]
    points: list[ItemPoint]
    settings: SettingsDiff

    def metric(self, name: str) -> MetricComparison | None:
        return next((entry for entry in self.metrics if entry.metric == name), None)


@dataclass(frozen=True)
class _Item:
    id: int
    status: str
    overall: float | None
    question: str


def run_compare(base: Run | int, candidate: Run | int) -> RunComparison:
    """Compare two runs of the same dataset; ComparisonError when a run is unknown or the datasets differ."""
    base_run, candidate_run = runs_for_comparison(base, candidate)
    with _cyclic_gc_paused():
        return _compare(base_run, candidate_run)


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """The ~200,000 row tuples and points of two 10,000-item runs hold no reference cycles, but
    allocating them triggers the cyclic collector over and over: a quarter of run_compare's CPU
    time (bench/compare.py). Reference counting still frees everything."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _compare(base_run: Run, candidate_run: Run) -> RunComparison:
    run_ids = [base_run.pk, candidate_run.pk]
    items: dict[int, dict[str, _Item]] = {base_run.pk: {}, candidate_run.pk: {}}
    rows = RunItem.objects.filter(run_id__in=run_ids).order_by("id")
    for item_id, run_id, status, overall, external_id, question in rows.values_list(
        "id", "run_id", "status", "overall_score", "example__external_id", "example__query"
    ):
        items[run_id][external_id] = _Item(item_id, status, overall, question)
    base_items, candidate_items = items[base_run.pk], items[candidate_run.pk]
    matched = [external_id for external_id in base_items if external_id in candidate_items]
    names = compared_metrics(base_run, candidate_run)
    pairs = _Pairs(names, [base_items[key] for key in matched], [candidate_items[key] for key in matched], matched)
    results = MetricResult.objects.filter(item__run_id__in=run_ids, metric__in=names).order_by()
    rows = results.values_list("item_id", "metric", "score", "passed", "prompt_version")
    item_ids, metrics, scores, passed, versions = zip(*rows, strict=True) if rows else ((),) * 5
    pairs.record(item_ids, metrics, scores, passed)
    # The prompt versions from the same rows: a DISTINCT query would read them all a second time.
    run_of = {item.id: run_id for run_id, by_external_id in items.items() for item in by_external_id.values()}
    prompts = joined_versions(set(zip(map(run_of.__getitem__, item_ids), metrics, versions, strict=True)))
    return RunComparison(
        base=run_ref(base_run),
        candidate=run_ref(candidate_run),
        matched=len(matched),
        only_in_base=[external_id for external_id in base_items if external_id not in candidate_items],
        only_in_candidate=[external_id for external_id in candidate_items if external_id not in base_items],
        metrics=_metric_comparisons(pairs, base_run, candidate_run),
        points=pairs.points(),
        settings=settings_diff(base_run, candidate_run, prompts),
    )


NO_VERDICT = -1


class _Pairs:
    """The matched examples' scores as arrays, one per run and metric (NaN: no score; the item
    unfinished, errored or skipped), so each metric's pairs are a mask, not a Python loop."""

    def __init__(self, names: list[str], base: list[_Item], candidate: list[_Item], external_ids: list[str]) -> None:
        self.names = names
        self.items = (base, candidate)
        self.external_ids = external_ids
        size = len(external_ids)
        self.position = [{item.id: i for i, item in enumerate(side)} for side in self.items]
        self.scores = [{name: np.full(size, np.nan) for name in names} for _ in self.items]
        self.passed = [{name: np.full(size, NO_VERDICT, dtype=np.int8) for name in names} for _ in self.items]
        self.done = [np.array([item.status == ItemStatus.DONE for item in side], dtype=bool) for side in self.items]
        self.errored = np.zeros(size, dtype=bool)
        for side in self.items:
            self.errored |= np.array([item.status == ItemStatus.ERROR for item in side], dtype=bool)
        if OVERALL in names:
            for side, scores, done in zip(self.items, self.scores, self.done, strict=True):
                overall = np.array([np.nan if item.overall is None else item.overall for item in side], dtype=float)
                scores[OVERALL] = np.where(done, overall, np.nan)

    def record(
        self,
        item_ids: Sequence[int],
        metrics: Sequence[str],
        scores: Sequence[float | None],
        passed: Sequence[bool | None],
    ) -> None:
        """The MetricResult rows of either run, as columns, into the arrays (vectorised)."""
        if not item_ids:
            return
        metrics_array = np.array(metrics)
        scores_array, passed_array = np.array(scores).astype(float), np.array(passed).astype(float)  # None → NaN
        ids = np.array(item_ids, dtype=np.int64)
        for side, items in enumerate(self.items):
            positions = _positions(np.array([item.id for item in items], dtype=np.int64), ids)
            for name in self.names:
                rows_here = (metrics_array == name) & (positions >= 0)
                rows_here[rows_here] &= self.done[side][positions[rows_here]]
                at = positions[rows_here]
                self.scores[side][name][at] = scores_array[rows_here]
                verdicts = passed_array[rows_here]
                self.passed[side][name][at] = np.where(np.isnan(verdicts), NO_VERDICT, verdicts)

    def valid(self, name: str) -> np.ndarray:
        """Pairs both runs scored (neither item errored)."""
        return ~self.errored & ~np.isnan(self.scores[0][name]) & ~np.isnan(self.scores[1][name])

    def points(self) -> list[ItemPoint]:
        columns = [{name: _nullable(scores[name]) for name in self.names} for scores in self.scores]
        base, candidate = self.items
        return [
            ItemPoint(
                external_id=external_id,
                question=base[i].question,
                base_item_id=base[i].id,
                candidate_item_id=candidate[i].id,
                base_status=base[i].status,
                candidate_status=candidate[i].status,
                base={name: columns[0][name][i] for name in self.names},
                candidate={name: columns[1][name][i] for name in self.names},
            )
            for i, external_id in enumerate(self.external_ids)
        ]

    def change(self, position: int, name: str) -> ItemChange:
        base, candidate = self.items[0][position], self.items[1][position]
        base_score, candidate_score = float(self.scores[0][name][position]), float(self.scores[1][name][position])
        return ItemChange(
            external_id=self.external_ids[position],
            question=base.question,
            base_item_id=base.id,
            candidate_item_id=candidate.id,
            base_score=base_score,
            candidate_score=candidate_score,
            delta=candidate_score - base_score,
        )


def _metric_comparisons(pairs: _Pairs, base_run: Run, candidate_run: Run) -> list[MetricComparison]:
    masks = [pairs.valid(name) for name in pairs.names]
    estimates = paired_bootstraps(
        [
            (pairs.scores[0][name][mask], pairs.scores[1][name][mask])
            for name, mask in zip(pairs.names, masks, strict=True)
        ]
    )
    comparisons = []
    for name, mask, estimate in zip(pairs.names, masks, estimates, strict=True):
        positions = np.flatnonzero(mask)
        deltas = pairs.scores[1][name][positions] - pairs.scores[0][name][positions]
        order = positions[np.argsort(deltas, kind="stable")]
        regressed, improved = int(np.count_nonzero(deltas < 0)), int(np.count_nonzero(deltas > 0))
        errored = int(np.count_nonzero(pairs.errored))
        comparisons.append(
            MetricComparison(
                metric=name,
                in_base=ran(name, base_run),
                in_candidate=ran(name, candidate_run),
                n_pairs=estimate.n,
                base_mean=estimate.base_mean,
                candidate_mean=estimate.candidate_mean,
                delta=estimate.delta,
                ci_low=estimate.ci_low,
                ci_high=estimate.ci_high,
                significant=estimate.significant,
                errored=errored,
                unscored=len(mask) - errored - len(positions),
                flips=_flips(pairs.passed[0][name][mask], pairs.passed[1][name][mask]),
                regressed=regressed,
                improved=improved,
                regressions=[pairs.change(position, name) for position in order[: min(regressed, REGRESSIONS_LIMIT)]],
                improvements=[
                    pairs.change(position, name) for position in order[::-1][: min(improved, REGRESSIONS_LIMIT)]
                ],
            )
        )
    return comparisons


def _flips(base_passed: np.ndarray, candidate_passed: np.ndarray) -> Flips | None:
    both = (base_passed != NO_VERDICT) & (candidate_passed != NO_VERDICT)
    if not both.any():
        return None
    result = mcnemar_exact(base_passed[both] == 1, candidate_passed[both] == 1)
    return Flips(n=result.n, pass_to_fail=result.pass_to_fail, fail_to_pass=result.fail_to_pass, p_value=result.p_value)


def _positions(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The index in `ids` of each wanted id; -1 where absent."""
    if len(ids) == 0:
        return np.full(len(wanted), -1)
    order = np.argsort(ids)
    found = np.clip(np.searchsorted(ids, wanted, sorter=order), 0, len(ids) - 1)
    return np.where(ids[order][found] == wanted, order[found], -1)


def _nullable(values: np.ndarray) -> list[float | None]:
    return [None if value != value else value for value in values.tolist()]  # NaN != NaN
