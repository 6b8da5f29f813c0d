"""The reaper: recovery from dead workers and lost messages.

Puts items whose lease expired back to pending (or errors after too many attempts), re-sends item
tasks lost on the way, restarts runs whose start task was lost, tops up windows and finalises runs
whose last finisher died. Runs as a thread in every worker (tasks.py) or `manage.py reap_runs`.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from evaluations.models import ItemStatus, Run, RunItem, RunStatus
from evaluations.selectors import run_in_flight
from evaluations.services.enqueue import run_start_on_commit
from evaluations.services.runs import HEARTBEAT_STALE_SECONDS, feed_window, run_feed, run_finalize_if_idle

logger = logging.getLogger(__name__)

# Items the reaper looks at per pass (the rest wait for the next pass).
REAP_BATCH_SIZE = 1000


@dataclass
class ReapReport:
    reclaimed: int = 0  # leases expired: back to pending
    abandoned: int = 0  # leases expired too often: errors
    orphaned: int = 0  # reserved by a process whose leases expired (it died holding the message): sent again
    requeued: int = 0  # queued too long with no process holding it (message lost by the broker): sent again
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
    queued = RunItem.objects.filter(status=ItemStatus.PENDING, enqueued_at__isnull=False)
    # A lease on a queued item: a process took its message; expired, that process is gone (leases.py).
    report.orphaned = queued.filter(lease_expires_at__lt=now).update(enqueued_at=None, lease_expires_at=None)
    # No lease: still in the broker's queue, or lost by the broker: only time tells them apart.
    requeue_before = now - timedelta(seconds=settings.EVALSITE_REQUEUE_AFTER_SECONDS)
    report.requeued = queued.filter(lease_expires_at__isnull=True, enqueued_at__lt=requeue_before).update(
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
        run_start_on_commit(run_id)
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
