"""Writes for evaluations: a run's life (create, start, feed, finish, cancel, resume, re-run failed),
the reaper that recovers from dead workers and lost messages, the in-process executor, and
reviewers' verdict overrides.

How a run moves through the workers:

- `run_create` stores the run (queued) and, after commit, enqueues `run_start`.
- `run_start` (task) marks it running, creates its RunItems and hands the broker its first
  window of item tasks: the judge's max concurrency × FEED_WINDOW_FACTOR tasks of
  ITEMS_PER_TASK items. A task executes its items one after another, then feeds the run as
  many new items as it finished (`item_process`), so a run never floods the queue: several runs
  share the workers instead of one waiting behind another's thousands of items, and a cancel
  leaves little queued.
- The last item finalises the run (`run_finalize_if_idle`: aggregates, status, finish time),
  exactly once thanks to a conditional UPDATE on the status.
- `runs_reap` (a thread in every worker, see tasks.py; or `manage.py reap_runs`) puts items
  whose lease expired back to pending, re-sends item tasks lost on the way, restarts runs whose
  start task was lost, tops up windows and finalises runs whose last finisher died.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from itertools import islice
from typing import Any

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F
from django.utils import timezone

from datasets.models import DatasetVersion, Example
from evaluations.aggregates import run_aggregates
from evaluations.engine import ItemOutcome, item_execute, items_mark_enqueued
from evaluations.metrics import METRIC_NAMES, execution_order, overall_score
from evaluations.metrics.base import MetricOutcome
from evaluations.metrics.faithfulness import faithfulness_details, faithfulness_score
from evaluations.metrics.settings import resolve_settings
from evaluations.models import (
    FINISHED_STATUSES,
    Claim,
    ItemStatus,
    MetricResult,
    Run,
    RunItem,
    RunStatus,
    Verdict,
    VerdictOverride,
)
from evaluations.selectors import (
    run_active_statuses,
    run_in_flight,
    run_item_counts,
    run_item_summaries,
    run_pending_item_ids,
)
from judges.models import JudgeConfig

logger = logging.getLogger(__name__)

# RunItems per INSERT when a run starts: 1,000 rows take about 15 ms on PostgreSQL (a 10,000-item
# run starts in well under a second); larger batches gain nothing and make statements bigger.
ITEM_BATCH_SIZE = 1000
# Item tasks a run keeps queued or executing at once, as a multiple of its judge's max
# concurrency. 2 keeps the judge saturated (an item spends part of its time outside judge calls,
# writing results) while the queue stays short. Each feed costs one small transaction
# (~1 ms) plus one message per task.
FEED_WINDOW_FACTOR = 2
FEED_WINDOW_MIN = 4
# Items a task carries. A Celery message costs the worker ~2 ms of CPU to publish and ~2 ms to
# receive and acknowledge (bench/throughput.py, Redis broker): as much as a cached item's own work.
# Several items a message divide that; more would leave threads idle at a run's end, when the
# last tasks still hold several items each.
ITEMS_PER_TASK = 4
# Threads (in-process) and window size for a judge without a concurrency limit (max_concurrency 0,
# e.g. the offline judge, whose work is CPU-bound anyway).
UNLIMITED_JUDGE_CONCURRENCY = 8
# An in-process executor beats its heartbeat this often; workers adopt its run once it is stale.
HEARTBEAT_SECONDS = 5
HEARTBEAT_STALE_SECONDS = 60
PROGRESS_SECONDS = 0.5
# Items the reaper looks at per pass (the rest wait for the next pass).
REAP_BATCH_SIZE = 1000
# What an execution that got somewhere ends in (it claimed the item and let it go again).
HANDLED_OUTCOMES = (ItemOutcome.DONE, ItemOutcome.ERROR, ItemOutcome.RELEASED)


# --- Creating and starting -----------------------------------------------------------------


def validate_metrics(metrics: Iterable[str] | str) -> list[str]:
    """The metric names, de-duplicated in order; ValueError naming `metrics` when one is unknown or none given."""
    if isinstance(metrics, str):
        metrics = [name.strip() for name in metrics.split(",")]
    names = list(dict.fromkeys(name for name in metrics if name))
    if not names:
        raise ValueError(f"metrics: give at least one of {', '.join(METRIC_NAMES)}")
    unknown = [name for name in names if name not in METRIC_NAMES]
    if unknown:
        raise ValueError(f"metrics: unknown metric {', '.join(unknown)} (known: {', '.join(METRIC_NAMES)})")
    return names


def run_create(
    *,
    dataset_version: DatasetVersion,
    judge_config: JudgeConfig,
    metrics: Iterable[str],
    settings: Mapping[str, Any] | None = None,
    name: str = "",
    user: Any = None,
    enqueue: bool = True,
) -> Run:
    """Store a queued run and (with `enqueue`) hand it to the workers once the transaction commits.

    Raises ValueError naming the bad parameter (`metrics`, or the settings key).
    """
    names = validate_metrics(metrics)
    resolved = resolve_settings(settings)
    run = Run.objects.create(
        name=name[:200],
        dataset_version=dataset_version,
        judge_config=judge_config,
        metrics=names,
        settings=resolved,
        items_total=dataset_version.item_count,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    if enqueue:
        _enqueue_start_on_commit(run.pk)
    return run


def run_start(*, run_id: int) -> None:
    """Queued → running, create the items (idempotent), feed the first window. Safe to repeat."""
    run = Run.objects.select_related("judge_config").filter(pk=run_id).first()
    if run is None:
        logger.info("run %s is gone; nothing to start", run_id)
        return
    now = timezone.now()
    if run.status == RunStatus.QUEUED:
        Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(status=RunStatus.RUNNING, started_at=now)
        run.refresh_from_db()
    if run.status != RunStatus.RUNNING:
        return
    if run.started_at is None:
        Run.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=now)
    _create_items(run)
    if not _heartbeat_is_fresh(run):
        run_feed(run_id=run_id, count=feed_window(run.judge_config) - run_in_flight(run_id))
    run_finalize_if_idle(run_id=run_id)


def _create_items(run: Run) -> None:
    expected = Example.objects.filter(version_id=run.dataset_version_id).count()
    if RunItem.objects.filter(run_id=run.pk).count() < expected:
        example_ids = Example.objects.filter(version_id=run.dataset_version_id).order_by("position")
        example_ids = iter(example_ids.values_list("id", flat=True))
        while batch := list(islice(example_ids, ITEM_BATCH_SIZE)):
            items = [RunItem(run_id=run.pk, example_id=example_id) for example_id in batch]
            RunItem.objects.bulk_create(items, ignore_conflicts=True)
    Run.objects.filter(pk=run.pk).update(items_total=expected)


def judge_concurrency(config: JudgeConfig) -> int:
    return config.max_concurrency or UNLIMITED_JUDGE_CONCURRENCY


def feed_window(config: JudgeConfig) -> int:
    """Items a run keeps queued or executing: enough tasks to keep every judge slot busy."""
    return max(FEED_WINDOW_MIN, judge_concurrency(config) * FEED_WINDOW_FACTOR) * ITEMS_PER_TASK


def run_feed(*, run_id: int, count: int) -> list[int]:
    """Hand up to `count` of the run's unqueued pending items to the broker (only while it is running)."""
    if count <= 0:
        return []
    # One statement, atomic by itself: no transaction of its own (BEGIN and COMMIT would be two more
    # round trips per task). Inside a caller's transaction the messages still wait for its commit.
    item_ids = items_mark_enqueued(run_id, count)
    if item_ids:
        transaction.on_commit(lambda: _enqueue_items(item_ids))
    return item_ids


