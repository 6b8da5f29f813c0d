"""Item leases: how the run engine tells a dead worker from a slow one, within a minute.

The choice. A worker's death must free two kinds of items: those it was executing (running)
and those it had taken from the broker but not started yet (the other items of its current
task's message, still pending). Celery's own signals do not say which: with late acks the
broker redelivers a dead worker's message only after the visibility timeout (an hour by
default, and never with the filesystem broker, which forgets a message once read), and a
message waiting its turn in a long queue looks exactly like a lost one.

So liveness lives on the rows themselves, one lease per item, kept alive by the process that
holds it:

- A task *reserves* its items before it starts the first one (one UPDATE: each pending item of
  the message gets `lease_expires_at` = now + EVALSITE_ITEM_LEASE_SECONDS), and the claim of each
  item (pending → running) takes a fresh lease.
- A keeper thread in every process that holds items (a worker, the in-process executor) renews
  the leases of all of them every third of the lease: one UPDATE per beat, whatever the number
  of items or the length of a judge call. This is the worker's heartbeat, written where the
  reaper looks, so it needs no Redis and works the same with every broker and database.
- The reaper (every EVALSITE_REAP_INTERVAL_SECONDS) reads the leases: an expired lease on a
  running item means its executor died (back to pending, re-sent); an expired lease on a
  pending, queued item means the process that reserved it died (re-sent at once). A queued item
  with *no* lease is still in the broker's queue, however long it has waited: it is only
  presumed lost after EVALSITE_REQUEUE_AFTER_SECONDS (a message dropped by the broker itself).

With the defaults (lease 30 s, beat 10 s, reaper every 10 s) a killed worker's items are back in
the queue at most lease + reaper interval = 40 s after its last beat; a SIGTERM lets the worker
finish the items in hand (Celery's warm shutdown) and a SIGKILL after the grace period is the
case above. A re-executed item asks the judge the same prompts again and the gateway's cache
answers the calls the dead execution already logged, so they are not paid for twice. Duplicate
executions stay harmless: the claim and the final write are guarded by the attempt token.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connections
from django.utils import timezone

from evaluations import sql
from evaluations.models import ItemStatus

logger = logging.getLogger(__name__)

# The keeper thread wakes this often and beats (one UPDATE) every third of the lease.
KEEPER_NAP_SECONDS = 0.5


def lease_seconds() -> int:
    return settings.EVALSITE_ITEM_LEASE_SECONDS


def lease_until() -> datetime:
    return timezone.now() + timedelta(seconds=lease_seconds())


def items_reserve(item_ids: list[int]) -> None:
    """Lease the pending items of a task this process is about to execute, and keep them alive."""
    sql.items_lease(item_ids, until=lease_until(), statuses=(ItemStatus.PENDING,))
    keeper.hold(item_ids)


class LeaseKeeper:
    """The items this process holds (reserved or executing) and the thread that renews their leases."""

    def __init__(self) -> None:
        self._held: dict[int, int] = {}  # item id -> holds (the task's reservation, then the execution's claim)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def hold(self, item_ids: Iterable[int]) -> None:
        with self._lock:
            for item_id in item_ids:
                self._held[item_id] = self._held.get(item_id, 0) + 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._keep, name="evalsite-leases", daemon=True)
                self._thread.start()

    def let_go(self, item_id: int) -> None:
        with self._lock:
            count = self._held.get(item_id, 0) - 1
            if count > 0:
                self._held[item_id] = count
            else:
                self._held.pop(item_id, None)

    def held(self) -> list[int]:
        with self._lock:
            return sorted(self._held)

    def renew(self) -> int:
        """One beat: extend the lease of every held item still pending or running; rows renewed."""
        statuses = (ItemStatus.PENDING, ItemStatus.RUNNING)
        return sql.items_lease(self.held(), until=lease_until(), statuses=statuses)

    def _keep(self) -> None:
        beat_at = time.monotonic()
        while True:
            # Short naps, so a changed lease length (tests) takes effect at once.
            time.sleep(KEEPER_NAP_SECONDS)
            if time.monotonic() - beat_at < lease_seconds() / 3:
                continue
            beat_at = time.monotonic()
            try:
                self.renew()
            except Exception:
                logger.exception("renewing item leases failed; trying again at the next beat")
            finally:
                connections.close_all()  # this thread's own connection


keeper = LeaseKeeper()
