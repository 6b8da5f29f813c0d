"""Compare two runs of one dataset: per-metric deltas with intervals, flips, item changes, settings diff.

`run_compare(base, candidate)` pairs the runs' items by the example's external id (the runs may
use different versions of the dataset), then per metric (and the items' overall score):

- base mean, candidate mean and their delta over the pairs both runs scored, with a paired
  bootstrap 95% interval (`statistics.paired_bootstraps`); significant when it excludes 0;
- pass/fail flips each way with McNemar's exact p (metrics with a pass/fail verdict);
- pairs left out: an item errored in either run (`errored`), or a run has no score for it
  (`unscored`: the metric was skipped, not run, or the item is unfinished);
- the largest regressions and improvements (REGRESSIONS_LIMIT each).

Plus one point per matched example for a scatter, the examples found in one run only, and the
settings that differ (judge, provider, model, prompt versions, metrics, weights, thresholds, ...)
with `judges_or_prompts_differ` for the page's warning. `compare_item` is the side-by-side diff
of one example. Scores are the stored `MetricResult.score` (reviewer overrides are already in
faithfulness); claims show the judge's and the current verdict.

Every result is a dataclass of plain values: `dataclasses.asdict` makes it JSON.
Queries: 3 for `run_compare` and 5 for `compare_item`, whatever the runs' size.
"""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluations.metrics import execution_order, has_overall
from evaluations.models import Claim, ItemStatus, MetricResult, Run, RunItem
from evaluations.statistics import mcnemar_exact, paired_bootstraps

OVERALL = "overall"
REGRESSIONS_LIMIT = 50
# Settings rows whose difference means the scores come from another judge or prompt.
JUDGE_KEYS = ("judge", "provider", "model", "temperature")
PROMPT_PREFIX = "prompt."


class ComparisonError(ValueError):
    """The two runs cannot be compared (unknown run, different datasets, unknown example)."""


@dataclass(frozen=True)
class RunRef:
    id: int
    name: str
    status: str
    dataset_id: int
    dataset: str
    dataset_version: int
    judge_config_id: int
    judge: str
    items_total: int
    created_at: str


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
class SettingRow:
    key: str  # judge, model, prompt.faithfulness, metrics, weights.relevance, thresholds.rubric, ...
    base: Any
    candidate: Any
    differs: bool


@dataclass(frozen=True)
class SettingsDiff:
    rows: list[SettingRow]
    judges_or_prompts_differ: bool
    warning: str  # "" when the runs share judge and prompts


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
class ClaimRow:
    position: int
    text: str
    judge_verdict: str
    current_verdict: str
    overridden: bool  # a reviewer's verdict differs from the judge's
    evidence: str
    context_ids: list[str]
    in_other_run: bool  # the other run has a claim with the same text


@dataclass(frozen=True)
class ItemSide:
    item_id: int
    run_id: int
    status: str
    error: str
    query: str
    response: str
    contexts: list[Any]
    reference_answer: str
    overall_score: float | None
    results: dict[str, dict[str, Any]]  # metric → score, passed, feedback, prompt_version
    claims: list[ClaimRow]


@dataclass(frozen=True)
class ScoreChange:
    metric: str
    base_score: float | None
    candidate_score: float | None
    delta: float | None
    base_passed: bool | None
    candidate_passed: bool | None


@dataclass(frozen=True)
class ItemDiff:
    external_id: str
    base_run: RunRef
    candidate_run: RunRef
    base: ItemSide | None  # None: the example is not in that run
    candidate: ItemSide | None
    scores: list[ScoreChange]
    settings: SettingsDiff


@dataclass(frozen=True)
class _Item:
    id: int
    status: str
    overall: float | None
    question: str


# --- Run comparison --------------------------------------------------------------------------


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
    names = _compared_metrics(base_run, candidate_run)
    pairs = _Pairs(names, [base_items[key] for key in matched], [candidate_items[key] for key in matched], matched)
    results = MetricResult.objects.filter(item__run_id__in=run_ids, metric__in=names).order_by()
    rows = results.values_list("item_id", "metric", "score", "passed", "prompt_version")
    item_ids, metrics, scores, passed, versions = zip(*rows, strict=True) if rows else ((),) * 5
    pairs.record(item_ids, metrics, scores, passed)
    # The prompt versions from the same rows: a DISTINCT query would read them all a second time.
    run_of = {item.id: run_id for run_id, by_external_id in items.items() for item in by_external_id.values()}
    prompts = _joined_versions(set(zip(map(run_of.__getitem__, item_ids), metrics, versions, strict=True)))
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


