"""The judge as one claimed item's metrics see it: gateway call, usage accounting, lease renewal, and the
cached "is the run being cancelled?" check that stops its calls.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.utils import timezone

from evaluations.models import ItemStatus, RunItem, RunStatus
from evaluations.selectors import run_status
from judges import gateway
from judges.models import JudgeConfig
from judges.types import JudgeCancelled, JudgeResult

# How stale the "is the run being cancelled?" answer may be: one status query per run per
# process every this many seconds, shared by all threads, instead of one per judge call.
STOP_CHECK_SECONDS = 0.5
# Per-process cache keyed by run id is pruned past this size (long-lived workers).
_CACHE_PRUNE_SIZE = 1000


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
        stop = run_status(run_id) != RunStatus.RUNNING
        if len(_stop_cache) > _CACHE_PRUNE_SIZE:
            _stop_cache.clear()
        _stop_cache[run_id] = (now, stop)
        return stop


def note_running(run_id: int) -> None:
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
                    run_item_id=self.item_id,
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
