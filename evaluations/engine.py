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
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from datasets.models import Example
from evalsite.db import insert_rows
from evaluations.aggregates import combine_samples, mean_overall
from evaluations.metrics import REGISTRY, evaluate_item
from evaluations.metrics.base import ItemInput, MetricContext, MetricOutcome
from evaluations.models import Claim, ItemStatus, MetricResult, Run, RunItem, RunStatus
from judges import gateway
from judges.models import JudgeConfig
from judges.types import Context, JudgeCancelled, JudgeError, JudgeResult

logger = logging.getLogger(__name__)

# How stale the "is the run being cancelled?" answer may be: one status query per run per
# process every this many seconds, shared by all threads, instead of one per judge call.
STOP_CHECK_SECONDS = 0.5
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


class LeaseLost(JudgeCancelled):
    """The item's lease expired and the reaper (or another execution) took it over: stop its judge calls.

    A JudgeCancelled, so it leaves the gateway and the rate limiter as a cancel does.
    """


# --- Is the run being cancelled? -----------------------------------------------------------

_stop_cache: dict[int, tuple[float, bool]] = {}
_stop_lock = threading.Lock()


def run_should_stop(run_id: int) -> bool:
    """True once the run is no longer running (cancelling, cancelled, deleted); cached for STOP_CHECK_SECONDS."""
    with _stop_lock:
        checked = _stop_cache.get(run_id)
        now = time.monotonic()
        if checked is not None and now - checked[0] < STOP_CHECK_SECONDS:
            return checked[1]
        status = Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
        stop = status != RunStatus.RUNNING
        if len(_stop_cache) > _CACHE_PRUNE_SIZE:
            _stop_cache.clear()
        _stop_cache[run_id] = (now, stop)
        return stop


def _note_running(run_id: int) -> None:
    """A claim just saw the run running: don't let an older cached 'stop' cancel this item."""
    with _stop_lock:
        _stop_cache[run_id] = (time.monotonic(), False)


# --- Judge binding ---------------------------------------------------------------------------


@dataclass
class JudgeUsage:
    calls: int = 0  # sent to the provider
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)

    def add(self, result: JudgeResult) -> None:
        if result.cached:
            self.cache_hits += 1
            return
        self.calls += 1
        self.input_tokens += result.input_tokens
        self.output_tokens += result.output_tokens
        self.cost += Decimal(str(result.cost))


class ItemJudge:
    """`MetricContext.judge` for one claimed item: gateway call + accounting + lease renewal.

    Thread-safe: a metric may verify claims concurrently.
    """

    def __init__(self, *, item_id: int, attempt: int, run_id: int, config: JudgeConfig, lease_seconds: float) -> None:
        self.item_id = item_id
        self.attempt = attempt
        self.run_id = run_id
        self.config = config
        self.lease_seconds = lease_seconds
        self.usage = JudgeUsage()
        self.cancelled = False
        self._lock = threading.Lock()
        self._renew_at = time.monotonic() + lease_seconds / 3

    def bound(self, sample: int):  # -> JudgeFn
        def judge(prompt_name: str, fields: dict[str, Any]) -> JudgeResult:
            self._renew_lease_if_due()
            try:
                result = gateway.judge(
                    self.config,
                    prompt_name,
                    fields,
                    sample=sample,
                    run_id=self.run_id,
                    should_stop=self.should_stop,
                )
            except JudgeCancelled:
                self.cancelled = True
                raise
            with self._lock:
                self.usage.add(result)
            return result

        return judge

    def should_stop(self) -> bool:
        """Asked by the gateway before each attempt and while it waits (rate limits, backoff): the lease is
        renewed here too, so an item waiting minutes for a slot is not taken for dead."""
        self._renew_lease_if_due()
        return run_should_stop(self.run_id)

    def _renew_lease_if_due(self) -> None:
        with self._lock:
            if time.monotonic() < self._renew_at:
                return
            self._renew_at = time.monotonic() + self.lease_seconds / 3
            renewed = RunItem.objects.filter(pk=self.item_id, status=ItemStatus.RUNNING, attempts=self.attempt).update(
                lease_expires_at=timezone.now() + timedelta(seconds=self.lease_seconds)
            )
        if not renewed:
            raise LeaseLost(f"item {self.item_id}: lease of attempt {self.attempt} taken over")


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