def item_process(*, item_ids: list[int]) -> list[ItemOutcome]:
    """The item task: execute its items one after another, then feed their run as many new ones or finish it."""
    outcomes = []
    handled: Counter[int] = Counter()  # run id -> items this task claimed and let go
    for item_id in item_ids:
        execution = item_execute(item_id)
        outcomes.append(execution.outcome)
        if execution.outcome in HANDLED_OUTCOMES:
            assert execution.run_id is not None
            handled[execution.run_id] += 1
    for run_id, count in handled.items():
        if not run_feed(run_id=run_id, count=count):
            run_finalize_if_idle(run_id=run_id)
    return outcomes


# --- Finishing -------------------------------------------------------------------------------


def run_finalize_if_idle(*, run_id: int) -> bool:
    """Finish the run when nothing is left to do; True if this call finished it (only one call can)."""
    active = run_active_statuses(run_id)
    if ItemStatus.RUNNING in active:
        return False
    status = Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
    if status == RunStatus.CANCELLING:
        target = RunStatus.CANCELLED
    elif status == RunStatus.RUNNING and not active:
        target = None  # decided from the counts below
    else:
        return False
    counts = run_item_counts(run_id)
    error = ""
    if target is None:
        if counts[ItemStatus.ERROR] == 0:
            target = RunStatus.COMPLETED
        elif counts[ItemStatus.DONE] > 0:
            target = RunStatus.COMPLETED_WITH_ERRORS
        else:
            target = RunStatus.FAILED
            first = RunItem.objects.filter(run_id=run_id, status=ItemStatus.ERROR).order_by("id").first()
            error = f"all {counts[ItemStatus.ERROR]} items failed; the first: {first.error if first else ''}"
    now = timezone.now()
    run = Run.objects.get(pk=run_id)
    finished = Run.objects.filter(pk=run_id, status=status).update(
        status=target,
        finished_at=now,
        items_done=counts[ItemStatus.DONE],
        items_failed=counts[ItemStatus.ERROR],
        aggregates=build_aggregates(run, finished_at=now),
        error=error,
    )
    if finished:
        logger.info("run %s finished: %s (%s)", run_id, target, dict(counts))
    return bool(finished)


