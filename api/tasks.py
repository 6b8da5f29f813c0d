"""The API's Celery task: deliver a finished run's callback (thin: the service does one attempt)."""

from __future__ import annotations

from celery import shared_task

from api import services
from api.summaries import callback_payload

CALLBACK_TASK = "api.run_callback_deliver"


@shared_task(name=CALLBACK_TASK, bind=True, ignore_result=True, max_retries=None)
def run_callback_deliver(self, run_id: int) -> None:
    attempt = services.callback_attempt(run_id=run_id, payload_for=callback_payload)
    if attempt.retry_in is not None:
        raise self.retry(countdown=attempt.retry_in)
