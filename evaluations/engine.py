"""The item pipeline: claim one RunItem, run its metrics through the judge gateway, write everything once.

The same function serves the Celery item task and the in-process executor (`evaluate
--in-process`, the benchmark), so both share concurrency, rate limits and guarantees:

1. Claim: a conditional UPDATE pending → running (only while the run is running) that takes
   a lease and bumps `attempts`; the bumped value is this execution's token.
2. Evaluate: `evaluate_item` once per sample (`repeats`), with the judge bound to the run's
   judge config, run id, sample index and a cached "is the run being cancelled?" check.
   Judge calls renew the lease while the item runs long (rate limits, retries).
3. Write: in one transaction, an UPDATE running → done/error guarded by the token (a
   duplicate or stale execution updates 0 rows and writes nothing), the MetricResults and
   Claims in bulk, and the run's counters bumped in place (`calls = calls + n`).

A cancel (the gateway raises JudgeCancelled) puts the item back to pending, unscored, so a
resume continues it. A judge failure is an item error with its message, never a score.

A run with a live target takes the item's snapshot between 1 and 2 (targets.services.snapshot_take):
the stored one when a previous delivery already took it, else one call of the target within its own
limits. The metrics then read the snapshot's answer, contexts and retrieved ids; the dataset's
reference answer and expected context ids still drive correctness and retrieval. A failed call
is stored too and makes the item an error with the target's message.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from datasets.models import Example
from evalsite.db import insert_rows
from evaluations import leases, sql
from evaluations.aggregates import combine_samples, mean_overall
from evaluations.item_judge import ItemJudge, JudgeUsage, LeaseLost, note_running
from evaluations.metrics import REGISTRY, evaluate_item, first_prompts
from evaluations.metrics.base import ItemInput, MetricContext, MetricOutcome
from evaluations.models import Claim, ItemStatus, MetricResult, Run
from judges import gateway
from judges.models import JudgeConfig
from judges.types import Context, JudgeCancelled, JudgeError
from targets import services as target_services
from targets.client import TargetConfig, TargetError
from targets.models import SnapshotStatus, TargetSnapshot

logger = logging.getLogger(__name__)

# How long a process reuses a run's metrics, settings and judge config before reloading them.
RUN_CONTEXT_SECONDS = 5.0
_MAX_ERROR_LENGTH = 2000
# Per-process caches keyed by run id are pruned of stale entries past this size (long-lived workers).
_CACHE_PRUNE_SIZE = 1000


class ItemOutcome(enum.StrEnum):
    SKIPPED = "skipped"  # not claimed: already taken or finished, run not running, or row gone
    DONE = "done"
    ERROR = "error"
    RELEASED = "released"  # interrupted by a cancel: back to pending, unscored
    LOST = "lost"  # the lease was taken over (worker presumed dead): another execution owns it


@dataclass(frozen=True)
class ItemExecution:
    outcome: ItemOutcome
    run_id: int | None = None


# --- The pipeline ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimedItem:
    item_id: int
    run_id: int
    attempt: int  # this execution's token: the final write only succeeds while it still matches
    example: Example  # the item's example, loaded by the claim itself


@dataclass(frozen=True)
class RunContext:
    metrics: list[str]
    settings: dict[str, Any]
    judge_config: JudgeConfig
    loaded_at: float
    target: TargetConfig | None = None  # the run's snapshot of its live target's configuration


_run_contexts: dict[int, RunContext] = {}
_run_contexts_lock = threading.Lock()


def run_context(run_id: int) -> RunContext:
    """What every item of a run needs (metrics, settings, judge config): one query per run per process
    every RUN_CONTEXT_SECONDS rather than a three-table join per item."""
    with _run_contexts_lock:
        context = _run_contexts.get(run_id)
        if context is None or time.monotonic() - context.loaded_at > RUN_CONTEXT_SECONDS:
            run = (
                Run.objects.select_related("judge_config")
                .only("metrics", "settings", "judge_config", "target_config")
                .get(pk=run_id)
            )
            target = TargetConfig.from_dict(run.target_config) if run.target_config else None
            context = RunContext(run.metrics, run.settings, run.judge_config, time.monotonic(), target)
            if len(_run_contexts) > _CACHE_PRUNE_SIZE:
                _run_contexts.clear()
            _run_contexts[run_id] = context
        return context


def item_execute(item_id: int) -> ItemExecution:
    """Claim, evaluate and store one item; safe to call twice (the second call does nothing)."""
    lease_seconds = settings.EVALSITE_ITEM_LEASE_SECONDS
    claimed = _claim(item_id, lease_seconds)
    if claimed is None:
        return ItemExecution(ItemOutcome.SKIPPED)
    note_running(claimed.run_id)
    leases.keeper.hold([item_id])
    try:
        return _execute_claimed(claimed, lease_seconds)
    finally:
        leases.keeper.let_go(item_id)


def _execute_claimed(claimed: ClaimedItem, lease_seconds: float) -> ItemExecution:
    item_id = claimed.item_id
    context = run_context(claimed.run_id)
    judge = ItemJudge(
        item_id=item_id,
        attempt=claimed.attempt,
        run_id=claimed.run_id,
        config=context.judge_config,
        lease_seconds=lease_seconds,
    )
    return ItemExecution(_evaluate_and_store(claimed, context, judge), claimed.run_id)


def _evaluate_and_store(claimed: ClaimedItem, context: RunContext, judge: ItemJudge) -> ItemOutcome:
    started = time.monotonic()
    try:
        item_input = _item_input(claimed, context, judge)
        outcomes, overall = evaluate_run_item(item_input, context.metrics, context.settings, judge)
    except LeaseLost:
        logger.warning("item %s: lease lost, leaving it to its new owner", claimed.item_id)
        _bump_run(claimed.run_id, judge.usage)
        return ItemOutcome.LOST
    except Exception as exc:
        if judge.cancelled:
            return _release(claimed, judge)
        if not isinstance(exc, JudgeError | TargetError):
            logger.exception("item %s: unexpected error", claimed.item_id)
        return _fail(claimed, judge, _error_message(exc), started)
    if judge.cancelled:  # a metric swallowed the cancel: its outcome is not a score
        return _release(claimed, judge)
    return _complete(claimed, judge, outcomes, overall, started)


def _item_input(claimed: ClaimedItem, context: RunContext, judge: ItemJudge) -> ItemInput:
    """The example as the metrics see it; for a run with a live target, its answer, contexts and retrieved
    ids come from the item's snapshot (taken now unless a previous delivery already took it)."""
    if context.target is None:
        return item_input_from_example(claimed.example)
    try:
        snapshot = target_services.snapshot_take(
            item_id=claimed.item_id, example=claimed.example, config=context.target, should_stop=judge.should_stop
        )
    except LeaseLost:
        raise
    except JudgeCancelled:  # the run is being cancelled while the call waited for a slot or backed off
        judge.cancelled = True
        raise
    if snapshot.status == SnapshotStatus.ERROR:
        raise TargetError(snapshot.error)
    return item_input_from_snapshot(claimed.example, snapshot)


