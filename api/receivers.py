"""When a run finishes, its callback (if it has one) is handed to a task after commit."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from api import services
from evalsite.celery import app
from evaluations.signals import run_finished


def _deliver_callback(sender: Any, run_id: int, **kwargs: Any) -> None:
    if services.callback_due(run_id):
        from api.tasks import CALLBACK_TASK

        transaction.on_commit(lambda: app.tasks[CALLBACK_TASK].delay(run_id))


run_finished.connect(_deliver_callback, dispatch_uid="api.run_callback")
