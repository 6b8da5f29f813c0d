"""A run's life: create, start, feed, finish (aggregates), cancel, resume, re-run failed.

See the package docstring for how a run moves through the workers.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import timedelta
from itertools import islice
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from datasets.models import DatasetVersion
from datasets.selectors import version_example_count, version_example_ids
from evalsite.roles import REVIEWER, require_role
from evaluations import leases
from evaluations.aggregates import review_summary, run_aggregates
from evaluations.engine import ItemOutcome, item_execute
from evaluations.metrics import METRIC_NAMES, execution_order, require_known
from evaluations.metrics.run_settings import resolve_settings
from evaluations.models import (
    FINISHED_STATUSES,
    Claim,
    ItemStatus,
    MetricResult,
    Run,
    RunItem,
    RunStatus,
)
from evaluations.selectors import (
    run_active_statuses,
    run_in_flight,
    run_item_counts,
    run_item_summaries,
    run_status,
)
from evaluations.services.enqueue import ITEMS_PER_TASK, items_send, run_start_on_commit
from evaluations.signals import run_finished
from evaluations.sql import items_mark_enqueued, run_review_stats
from judges.models import JudgeConfig
from targets.models import Target
from targets.selectors import run_target_summary
from targets.services import snapshots_discard_errors, target_config_snapshot

logger = logging.getLogger(__name__)

# RunItems per INSERT when a run starts: 1,000 rows take about 15 ms on PostgreSQL (a 10,000-item
# run starts in well under a second); larger batches gain nothing and make statements bigger.
ITEM_BATCH_SIZE = 1000
# Item tasks a run keeps queued or executing at once, as a multiple of its judge's max
# concurrency. 2 keeps the judge saturated (an item spends part of its time outside judge calls,
# writing results) while the queue stays short. Each feed costs one small transaction
# (~1 ms) plus one message per task (of ITEMS_PER_TASK items, see enqueue.py).
FEED_WINDOW_FACTOR = 2
FEED_WINDOW_MIN = 4
# Threads (in-process) and window size for a judge without a concurrency limit (max_concurrency 0,
# e.g. the offline judge, whose work is CPU-bound anyway).
UNLIMITED_JUDGE_CONCURRENCY = 8
# An in-process executor beats its heartbeat (executor.py); workers adopt its run once it is stale.
HEARTBEAT_STALE_SECONDS = 60
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
    require_known(names)
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
    target: Target | None = None,
) -> Run:
    """Store a queued run and (with `enqueue`) hand it to the workers once the transaction commits.

    With a live `target`, each item's answer, contexts and retrieved ids come from calling it; the run
    keeps a snapshot of the target's configuration (what it called, whatever later edits change).
    Raises ValueError naming the bad parameter (`metrics`, or the settings key), PermissionDenied
    when `user` (a person; None for the system: commands, tasks) is not a reviewer or admin.
    """
    _require_run_control(user, "Starting a run")
    names = validate_metrics(metrics)
    resolved = resolve_settings(settings)
    run = Run.objects.create(
        name=name[:200],
        dataset_version=dataset_version,
        judge_config=judge_config,
        target=target,
        target_config=target_config_snapshot(target) if target is not None else {},
        metrics=names,
        settings=resolved,
        items_total=dataset_version.item_count,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    if enqueue:
        run_start_on_commit(run.pk)
    return run


def run_start(*, run_id: int) -> None:
    """Queued → running, create the items (idempotent), feed the first window. Safe to repeat."""
    run = Run.objects.select_related("judge_config").filter(pk=run_id).first()
    if run is None:
        logger.info("run %s is gone; nothing to start", run_id)
        return
    now = timezone.now()
    # One transaction: a reaper must never see the run running before its items exist (it would
    # find nothing left to do and finish the run with 0 items done).
    with transaction.atomic():
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
    expected = version_example_count(run.dataset_version_id)
    if RunItem.objects.filter(run_id=run.pk).count() < expected:
        example_ids = version_example_ids(run.dataset_version_id)
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
        transaction.on_commit(lambda: items_send(item_ids))
    return item_ids


def item_process(*, item_ids: list[int]) -> list[ItemOutcome]:
    """The item task: execute its items one after another, then feed their run as many new ones or finish it."""
    outcomes = []
    handled: Counter[int] = Counter()  # run id -> items this task claimed and let go
    leases.items_reserve(item_ids)  # the items waiting their turn in this task are held too
    for item_id in item_ids:
        try:
            execution = item_execute(item_id)
        finally:
            leases.keeper.let_go(item_id)
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
    status = run_status(run_id)
    if status == RunStatus.CANCELLING:
        target = RunStatus.CANCELLED
    elif status == RunStatus.RUNNING and not active:
        target = None  # decided from the counts below
    else:
        return False
    run = Run.objects.get(pk=run_id)
    counts = run_item_counts(run_id)
    if target is None and sum(counts.values()) < run.items_total:
        return False  # run_start is still creating its items (a reaper pass between its two steps)
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
        run_finished.send(sender=Run, run_id=run_id, status=target)
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
    if run.target_config:
        aggregates["target"] = run_target_summary(run.pk)
    aggregates["wall_seconds"] = round((end - run.started_at).total_seconds(), 3) if run.started_at else None
    # the judge's figures beside the reviewed ones (see services.overrides)
    aggregates["review"] = review_summary(run_review_stats(run.pk, []))
    return aggregates


def run_aggregates_refresh(*, run: Run) -> None:
    """Recompute a finished run's aggregates (after an override); a running run gets them when it finishes."""
    run.refresh_from_db()
    if run.status in FINISHED_STATUSES:
        Run.objects.filter(pk=run.pk).update(aggregates=build_aggregates(run))


