"""`compare_item`: one example side by side in two runs (see the package docstring)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaluations.aggregates import OVERALL
from evaluations.comparison.common import (
    RunRef,
    SettingsDiff,
    UnknownExample,
    compared_metrics,
    prompt_versions,
    run_ref,
    runs_for_comparison,
    settings_diff,
)
from evaluations.models import Claim, ItemStatus, MetricResult, Run, RunItem
from targets.models import SnapshotStatus, TargetSnapshot
from targets.selectors import snapshots_for_items


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
    answered_by: str = "dataset"  # or "target <name>": the run called a live target for its answers
    target_latency_ms: int | None = None


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
        raise UnknownExample(f"example: {external_id!r} is in neither run {base_run.pk} nor run {candidate_run.pk}")
    item_ids = [item.pk for item in items.values()]
    results: dict[int, dict[str, MetricResult]] = defaultdict(dict)
    for result in MetricResult.objects.filter(item_id__in=item_ids):
        results[result.item_id][result.metric] = result
    claims: dict[int, list[Claim]] = defaultdict(list)
    for claim in Claim.objects.filter(item_id__in=item_ids).order_by("item_id", "position"):
        claims[claim.item_id].append(claim)

    with_target = bool(base_run.target_config or candidate_run.target_config)
    snapshots = snapshots_for_items(item_ids) if with_target else {}  # one more query only when a target answered
    texts = {run_id: {claim.text for claim in claims[item.pk]} for run_id, item in items.items()}
    other = {base_run.pk: texts.get(candidate_run.pk, set()), candidate_run.pk: texts.get(base_run.pk, set())}
    runs = {base_run.pk: base_run, candidate_run.pk: candidate_run}
    sides = {
        run_id: _item_side(
            item, results[item.pk], claims[item.pk], other[run_id], runs[run_id].target_config, snapshots.get(item.pk)
        )
        for run_id, item in items.items()
    }
    return ItemDiff(
        external_id=external_id,
        base_run=run_ref(base_run),
        candidate_run=run_ref(candidate_run),
        base=sides.get(base_run.pk),
        candidate=sides.get(candidate_run.pk),
        scores=_score_changes(
            compared_metrics(base_run, candidate_run), sides.get(base_run.pk), sides.get(candidate_run.pk)
        ),
        settings=settings_diff(base_run, candidate_run, prompt_versions(run_ids)),
    )


def _item_side(
    item: RunItem,
    results: Mapping[str, MetricResult],
    claims: list[Claim],
    other_texts: set[str],
    target_config: Mapping[str, Any],
    snapshot: TargetSnapshot | None,
) -> ItemSide:
    """One run's side; a run with a live target shows what the target answered (its snapshot), not the dataset."""
    example = item.example
    response, contexts = example.response, example.contexts
    if target_config:
        answered = snapshot is not None and snapshot.status == SnapshotStatus.OK
        response, contexts = (snapshot.answer, snapshot.contexts) if answered else ("", [])
    return ItemSide(
        answered_by=f"target {target_config['name']}" if target_config else "dataset",
        target_latency_ms=snapshot.latency_ms if snapshot is not None else None,
        item_id=item.pk,
        run_id=item.run_id,
        status=item.status,
        error=item.error,
        query=example.query,
        response=response,
        contexts=contexts,
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
