"""Run callbacks without a worker: the run_finished signal marks them due, one attempt at a time with backoff,
a final failure recorded, an address that turned private refused at delivery."""

from __future__ import annotations

import pytest

from api import services
from api.models import CallbackStatus, RunCallback
from api.summaries import callback_payload
from evaluations.models import RunStatus
from evaluations.services.runs import run_cancel, run_create
from tests.api.test_flow import CallbackServer

# sqlite: the API also works on the embedded default (make test's second pass).
pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


@pytest.fixture
def queued_run(small_dataset, offline):
    return run_create(dataset_version=small_dataset(), judge_config=offline, metrics=["relevancy"], enqueue=False)


def test_a_finished_run_marks_its_callback_due_once(queued_run, settings, django_capture_on_commit_callbacks) -> None:
    settings.API_CALLBACK_ALLOW_PRIVATE = True
    services.run_callback_create(run=queued_run, url="http://127.0.0.1:9/hook", base_url="http://evalsite.test")
    with django_capture_on_commit_callbacks() as sent:
        run_cancel(run=queued_run)  # a queued run finishes at once: cancelled
    assert queued_run.status == RunStatus.CANCELLED
    assert RunCallback.objects.get().status == CallbackStatus.DELIVERING
    assert len(sent) == 1  # the delivery task, after commit
    assert not services.callback_due(queued_run.pk)  # never twice


def test_attempts_back_off_then_fail_for_good(queued_run, settings) -> None:
    settings.API_CALLBACK_ALLOW_PRIVATE = True
    settings.API_CALLBACK_MAX_ATTEMPTS = 3
    settings.API_CALLBACK_BACKOFF_SECONDS = 2
    server = CallbackServer(failures=10)
    try:
        services.run_callback_create(run=queued_run, url=server.url, base_url="http://evalsite.test")
        services.callback_due(queued_run.pk)
        delays = [
            services.callback_attempt(run_id=queued_run.pk, payload_for=callback_payload).retry_in for _ in range(3)
        ]
    finally:
        server.httpd.shutdown()
    assert delays == [2, 4, None]
    callback = RunCallback.objects.get()
    assert callback.status == CallbackStatus.FAILED and callback.attempts == 3
    assert callback.last_status_code == 500 and "HTTP 500" in callback.last_error
    body = server.bodies[0]
    assert body["run"]["url"] == f"http://evalsite.test/api/runs/{queued_run.pk}/"
    assert body["run"]["web_url"] == f"http://evalsite.test/runs/{queued_run.pk}/"


def test_a_private_address_is_refused_at_delivery_too(queued_run, settings) -> None:
    settings.API_CALLBACK_ALLOW_PRIVATE = True
    services.run_callback_create(run=queued_run, url="http://127.0.0.1:9/hook", base_url="http://evalsite.test")
    services.callback_due(queued_run.pk)
    settings.API_CALLBACK_ALLOW_PRIVATE = False
    attempt = services.callback_attempt(run_id=queued_run.pk, payload_for=callback_payload)
    assert not attempt.delivered and attempt.retry_in is not None
    assert "private or loopback" in RunCallback.objects.get().last_error


@pytest.mark.parametrize(
    "url", ["http://[::1]/x", "http://169.254.169.254/latest", "http://0.0.0.0/", "https://no-such-host.invalid/"]
)
def test_callback_urls_that_are_refused(url) -> None:
    with pytest.raises(services.CallbackUrlError):
        services.callback_url_check(url)