def build_aggregates(run: Run, *, finished_at: Any = None) -> dict[str, Any]:
    """Metric and tag stats from the stored results, plus the run's judge usage and wall time."""
    aggregates = run_aggregates(run_item_summaries(run.pk), execution_order(run.metrics))
    end = finished_at or run.finished_at or timezone.now()
    aggregates["judge"] = {
        "calls": run.judge_calls,
        "cache_hits": run.cache_hits,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cost": float(run.cost),
    }
    aggregates["wall_seconds"] = round((end - run.started_at).total_seconds(), 3) if run.started_at else None
    return aggregates


def run_aggregates_refresh(*, run: Run) -> None:
    """Recompute a finished run's aggregates (after an override); a running run gets them when it finishes."""
    run.refresh_from_db()
    if run.status in FINISHED_STATUSES:
        Run.objects.filter(pk=run.pk).update(aggregates=build_aggregates(run))


# --- Cancel, resume, re-run ------------------------------------------------------------------


def run_cancel(*, run: Run) -> Run:
    """Queued → cancelled; running → cancelling, then cancelled once the items in flight stop.

    Items interrupted by the cancel go back to pending (unscored) so that `run_resume` continues them.
    """
    if not Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
        status=RunStatus.CANCELLED, finished_at=timezone.now()
    ):
        if not Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(status=RunStatus.CANCELLING):
            run.refresh_from_db()
            raise ValueError(f"run {run.pk} is {run.status}: only a queued or running run can be cancelled")
        run_finalize_if_idle(run_id=run.pk)
    run.refresh_from_db()
    return run


@transaction.atomic
def run_resume(*, run: Run) -> Run:
    """A cancelled run carries on with its pending items (the finished ones keep their results)."""
    if not Run.objects.filter(pk=run.pk, status=RunStatus.CANCELLED).update(
        status=RunStatus.RUNNING, finished_at=None, error=""
    ):
        run.refresh_from_db()
        raise ValueError(f"run {run.pk} is {run.status}: only a cancelled run can be resumed")
    RunItem.objects.filter(run_id=run.pk, status=ItemStatus.PENDING).update(enqueued_at=None)
    _enqueue_start_on_commit(run.pk)
    run.refresh_from_db()
    return run