# --- Cancel, resume, re-run ------------------------------------------------------------------


def _require_run_control(user: Any, action: str) -> None:
    """People need the reviewer role to start or steer runs (viewers read); the system (user None) may."""
    if user is not None:
        require_role(user, REVIEWER, action)


def run_cancel(*, run: Run, user: Any = None) -> Run:
    """Queued → cancelled; running → cancelling, then cancelled once the items in flight stop.

    Items interrupted by the cancel go back to pending (unscored) so that `run_resume` continues them.
    PermissionDenied when `user` is given and is not a reviewer or admin (the same for resume and re-run).
    """
    _require_run_control(user, "Cancelling a run")
    if Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
        status=RunStatus.CANCELLED, finished_at=timezone.now()
    ):
        run_finished.send(sender=Run, run_id=run.pk, status=RunStatus.CANCELLED)
    else:
        if not Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(status=RunStatus.CANCELLING):
            run.refresh_from_db()
            raise ValueError(f"run {run.pk} is {run.status}: only a queued or running run can be cancelled")
        run_finalize_if_idle(run_id=run.pk)
    run.refresh_from_db()
    return run


@transaction.atomic
def run_resume(*, run: Run, user: Any = None) -> Run:
    """A cancelled run carries on with its pending items (the finished ones keep their results)."""
    _require_run_control(user, "Resuming a run")
    if not Run.objects.filter(pk=run.pk, status=RunStatus.CANCELLED).update(
        status=RunStatus.RUNNING, finished_at=None, error=""
    ):
        run.refresh_from_db()
        raise ValueError(f"run {run.pk} is {run.status}: only a cancelled run can be resumed")
    RunItem.objects.filter(run_id=run.pk, status=ItemStatus.PENDING).update(enqueued_at=None)
    run_start_on_commit(run.pk)
    run.refresh_from_db()
    return run


@transaction.atomic
def run_rerun_failed(*, run: Run, user: Any = None) -> int:
    """Reset the run's errored items (and anything stored for them) to pending and run them again.

    Returns how many items were reset.
    """
    _require_run_control(user, "Re-running failed items")
    retryable = (RunStatus.COMPLETED_WITH_ERRORS, RunStatus.FAILED)
    if not Run.objects.filter(pk=run.pk, status__in=retryable).update(
        status=RunStatus.RUNNING, finished_at=None, error=""
    ):
        run.refresh_from_db()
        raise ValueError(f"run {run.pk} is {run.status}: only a run that finished with errors can re-run its failures")
    item_ids = list(RunItem.objects.filter(run_id=run.pk, status=ItemStatus.ERROR).values_list("id", flat=True))
    MetricResult.objects.filter(item_id__in=item_ids).delete()
    Claim.objects.filter(item_id__in=item_ids).delete()
    snapshots_discard_errors(item_ids=item_ids)  # a failed target call is asked again
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
    run_start_on_commit(run.pk)
    run.refresh_from_db()
    return len(item_ids)


def _heartbeat_is_fresh(run: Run) -> bool:
    return run.heartbeat_at is not None and timezone.now() - run.heartbeat_at < timedelta(
        seconds=HEARTBEAT_STALE_SECONDS
    )