_run_contexts: dict[int, RunContext] = {}
_run_contexts_lock = threading.Lock()


def run_context(run_id: int) -> RunContext:
    """What every item of a run needs (metrics, settings, judge config): one query per run per process
    every RUN_CONTEXT_SECONDS rather than a three-table join per item."""
    with _run_contexts_lock:
        context = _run_contexts.get(run_id)
        if context is None or time.monotonic() - context.loaded_at > RUN_CONTEXT_SECONDS:
            run = Run.objects.select_related("judge_config").only("metrics", "settings", "judge_config").get(pk=run_id)
            context = RunContext(run.metrics, run.settings, run.judge_config, time.monotonic())
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
    _note_running(claimed.run_id)
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
        outcomes, overall = evaluate_run_item(claimed.example, context.metrics, context.settings, judge)
    except LeaseLost:
        logger.warning("item %s: lease lost, leaving it to its new owner", claimed.item_id)
        _bump_run(claimed.run_id, judge.usage)
        return ItemOutcome.LOST
    except Exception as exc:
        if judge.cancelled:
            return _release(claimed, judge)
        if not isinstance(exc, JudgeError):
            logger.exception("item %s: unexpected error", claimed.item_id)
        return _fail(claimed, judge, _error_message(exc), started)
    if judge.cancelled:  # a metric swallowed the cancel: its outcome is not a score
        return _release(claimed, judge)
    return _complete(claimed, judge, outcomes, overall, started)


def evaluate_run_item(
    example: Example, metrics: list[str], run_settings: dict[str, Any], judge: ItemJudge
) -> tuple[dict[str, MetricOutcome], float | None]:
    """All metrics of one item, `repeats` times for the judge metrics (sample i bypasses the cache of sample j)."""
    item_input = item_input_from_example(example)
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


# The statements below run for every item. They are plain SQL (PostgreSQL and SQLite ≥ 3.35
# alike) because the ORM's query compilation cost 1–3 ms of CPU each, against ~0.3 ms raw: at
# hundreds of items a second that was a third of a worker's CPU (bench/throughput.py).
_ITEMS = RunItem._meta.db_table
_RUNS = Run._meta.db_table

_EXAMPLES = Example._meta.db_table
# What item_input_from_example reads of an example: the claim returns these columns.
_EXAMPLE_FIELDS = [
    Example._meta.get_field(name)
    for name in ("query", "response", "contexts", "reference_answer", "expected_context_ids", "retrieved_ids")
]
_EXAMPLE_COLUMNS = ", ".join(
    f"(SELECT {field.column} FROM {_EXAMPLES} WHERE {_EXAMPLES}.id = {_ITEMS}.example_id)" for field in _EXAMPLE_FIELDS
)
_CLAIM_SQL = f"""
    UPDATE {_ITEMS} SET status = %s, attempts = attempts + 1, lease_expires_at = %s, started_at = %s, error = ''
    WHERE id = %s AND status = %s
      AND EXISTS (SELECT 1 FROM {_RUNS} WHERE {_RUNS}.id = {_ITEMS}.run_id AND {_RUNS}.status = %s)
    RETURNING run_id, attempts, {_EXAMPLE_COLUMNS}
"""