def evaluate_run_item(
    item_input: ItemInput, metrics: list[str], run_settings: dict[str, Any], judge: ItemJudge
) -> tuple[dict[str, MetricOutcome], float | None]:
    """All metrics of one item, `repeats` times for the judge metrics (sample i bypasses the cache of sample j)."""
    with gateway.cache_prefetched(judge.config, first_prompts(item_input, metrics, run_settings)):
        first = evaluate_item(item_input, metrics, MetricContext(judge=judge.bound(0), settings=run_settings))
    repeats = int(run_settings.get("repeats", 1))
    judged = [name for name in metrics if REGISTRY[name].uses_judge]
    if repeats <= 1 or not judged:
        return dict(first.outcomes), first.overall
    samples = [first]
    for sample in range(1, repeats):
        context = MetricContext(judge=judge.bound(sample), settings=run_settings)
        samples.append(evaluate_item(item_input, metrics, context))
    outcomes = combine_samples([dict(sample.outcomes) for sample in samples], judged)
    return outcomes, mean_overall([sample.overall for sample in samples])


def item_input_from_example(example: Example) -> ItemInput:
    contexts = tuple(Context(id=str(context["id"]), text=str(context.get("text", ""))) for context in example.contexts)
    retrieved = tuple(str(value) for value in example.retrieved_ids) if example.retrieved_ids is not None else None
    return ItemInput(
        query=example.query,
        response=example.response,
        contexts=contexts,
        reference_answer=example.reference_answer,
        expected_context_ids=tuple(str(value) for value in example.expected_context_ids),
        retrieved_ids=retrieved,
    )


def item_input_from_snapshot(example: Example, snapshot: TargetSnapshot) -> ItemInput:
    """The target's answer, contexts and retrieved ids; the dataset's query, reference and expected ids."""
    contexts = tuple(Context(id=str(context["id"]), text=str(context.get("text", ""))) for context in snapshot.contexts)
    return replace(
        item_input_from_example(example),
        response=snapshot.answer,
        contexts=contexts,
        retrieved_ids=tuple(str(value) for value in snapshot.retrieved_ids),
    )


