"""`manage.py reap_runs`: one reaper pass by hand or from cron (every worker already runs one every 30 s)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from evaluations.services.reaper import runs_reap


class Command(BaseCommand):
    help = "Recover runs from dead workers and lost messages: expired item leases, lost tasks, unfinished runs."

    def handle(self, *args: Any, **options: Any) -> None:
        report = runs_reap()
        self.stdout.write(
            f"reclaimed {report.reclaimed} items, abandoned {report.abandoned}, re-sent {report.requeued}, "
            f"fed {report.fed}, restarted {report.restarted} runs, finished {report.finalized} runs"
        )