def _claim(item_id: int, lease_seconds: float) -> ClaimedItem | None:
    """pending → running with a lease, only while the run is running; None if this execution did not get it.

    The same statement returns the example's fields the metrics read (scalar subqueries: SQLite's
    RETURNING cannot name an UPDATE ... FROM table), saving a query and an ORM fetch per item.
    The status condition is on the updated row itself, so PostgreSQL re-checks it after waiting
    for a concurrent claim's row lock: of two deliveries exactly one wins.
    """
    now = timezone.now()
    lease_until = now + timedelta(seconds=lease_seconds)
    params = [
        ItemStatus.RUNNING,
        _sql_value(lease_until),
        _sql_value(now),
        item_id,
        ItemStatus.PENDING,
        RunStatus.RUNNING,
    ]
    with connection.cursor() as cursor:
        cursor.execute(_CLAIM_SQL, params)
        row = cursor.fetchone()
    if row is None:
        return None
    run_id, attempt, *values = row
    example = Example(
        **{field.attname: _from_db(field, value) for field, value in zip(_EXAMPLE_FIELDS, values, strict=True)}
    )
    return ClaimedItem(item_id, run_id, attempt, example)


def _from_db(field: Any, value: Any) -> Any:
    """A raw column value as the model field holds it (JSON columns arrive as text on SQLite)."""
    convert = getattr(field, "from_db_value", None)
    return convert(value, None, connection) if convert is not None else value


def _finish_item(claimed: ClaimedItem, **values: Any) -> bool:
    """Write the item's final columns if this execution still owns it (running, same attempt)."""
    columns = ", ".join(f"{connection.ops.quote_name(name)} = %s" for name in values)
    sql = f"UPDATE {_ITEMS} SET {columns} WHERE id = %s AND status = %s AND attempts = %s"
    with connection.cursor() as cursor:
        params = [_sql_value(value) for value in values.values()]
        cursor.execute(sql, [*params, claimed.item_id, ItemStatus.RUNNING, claimed.attempt])
        return cursor.rowcount == 1


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
    with transaction.atomic():
        written = _finish_item(
            claimed,
            status=ItemStatus.DONE,
            overall_score=overall,
            finished_at=timezone.now(),
            duration_ms=_elapsed_ms(started),
            lease_expires_at=None,
            error="",
        )
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


_COUNTERS = ("items_done", "items_failed", "judge_calls", "cache_hits", "input_tokens", "output_tokens", "cost")
_BUMP_SQL = f"UPDATE {_RUNS} SET " + ", ".join(f"{name} = {name} + %s" for name in _COUNTERS) + " WHERE id = %s"


def _bump_run(run_id: int, usage: JudgeUsage, *, done: int = 0, failed: int = 0) -> None:
    amounts = [done, failed, usage.calls, usage.cache_hits, usage.input_tokens, usage.output_tokens, usage.cost]
    if any(amounts):
        with connection.cursor() as cursor:
            cursor.execute(_BUMP_SQL, [*map(_sql_value, amounts), run_id])


def items_mark_enqueued(run_id: int, count: int) -> list[int]:
    """Mark the run's next `count` unqueued pending items as queued (only while it is running); their ids.

    SKIP LOCKED (PostgreSQL): concurrent feeders of one run take different items. SQLite runs
    one write transaction at a time, so the plain UPDATE is enough there.
    """
    skip_locked = " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    sql = f"""
        UPDATE {_ITEMS} SET enqueued_at = %s WHERE id IN (
            SELECT id FROM {_ITEMS}
            WHERE run_id = %s AND status = %s AND enqueued_at IS NULL
              AND EXISTS (SELECT 1 FROM {_RUNS} WHERE id = %s AND status = %s)
            ORDER BY id LIMIT %s{skip_locked}
        ) RETURNING id
    """
    params = [_sql_value(timezone.now()), run_id, ItemStatus.PENDING, run_id, RunStatus.RUNNING, count]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return sorted(row[0] for row in cursor.fetchall())


def _sql_value(value: Any) -> Any:
    """Datetimes and decimals as the backend stores them (SQLite: UTC text without offset)."""
    if isinstance(value, datetime):
        return connection.ops.adapt_datetimefield_value(value)
    if isinstance(value, Decimal):
        return connection.ops.adapt_decimalfield_value(value)
    return value


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
    if not isinstance(exc, JudgeError):
        message = f"internal error: {type(exc).__name__}: {message}"
    return message[:_MAX_ERROR_LENGTH]


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
