"""The one place that hands work to Celery.

Tasks are looked up by name in the app's registry (filled by autodiscovery), so the services never
import `evaluations.tasks` and tasks → services stays the only direction.
"""

from __future__ import annotations

from django.db import transaction

from evalsite.celery import app

RUN_START_TASK = "evaluations.run_start"
ITEM_PROCESS_TASK = "evaluations.item_process"
RUNS_REAP_TASK = "evaluations.runs_reap"

# Items a task carries. A Celery message costs the worker ~2 ms of CPU to publish and ~2 ms to
# receive and acknowledge (bench/throughput.py, Redis broker): as much as a cached item's own work.
# Several items a message divide that; more would leave threads idle at a run's end, when the
# last tasks still hold several items each.
ITEMS_PER_TASK = 4


def run_start_on_commit(run_id: int) -> None:
    """Send the run's start task once the current transaction commits."""
    transaction.on_commit(lambda: app.tasks[RUN_START_TASK].delay(run_id))


def items_send(item_ids: list[int]) -> None:
    """Send item tasks of ITEMS_PER_TASK items each, over one producer connection."""
    task = app.tasks[ITEM_PROCESS_TASK]
    with task.app.producer_or_acquire() as producer:
        for start in range(0, len(item_ids), ITEMS_PER_TASK):
            task.apply_async((item_ids[start : start + ITEMS_PER_TASK],), producer=producer)