@transaction.atomic
def run_rerun_failed(*, run: Run) -> int:
    """Reset the run's errored items (and anything stored for them) to pending and run them again.

    Returns how many items were reset.
    """
    retryable = (RunStatus.COMPLETED_WITH_ERRORS, RunStatus.FAILED)
    if not Run.objects.filter(pk=run.pk, status__in=retryable).update(
        status=RunStatus.RUNNING, finished_at=None, error=""
    ):
        run.refresh_from_db()
        raise ValueError(f"run {run.pk} is {run.status}: only a run that finished with errors can re-run its failures")
    item_ids = list(RunItem.objects.filter(run_id=run.pk, status=ItemStatus.ERROR).values_list("id", flat=True))
    MetricResult.objects.filter(item_id__in=item_ids).delete()
    Claim.objects.filter(item_id__in=item_ids).delete()
    RunItem.objects.filter(pk__in=item_ids).update(
        status=ItemStatus.PENDING,
        error="",
        overall_score=None,
        lease_expires_at=None,
        enqueued_at=None,
        finished_at=None,
        duration_ms=None,
    )
    Run.objects.filter(pk=run.pk).update(items_failed=F("items_failed") - len(item_ids))
    _enqueue_start_on_commit(run.pk)
    run.refresh_from_db()
    return len(item_ids)


# --- Reaper ----------------------------------------------------------------------------------


@dataclass
class ReapReport:
    reclaimed: int = 0  # leases expired: back to pending
    abandoned: int = 0  # leases expired too often: errors
    requeued: int = 0  # queued too long (message lost): sent again
    fed: int = 0
    restarted: int = 0  # queued runs whose start task was sent again
    finalized: int = 0

    def __bool__(self) -> bool:
        return any(vars(self).values())


def runs_reap() -> ReapReport:
    """Recover from dead workers and lost messages; safe to run anywhere, any number of times at once."""
    report = ReapReport()
    now = timezone.now()
    report.reclaimed, report.abandoned = items_reclaim_expired()
    requeue_before = now - timedelta(seconds=settings.EVALSITE_REQUEUE_AFTER_SECONDS)
    report.requeued = RunItem.objects.filter(status=ItemStatus.PENDING, enqueued_at__lt=requeue_before).update(
        enqueued_at=None
    )
    stale_heartbeat = now - timedelta(seconds=HEARTBEAT_STALE_SECONDS)
    unattended = Run.objects.exclude(heartbeat_at__gte=stale_heartbeat)
    for run in unattended.filter(status__in=[RunStatus.RUNNING, RunStatus.CANCELLING]).select_related("judge_config"):
        if run_finalize_if_idle(run_id=run.pk):
            report.finalized += 1
        elif run.status == RunStatus.RUNNING:
            report.fed += len(run_feed(run_id=run.pk, count=feed_window(run.judge_config) - run_in_flight(run.pk)))
    for run_id in unattended.filter(status=RunStatus.QUEUED, created_at__lt=requeue_before).values_list(
        "pk", flat=True
    ):
        _enqueue_start_on_commit(run_id)
        report.restarted += 1
    if report:
        logger.info("reaper: %s", report)
    return report