def runs_for_comparison(base: Run | int, candidate: Run | int) -> tuple[Run, Run]:
    """Both runs (one query, with dataset and judge); ComparisonError naming the unknown one or the two datasets."""
    ids = {"base": _pk(base), "candidate": _pk(candidate)}
    runs = Run.objects.select_related("dataset_version__dataset", "judge_config").in_bulk(ids.values())
    for role, run_id in ids.items():
        if run_id not in runs:
            raise ComparisonError(f"{role}: no run with id {run_id}")
    base_run, candidate_run = runs[ids["base"]], runs[ids["candidate"]]
    base_dataset, candidate_dataset = base_run.dataset_version.dataset, candidate_run.dataset_version.dataset
    if base_dataset.pk != candidate_dataset.pk:
        raise ComparisonError(
            f"runs {base_run.pk} and {candidate_run.pk} are of different datasets "
            f"({base_dataset.name!r} and {candidate_dataset.name!r}): compare two runs of the same dataset"
        )
    return base_run, candidate_run


def run_ref(run: Run) -> RunRef:
    return RunRef(
        id=run.pk,
        name=str(run),
        status=run.status,
        dataset_id=run.dataset_version.dataset_id,
        dataset=run.dataset_version.dataset.name,
        dataset_version=run.dataset_version.number,
        judge_config_id=run.judge_config_id,
        judge=run.judge_config.name,
        items_total=run.items_total,
        created_at=run.created_at.isoformat(),
    )


def _compared_metrics(base_run: Run, candidate_run: Run) -> list[str]:
    names = execution_order([*base_run.metrics, *candidate_run.metrics])
    return names + ([OVERALL] if has_overall(names) else [])


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
                in_base=_ran(name, base_run),
                in_candidate=_ran(name, candidate_run),
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


def _ran(name: str, run: Run) -> bool:
    names = execution_order(run.metrics)
    return has_overall(names) if name == OVERALL else name in names


def _pk(run: Run | int) -> int:
    return run.pk if isinstance(run, Run) else int(run)


# --- Settings diff ---------------------------------------------------------------------------


def prompt_versions(run_ids: Iterable[int]) -> dict[int, dict[str, str]]:
    """Per run, per metric: its prompt versions, "; "-joined (more than one if it changed mid-run)."""
    rows = (
        MetricResult.objects.filter(item__run_id__in=list(run_ids))
        .exclude(prompt_version="")
        .values_list("item__run_id", "metric", "prompt_version")
        .distinct()
        .order_by()
    )
    return _joined_versions(rows)


def _joined_versions(rows: Iterable[tuple[int, str, str]]) -> dict[int, dict[str, str]]:
    versions: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for run_id, metric, version in rows:
        if version:
            versions[run_id][metric].add(version)
    return {
        run_id: {metric: "; ".join(sorted(found)) for metric, found in by_metric.items()}
        for run_id, by_metric in versions.items()
    }


def settings_diff(base: Run, candidate: Run, prompts: Mapping[int, Mapping[str, str]]) -> SettingsDiff:
    """Every setting of the two runs side by side; the judge, its prompts and the run settings flattened."""
    base_values, candidate_values = _setting_values(base, prompts), _setting_values(candidate, prompts)
    keys = list(dict.fromkeys([*base_values, *candidate_values]))
    rows = [
        SettingRow(
            key=key,
            base=base_values.get(key),
            candidate=candidate_values.get(key),
            differs=base_values.get(key) != candidate_values.get(key),
        )
        for key in keys
    ]
    changed = [row.key for row in rows if row.differs and (row.key in JUDGE_KEYS or row.key.startswith(PROMPT_PREFIX))]
    warning = (
        f"These runs used different judges or prompts ({', '.join(changed)}): a score change may come from the "
        "judge, not from the system under test."
        if changed
        else ""
    )
    return SettingsDiff(rows=rows, judges_or_prompts_differ=bool(changed), warning=warning)


