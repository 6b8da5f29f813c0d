"""Celery tasks of the run engine (thin: they call services) and the reaper thread of every worker.

Tasks are acknowledged late (settings: CELERY_TASK_ACKS_LATE) and idempotent: a redelivered
message finds its item already claimed or finished and does nothing.

The reaper needs no beat and no cron: when a worker is ready it starts a daemon thread that
calls `services.reaper.runs_reap` at once and then every EVALSITE_REAP_INTERVAL_SECONDS (30 s;
0 = off). Every worker runs one; reaping is safe concurrently (row locks, conditional
updates), so a fleet of workers needs no coordination and a single surviving worker
recovers the runs of dead ones. `manage.py reap_runs` does one pass by hand or from cron.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import shared_task
from celery.signals import worker_ready, worker_shutting_down
from django.conf import settings
from django.db import OperationalError, close_old_connections, connections

from evaluations.services import reaper, runs
from evaluations.services.enqueue import ITEM_PROCESS_TASK, RUN_START_TASK, RUNS_REAP_TASK

logger = logging.getLogger(__name__)


@shared_task(
    name=RUN_START_TASK,
    ignore_result=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def run_start_task(run_id: int) -> None:
    runs.run_start(run_id=run_id)


@shared_task(name=ITEM_PROCESS_TASK, ignore_result=True)
def item_process_task(item_ids: list[int] | int) -> list[str]:
    # No retry: a failure leaves the item running until its lease expires, then the reaper retries it.
    # A bare id is a message queued by an earlier release (one item a task).
    return runs.item_process(item_ids=[item_ids] if isinstance(item_ids, int) else item_ids)


@shared_task(name=RUNS_REAP_TASK, ignore_result=True)
def runs_reap_task() -> None:
    reaper.runs_reap()


@worker_ready.connect
def reuse_database_connections(sender: Any = None, **_: Any) -> None:
    """Let worker threads keep their database connection between tasks, as settings' CONN_MAX_AGE says.

    Celery's Django fix-up closes every connection before and after each task (unless
    CELERY_DB_REUSE_MAX): with the threads pool that is one new PostgreSQL connection, a backend
    fork plus catalog warm-up, per item, a large part of the database's and the worker's CPU.
    Django's own request-boundary rule replaces it: close connections that are broken or older
    than CONN_MAX_AGE (SQLite's 0 still closes them after every task).
    """
    app = getattr(sender, "app", None)
    for fixup in getattr(app, "_fixups", None) or ():
        worker_fixup = getattr(fixup, "_worker_fixup", None)
        if worker_fixup is not None and not getattr(worker_fixup, "db_reuse_max", None):
            worker_fixup.close_database = lambda **_: close_old_connections()


_reaper_stop = threading.Event()


@worker_ready.connect
def start_reaper(**_: Any) -> None:
    interval = settings.EVALSITE_REAP_INTERVAL_SECONDS
    if interval <= 0:
        logger.info("run reaper disabled (EVALSITE_REAP_INTERVAL_SECONDS=0)")
        return
    _reaper_stop.clear()
    threading.Thread(target=_reap_forever, args=(interval,), name="evalsite-reaper", daemon=True).start()
    logger.info("run reaper started: every %s s", interval)


@worker_shutting_down.connect
def stop_reaper(**_: Any) -> None:
    _reaper_stop.set()


def _reap_forever(interval: float) -> None:
    while not _reaper_stop.is_set():
        try:
            reaper.runs_reap()
        except Exception:
            logger.exception("run reaper pass failed; trying again in %s s", interval)
        finally:
            connections.close_all()
        _reaper_stop.wait(interval)