def items_reclaim_expired(*, run_id: int | None = None) -> tuple[int, int]:
    """Running items whose lease expired (their worker died): back to pending, or errors after too many attempts."""
    now = timezone.now()
    max_attempts = settings.EVALSITE_MAX_ITEM_ATTEMPTS
    with transaction.atomic():
        expired = RunItem.objects.select_for_update(skip_locked=True).filter(
            status=ItemStatus.RUNNING, lease_expires_at__lt=now
        )
        if run_id is not None:
            expired = expired.filter(run_id=run_id)
        rows = list(expired.order_by("id").values_list("id", "run_id", "attempts")[:REAP_BATCH_SIZE])
        retry = [item_id for item_id, _, attempts in rows if attempts < max_attempts]
        abandon = [(item_id, item_run_id) for item_id, item_run_id, attempts in rows if attempts >= max_attempts]
        RunItem.objects.filter(pk__in=retry).update(status=ItemStatus.PENDING, lease_expires_at=None, enqueued_at=None)
        if abandon:
            RunItem.objects.filter(pk__in=[item_id for item_id, _ in abandon]).update(
                status=ItemStatus.ERROR,
                lease_expires_at=None,
                finished_at=now,
                error=f"abandoned after {max_attempts} attempts: the process executing it stopped each time",
            )
            for abandoned_run_id, n in Counter(item_run_id for _, item_run_id in abandon).items():
                Run.objects.filter(pk=abandoned_run_id).update(items_failed=F("items_failed") + n)
    if rows:
        logger.warning("reclaimed %s items with expired leases, abandoned %s", len(retry), len(abandon))
    return len(retry), len(abandon)


# --- In-process executor ---------------------------------------------------------------------


def run_execute_in_process(
    *, run: Run, workers: int | None = None, on_progress: Callable[[], None] | None = None
) -> Run:
    """Execute the run in this process with a pool of `workers` threads (default: the judge's max concurrency).

    The same engine as the workers, so the same limits and guarantees; a heartbeat keeps the
    workers' reaper away from the run while this process lives. Ctrl-C cancels the run.
    """
    workers = workers or judge_concurrency(run.judge_config)
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
    heartbeat = _Heartbeat(run.pk, on_progress)
    try:
        run_start(run_id=run.pk)
        while True:
            item_ids = run_pending_item_ids(run.pk) if _status(run.pk) == RunStatus.RUNNING else []
            if item_ids:
                outcomes = _run_pool(item_ids, workers, heartbeat)
                if outcomes.total() == outcomes[ItemOutcome.SKIPPED]:
                    break  # nothing could be claimed: the run stopped or others own the items
                continue
            if ItemStatus.RUNNING not in run_active_statuses(run.pk):
                break
            # Items still running elsewhere (a worker that adopted the run, or a dead thread's lease).
            items_reclaim_expired(run_id=run.pk)
            heartbeat.sleep(PROGRESS_SECONDS)
    except KeyboardInterrupt:
        _cancel_if_active(run.pk)
        raise
    finally:
        Run.objects.filter(pk=run.pk).update(heartbeat_at=None)
        run_finalize_if_idle(run_id=run.pk)
        heartbeat.tick(force=True)
    run.refresh_from_db()
    return run


class _Heartbeat:
    def __init__(self, run_id: int, on_progress: Callable[[], None] | None) -> None:
        self.run_id = run_id
        self.on_progress = on_progress
        self.beat_at = time.monotonic()

    def tick(self, *, force: bool = False) -> None:
        if time.monotonic() - self.beat_at >= HEARTBEAT_SECONDS:
            Run.objects.filter(pk=self.run_id).update(heartbeat_at=timezone.now())
            self.beat_at = time.monotonic()
        if self.on_progress is not None:
            self.on_progress()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)
        self.tick()


class ExecutorError(RuntimeError):
    """The in-process executor could not execute any item (not a judge failure: those are item errors)."""


def _run_pool(item_ids: list[int], workers: int, heartbeat: _Heartbeat) -> Counter[ItemOutcome]:
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for item_id in item_ids:
        todo.put(item_id)
    outcomes: Counter[ItemOutcome] = Counter()
    errors: list[Exception] = []
    lock = threading.Lock()

    def work() -> None:
        try:
            while True:
                try:
                    item_id = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    outcome = item_execute(item_id).outcome
                except Exception as exc:
                    logger.exception("item %s: executor error (the reaper will retry it)", item_id)
                    outcome = ItemOutcome.LOST
                    errors.append(exc)
                with lock:
                    outcomes[outcome] += 1
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=work, name=f"run-item-{i}", daemon=True) for i in range(min(workers, len(item_ids)))
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(PROGRESS_SECONDS)
                heartbeat.tick()
    except KeyboardInterrupt:
        # Cancel, then let the threads notice (they stop at their next judge call) before leaving.
        _cancel_if_active(heartbeat.run_id)
        for thread in threads:
            thread.join()
        raise
    if errors and not any(outcomes[outcome] for outcome in HANDLED_OUTCOMES):
        # Every item broke the executor itself (the database gone, say): stop instead of retrying forever.
        raise ExecutorError(f"no item could be executed; the first error: {errors[0]}") from errors[0]
    return outcomes