def _claim(item_id: int, lease_seconds: float) -> ClaimedItem | None:
    """pending → running with a lease, only while the run is running; None if this execution did not get it.

    One statement (evaluations/sql.py) that also returns the example's fields the metrics read.
    """
    now = timezone.now()
    claimed = sql.item_claim(item_id, now=now, lease_until=now + timedelta(seconds=lease_seconds))
    if claimed is None:
        return None
    run_id, attempt, example = claimed
    return ClaimedItem(item_id, run_id, attempt, example)


def _finish_item(claimed: ClaimedItem, **values: Any) -> bool:
    """Write the item's final columns if this execution still owns it (running, same attempt)."""
    return sql.item_finish(claimed.item_id, claimed.attempt, values)


def _complete(
    claimed: ClaimedItem, judge: ItemJudge, outcomes: dict[str, MetricOutcome], overall: float | None, started: float
) -> ItemOutcome:
    results = [_metric_result(claimed.item_id, outcome) for outcome in outcomes.values()]
    claims = [
        Claim(
            item_id=claimed.item_id,
            position=claim.position,
            text=claim.text,
            judge_verdict=claim.verdict,
            current_verdict=claim.verdict,
            evidence=claim.evidence,
            context_ids=list(claim.context_ids),
        )
        for outcome in outcomes.values()
        for claim in outcome.claims
    ]
    values = {
        "status": ItemStatus.DONE,
        "overall_score": overall,
        "finished_at": timezone.now(),
        "duration_ms": _elapsed_ms(started),
        "lease_expires_at": None,
        "error": "",
    }
    if connection.vendor == "postgresql":  # one statement instead of a transaction of four
        written = sql.item_complete_in_one_statement(
            claimed.item_id, claimed.attempt, values, [results, claims], claimed.run_id, _usage_amounts(judge.usage)
        )
        return ItemOutcome.DONE if written else ItemOutcome.LOST
    with transaction.atomic():
        written = _finish_item(claimed, **values)
        if written:  # else a duplicate or stale execution: it writes nothing
            insert_rows(results)
            insert_rows(claims)
        _bump_run(claimed.run_id, judge.usage, done=int(written))
    return ItemOutcome.DONE if written else ItemOutcome.LOST


def _fail(claimed: ClaimedItem, judge: ItemJudge, message: str, started: float) -> ItemOutcome:
    with transaction.atomic():
        written = _finish_item(
            claimed,
            status=ItemStatus.ERROR,
            error=message,
            overall_score=None,
            finished_at=timezone.now(),
            duration_ms=_elapsed_ms(started),
            lease_expires_at=None,
        )
        _bump_run(claimed.run_id, judge.usage, failed=int(written))
    return ItemOutcome.ERROR if written else ItemOutcome.LOST


def _release(claimed: ClaimedItem, judge: ItemJudge) -> ItemOutcome:
    with transaction.atomic():
        released = _finish_item(claimed, status=ItemStatus.PENDING, lease_expires_at=None, enqueued_at=None)
        _bump_run(claimed.run_id, judge.usage)
    return ItemOutcome.RELEASED if released else ItemOutcome.LOST


def _bump_run(run_id: int, usage: JudgeUsage, *, done: int = 0, failed: int = 0) -> None:
    amounts = {"items_done": done, "items_failed": failed, **_usage_amounts(usage)}
    if any(amounts.values()):
        sql.run_counters_add(run_id, amounts)


def _usage_amounts(usage: JudgeUsage) -> dict[str, Any]:
    return {
        "judge_calls": usage.calls,
        "cache_hits": usage.cache_hits,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost": usage.cost,
    }


def _metric_result(item_id: int, outcome: MetricOutcome) -> MetricResult:
    return MetricResult(
        item_id=item_id,
        metric=outcome.metric,
        score=outcome.score,
        passed=outcome.passed,
        threshold=outcome.threshold,
        feedback=outcome.feedback,
        details=outcome.details,
        raw_value=outcome.raw_value,
        prompt_version=outcome.prompt_version[:64],
        skipped_reason=outcome.skipped_reason[:255],
    )


def _error_message(exc: Exception) -> str:
    message = str(exc).strip() or type(exc).__name__
    if not isinstance(exc, JudgeError | TargetError):
        message = f"internal error: {type(exc).__name__}: {message}"
    return message[:_MAX_ERROR_LENGTH]


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