def _setting_values(run: Run, prompts: Mapping[int, Mapping[str, str]]) -> dict[str, Any]:
    judge = run.judge_config
    values: dict[str, Any] = {
        "judge": judge.name,
        "provider": judge.provider,
        "model": judge.model,
        "temperature": judge.temperature,
        "dataset_version": run.dataset_version.number,
        "metrics": ", ".join(run.metrics),
    }
    values |= {f"{PROMPT_PREFIX}{metric}": version for metric, version in sorted(prompts.get(run.pk, {}).items())}
    values |= _flatten(run.settings)
    return values


def _flatten(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, Mapping):
            flat |= _flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


# --- One example side by side ----------------------------------------------------------------


def compare_item(base: Run | int, candidate: Run | int, external_id: str) -> ItemDiff:
    """Both runs' answer, claims and scores for one example; ComparisonError when neither run has it."""
    base_run, candidate_run = runs_for_comparison(base, candidate)
    run_ids = [base_run.pk, candidate_run.pk]
    items = {
        item.run_id: item
        for item in RunItem.objects.filter(run_id__in=run_ids, example__external_id=external_id).select_related(
            "example"
        )
    }
    if not items:
        raise ComparisonError(f"example: {external_id!r} is in neither run {base_run.pk} nor run {candidate_run.pk}")
    item_ids = [item.pk for item in items.values()]
    results: dict[int, dict[str, MetricResult]] = defaultdict(dict)
    for result in MetricResult.objects.filter(item_id__in=item_ids):
        results[result.item_id][result.metric] = result
    claims: dict[int, list[Claim]] = defaultdict(list)
    for claim in Claim.objects.filter(item_id__in=item_ids).order_by("item_id", "position"):
        claims[claim.item_id].append(claim)

    texts = {run_id: {claim.text for claim in claims[item.pk]} for run_id, item in items.items()}
    other = {base_run.pk: texts.get(candidate_run.pk, set()), candidate_run.pk: texts.get(base_run.pk, set())}
    sides = {
        run_id: _item_side(item, results[item.pk], claims[item.pk], other[run_id]) for run_id, item in items.items()
    }
    return ItemDiff(
        external_id=external_id,
        base_run=run_ref(base_run),
        candidate_run=run_ref(candidate_run),
        base=sides.get(base_run.pk),
        candidate=sides.get(candidate_run.pk),
        scores=_score_changes(
            _compared_metrics(base_run, candidate_run), sides.get(base_run.pk), sides.get(candidate_run.pk)
        ),
        settings=settings_diff(base_run, candidate_run, prompt_versions(run_ids)),
    )


def _item_side(
    item: RunItem, results: Mapping[str, MetricResult], claims: list[Claim], other_texts: set[str]
) -> ItemSide:
    example = item.example
    return ItemSide(
        item_id=item.pk,
        run_id=item.run_id,
        status=item.status,
        error=item.error,
        query=example.query,
        response=example.response,
        contexts=example.contexts,
        reference_answer=example.reference_answer,
        overall_score=item.overall_score,
        results={
            metric: {
                "score": result.score,
                "passed": result.passed,
                "feedback": result.feedback,
                "prompt_version": result.prompt_version,
                "skipped_reason": result.skipped_reason,
            }
            for metric, result in results.items()
        },
        claims=[
            ClaimRow(
                position=claim.position,
                text=claim.text,
                judge_verdict=claim.judge_verdict,
                current_verdict=claim.current_verdict,
                overridden=claim.current_verdict != claim.judge_verdict,
                evidence=claim.evidence,
                context_ids=list(claim.context_ids),
                in_other_run=claim.text in other_texts,
            )
            for claim in claims
        ],
    )


def _score_changes(names: list[str], base: ItemSide | None, candidate: ItemSide | None) -> list[ScoreChange]:
    def value(side: ItemSide | None, name: str, field: str) -> Any:
        if side is None or side.status != ItemStatus.DONE:
            return None
        if name == OVERALL:
            return side.overall_score if field == "score" else None
        return side.results.get(name, {}).get(field)

    changes = []
    for name in names:
        base_score, candidate_score = value(base, name, "score"), value(candidate, name, "score")
        changes.append(
            ScoreChange(
                metric=name,
                base_score=base_score,
                candidate_score=candidate_score,
                delta=None if base_score is None or candidate_score is None else candidate_score - base_score,
                base_passed=value(base, name, "passed"),
                candidate_passed=value(candidate, name, "passed"),
            )
        )
    return changes