def _cancel_if_active(run_id: int) -> None:
    run = Run.objects.get(pk=run_id)
    if run.status in (RunStatus.QUEUED, RunStatus.RUNNING):
        run_cancel(run=run)


def _status(run_id: int) -> str | None:
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).first()


def _heartbeat_is_fresh(run: Run) -> bool:
    return run.heartbeat_at is not None and timezone.now() - run.heartbeat_at < timedelta(
        seconds=HEARTBEAT_STALE_SECONDS
    )


# --- Reviewer overrides ----------------------------------------------------------------------


@transaction.atomic
def claim_override(*, claim: Claim, reviewer: Any, new_verdict: str, reason: str = "") -> VerdictOverride:
    """Record a reviewer's verdict on a claim, then recompute the item's faithfulness and overall and the run's stats."""
    if new_verdict not in Verdict.values:
        raise ValueError(f"new_verdict: {new_verdict!r} is not one of {', '.join(Verdict.values)}")
    claim = Claim.objects.select_for_update().select_related("item__run").get(pk=claim.pk)
    override = VerdictOverride.objects.create(
        claim=claim,
        reviewer=reviewer if getattr(reviewer, "is_authenticated", False) else None,
        old_verdict=claim.current_verdict,
        new_verdict=new_verdict,
        reason=reason,
    )
    Claim.objects.filter(pk=claim.pk).update(current_verdict=new_verdict)
    item_recompute(claim.item)
    run_aggregates_refresh(run=claim.item.run)
    return override


def item_recompute(item: RunItem) -> None:
    """Faithfulness from the claims' current verdicts, then the item's overall (same functions as the metrics)."""
    run_settings = item.run.settings
    results = {result.metric: result for result in MetricResult.objects.filter(item=item)}
    faithfulness = results.get("faithfulness")
    if faithfulness is None:
        return
    verdicts = list(Claim.objects.filter(item=item).order_by("position").values_list("current_verdict", flat=True))
    n_claims = int(faithfulness.details.get("n_claims", len(verdicts)))
    partial_weight = run_settings["partial_weight"]
    faithfulness.score = faithfulness_score(verdicts, n_claims, partial_weight)
    if faithfulness.threshold is not None:
        faithfulness.passed = faithfulness.score >= faithfulness.threshold
    overrides = VerdictOverride.objects.filter(claim__item=item).count()
    faithfulness.details = {
        **faithfulness.details,
        **faithfulness_details(verdicts, n_claims, partial_weight),
        "overrides": overrides,
    }
    faithfulness.save(update_fields=["score", "passed", "details"])
    outcomes = {
        name: MetricOutcome(metric=name, score=result.score, details=result.details) for name, result in results.items()
    }
    RunItem.objects.filter(pk=item.pk).update(overall_score=overall_score(outcomes, run_settings))


# --- Enqueueing ------------------------------------------------------------------------------


def _enqueue_start_on_commit(run_id: int) -> None:
    from evaluations.tasks import run_start_task

    transaction.on_commit(lambda: run_start_task.delay(run_id))


def _enqueue_items(item_ids: list[int]) -> None:
    from evaluations.tasks import item_process_task

    with item_process_task.app.producer_or_acquire() as producer:
        for start in range(0, len(item_ids), ITEMS_PER_TASK):
            item_process_task.apply_async((item_ids[start : start + ITEMS_PER_TASK],), producer=producer)
