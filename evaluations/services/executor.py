"""The in-process executor: a run executed in this process by a pool of threads (`evaluate`, `quickstart`).

The same engine as the workers, so the same limits and guarantees; a heartbeat keeps the workers'
reaper away from the run while this process lives.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable

from django.db import connections
from django.utils import timezone

from evaluations.engine import ItemOutcome, item_execute
from evaluations.models import ItemStatus, Run, RunStatus
from evaluations.selectors import run_active_statuses, run_pending_item_ids, run_status
from evaluations.services.reaper import items_reclaim_expired
from evaluations.services.runs import (
    HANDLED_OUTCOMES,
    judge_concurrency,
    run_cancel,
    run_finalize_if_idle,
    run_start,
)

logger = logging.getLogger(__name__)

# The executor beats its heartbeat this often (runs.HEARTBEAT_STALE_SECONDS: when workers adopt the run).
HEARTBEAT_SECONDS = 5
PROGRESS_SECONDS = 0.5


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
            item_ids = run_pending_item_ids(run.pk) if run_status(run.pk) == RunStatus.RUNNING else []
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
