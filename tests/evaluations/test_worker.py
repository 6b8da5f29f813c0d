"""Runs on real Celery worker processes (threads pool, Redis broker) through the fake LLM server.

The judge's replies are scripted (tests/evaluations/helpers.py: valid replies for every prompt,
plus the faults a test adds), so the outcome of every item is known in advance.
"""

from __future__ import annotations

import signal
import time

import httpx
import pytest

from evaluations.engine import ItemOutcome
from evaluations.models import Claim, ItemStatus, MetricResult, Run, RunItem, RunStatus
from evaluations.services import runs
from evaluations.tasks import item_process_task
from judges.models import JudgeCall
from tests.evaluations.helpers import VALID_REPLIES, example, script_file, wait_for_run, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ALL_METRICS = ["faithfulness", "relevancy", "rubric", "correctness", "citation_audit", "retrieval"]
CALLS_PER_ITEM = 5


def assert_every_item_scored_once(run: Run, metrics: list[str], *, claims_per_item: int = 2) -> None:
    items = list(RunItem.objects.filter(run=run, status=ItemStatus.DONE).values_list("id", flat=True))
    per_item = {item_id: 0 for item_id in items}
    for item_id, metric in MetricResult.objects.filter(item__run=run).values_list("item_id", "metric"):
        per_item[item_id] += 1
        assert metric in metrics
    assert set(per_item.values()) == {len(metrics)}
    assert Claim.objects.filter(item__run=run).count() == len(items) * claims_per_item


def test_a_run_on_a_worker_through_the_fake_llm(make_dataset, fake_llm, make_fake_judge, celery_worker, tmp_path):
    # given a worker, and a judge at the fake server limited to 3 concurrent calls
    server = fake_llm("--script", script_file(tmp_path / "script.jsonl"), latency_ms=30)
    judge = make_fake_judge(server, max_concurrency=3)
    version = make_dataset(10, tags=lambda n: ("even",) if n % 2 == 0 else ("odd",))
    celery_worker(concurrency=8)

    # when a run is created
    run = runs.run_create(dataset_version=version, judge_config=judge, metrics=ALL_METRICS)
    run = wait_for_run(run)

    # then every item has one result per metric, the calls are logged for the run, the limit held
    assert run.status == RunStatus.COMPLETED, run.error
    assert (run.items_done, run.items_failed, run.judge_calls) == (10, 0, 10 * CALLS_PER_ITEM)
    assert_every_item_scored_once(run, ALL_METRICS)
    assert JudgeCall.objects.filter(run_id=run.pk, error="").count() == run.judge_calls
    assert run.input_tokens > 0 and run.output_tokens > 0
    assert run.aggregates["metrics"]["correctness"]["mean"] == 4.0
    assert run.aggregates["tags"]["even"]["items"]["done"] == 5
    assert server.stats()["max_in_flight"] <= 3

    # and a redelivered item task changes nothing
    item = RunItem.objects.filter(run=run).first()
    assert item_process_task([item.pk]) == [ItemOutcome.SKIPPED]
    assert MetricResult.objects.filter(item=item).count() == len(ALL_METRICS)
    assert Run.objects.get(pk=run.pk).judge_calls == run.judge_calls


def test_a_worker_killed_mid_run_loses_nothing(make_dataset, fake_llm, make_fake_judge, celery_worker, tmp_path):
    # given a slow run (3 calls of 250 ms an item) on a worker
    metrics = ["faithfulness", "relevancy"]
    server = fake_llm("--script", script_file(tmp_path / "script.jsonl"), latency_ms=250)
    judge = make_fake_judge(server, max_concurrency=6)
    first = celery_worker(concurrency=6)
    run = runs.run_create(dataset_version=make_dataset(24), judge_config=judge, metrics=metrics)
    wait_until(lambda: Run.objects.get(pk=run.pk).items_done >= 3, message="a few items done")
    wait_until(lambda: RunItem.objects.filter(run=run, status=ItemStatus.RUNNING).exists(), message="items in flight")

    # when the worker is killed (no clean shutdown) and another one starts
    first.kill()
    in_flight = set(RunItem.objects.filter(run=run, status=ItemStatus.RUNNING).values_list("id", flat=True))
    assert in_flight
    celery_worker(concurrency=6)
    run = wait_for_run(run, timeout=90)

    # then the run completes with every item scored exactly once
    assert run.status == RunStatus.COMPLETED, run.error
    assert (run.items_done, run.items_failed) == (24, 0)
    assert_every_item_scored_once(run, metrics)
    retried = RunItem.objects.filter(pk__in=in_flight)
    assert {item.attempts for item in retried} == {2}  # the killed executions were taken over


def test_judge_faults_are_retried_or_recorded_as_item_errors(
    make_dataset, fake_llm, make_fake_judge, celery_worker, tmp_path
):
    # given a fake server that answers with bursts of 429s, 500s and malformed replies
    script = script_file(
        tmp_path / "script.jsonl",
        {"match": "rubric judge", "status": 429, "retry_after": 0.2, "times": 6},  # a burst: retried
        {"match": "claim verification judge", "status": 500, "times": 4},  # transient: retried
        {"match": "relevancy judge.*report 3 find", "status": 500},  # always: item 3 fails
        {"match": "correctness judge.*report 5 find", "reply": "Hmm, hard to say."},  # unreadable: item 5 fails
    )
    server = fake_llm("--script", script, latency_ms=10)
    judge = make_fake_judge(server, max_concurrency=4)
    celery_worker(concurrency=4)

    # when a run of 8 items goes through it
    run = runs.run_create(dataset_version=make_dataset(8), judge_config=judge, metrics=ALL_METRICS)
    run = wait_for_run(run, timeout=90)

    # then the two doomed items are errors with the judge's message and the rest are scored
    assert run.status == RunStatus.COMPLETED_WITH_ERRORS
    assert (run.items_done, run.items_failed) == (6, 2)
    errors = dict(RunItem.objects.filter(run=run, status=ItemStatus.ERROR).values_list("example__external_id", "error"))
    assert set(errors) == {"q-3", "q-5"}
    assert "500" in errors["q-3"]
    assert "unreadable correctness reply" in errors["q-5"]
    assert not MetricResult.objects.filter(item__run=run, item__status=ItemStatus.ERROR).exists()
    assert_every_item_scored_once(run, ALL_METRICS)
    assert run.aggregates["metrics"]["relevancy"]["errored"] == 2
    assert run.aggregates["metrics"]["relevancy"]["covered"] == 6
    assert server.stats()["errors"]  # the faults did happen


def test_cancel_resume_and_rerun_failed_on_a_worker(make_dataset, fake_llm, make_fake_judge, celery_worker, tmp_path):
    # given a slow run on a worker, one of whose items always fails
    metrics = ["faithfulness", "relevancy"]
    fault = {"match": "relevancy judge.*report 2 find", "status": 500}
    server = fake_llm("--script", script_file(tmp_path / "script.jsonl", fault), latency_ms=200)
    judge = make_fake_judge(server, max_concurrency=4)
    celery_worker(concurrency=8)
    run = runs.run_create(dataset_version=make_dataset(30), judge_config=judge, metrics=metrics)
    wait_until(lambda: Run.objects.get(pk=run.pk).items_done >= 4, message="a few items done")

    # when it is cancelled, it stops promptly; the interrupted items are pending, not errors
    cancelled_at = time.monotonic()
    runs.run_cancel(run=run)
    run = wait_for_run(run, timeout=10, statuses=(RunStatus.CANCELLED,))
    assert time.monotonic() - cancelled_at < 5
    calls_at_cancel = server.stats()["requests"]
    time.sleep(1)
    assert server.stats()["requests"] == calls_at_cancel  # no judge call after the cancel
    counts = {status: RunItem.objects.filter(run=run, status=status).count() for status in ItemStatus.values}
    assert counts[ItemStatus.RUNNING] == 0 and counts[ItemStatus.PENDING] > 0
    assert counts[ItemStatus.DONE] + counts[ItemStatus.ERROR] + counts[ItemStatus.PENDING] == 30

    # when it is resumed, it finishes the rest (with the one failure)
    runs.run_resume(run=run)
    run = wait_for_run(run, timeout=60)
    assert run.status == RunStatus.COMPLETED_WITH_ERRORS
    assert (run.items_done, run.items_failed) == (29, 1)

    # when the judge is fixed and the failed items are re-run, only that item runs again
    httpx.post(server.url.removesuffix("/v1") + "/script", json=VALID_REPLIES, timeout=5).raise_for_status()
    calls_before = run.judge_calls
    assert runs.run_rerun_failed(run=run) == 1
    run = wait_for_run(run, timeout=30)
    assert run.status == RunStatus.COMPLETED
    assert (run.items_done, run.items_failed) == (30, 0)
    assert_every_item_scored_once(run, metrics)
    assert run.judge_calls - calls_before <= 3  # only the re-run item's calls (claims may be cached)


def test_two_concurrent_runs_share_the_workers_and_keep_their_limits(
    make_dataset, fake_llm, make_fake_judge, celery_worker, tmp_path
):
    # given two judges on two servers with different concurrency limits
    metrics = ["relevancy", "correctness"]
    slow_server = fake_llm("--script", script_file(tmp_path / "a.jsonl"), latency_ms=150)
    fast_server = fake_llm("--script", script_file(tmp_path / "b.jsonl"), latency_ms=20)
    slow_judge = make_fake_judge(slow_server, max_concurrency=2)
    fast_judge = make_fake_judge(fast_server, max_concurrency=4)
    celery_worker(concurrency=12)

    # when the slow run is created first, then the fast one
    slow = runs.run_create(
        dataset_version=make_dataset([example(n) for n in range(1, 21)]), judge_config=slow_judge, metrics=metrics
    )
    fast = runs.run_create(
        dataset_version=make_dataset([example(n) for n in range(101, 121)]), judge_config=fast_judge, metrics=metrics
    )
    fast = wait_for_run(fast, timeout=60)
    slow_when_fast_finished = Run.objects.get(pk=slow.pk)
    slow = wait_for_run(slow, timeout=90)

    # then both complete, the fast one did not wait behind the slow one, each kept its limit
    assert slow.status == fast.status == RunStatus.COMPLETED
    assert slow_when_fast_finished.status == RunStatus.RUNNING
    assert slow_server.stats()["max_in_flight"] <= 2
    assert fast_server.stats()["max_in_flight"] <= 4
    # and nothing is mixed up: each run's calls went to its own judge, about its own examples
    for run, judge, numbers in ((slow, slow_judge, range(1, 21)), (fast, fast_judge, range(101, 121))):
        assert set(JudgeCall.objects.filter(run_id=run.pk).values_list("config_id", flat=True)) == {judge.pk}
        assert set(RunItem.objects.filter(run=run).values_list("example__external_id", flat=True)) == {
            f"q-{n}" for n in numbers
        }
        assert MetricResult.objects.filter(item__run=run).count() == 20 * len(metrics)


def test_evaluate_wait_follows_a_run_on_a_worker(make_dataset, fake_llm, make_fake_judge, celery_worker, tmp_path):
    import io

    from django.core.management import call_command

    server = fake_llm("--script", script_file(tmp_path / "script.jsonl"), latency_ms=10)
    judge = make_fake_judge(server, name="ci-judge", max_concurrency=4)
    make_dataset(5, name="ci-set")
    celery_worker(concurrency=4)
    out = io.StringIO()

    call_command(
        "evaluate", "--dataset", "ci-set", "--judge", "ci-judge", "--metrics", "faithfulness,relevancy",
        "--wait", "--fail-under", "faithfulness=0.9", stdout=out, stderr=io.StringIO(),
    )  # fmt: skip

    assert "PASS faithfulness 1.000" in out.getvalue()
    assert Run.objects.get(judge_config=judge).status == RunStatus.COMPLETED


DEFAULT_RECOVERY = {
    "EVALSITE_ITEM_LEASE_SECONDS": "",
    "EVALSITE_REAP_INTERVAL_SECONDS": "",
    "EVALSITE_REQUEUE_AFTER_SECONDS": "",
}


def held_items(run: Run) -> set[int]:
    """Items a worker holds: executing (running) or reserved by its current task (pending with a lease)."""
    running = RunItem.objects.filter(run=run, status=ItemStatus.RUNNING)
    reserved = RunItem.objects.filter(run=run, status=ItemStatus.PENDING, lease_expires_at__isnull=False)
    return set(running.values_list("id", flat=True)) | set(reserved.values_list("id", flat=True))


def stop_abruptly(worker, how: str) -> None:
    """SIGKILL; or SIGTERM (Celery's warm shutdown) cut short by SIGKILL, as `docker compose restart` does."""
    if how == "SIGTERM, then SIGKILL":
        worker.process.send_signal(signal.SIGTERM)
        time.sleep(2)  # the grace period ends while the items in hand are still running
    worker.kill()


@pytest.mark.sqlite  # also on the embedded path (SQLite, filesystem broker) in make test's second pass
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM, then SIGKILL"])
def test_a_worker_killed_by_sigkill_is_recovered_within_a_minute_with_default_settings(
    make_dataset, fake_llm, make_fake_judge, celery_worker, tmp_path, how
):
    # given a run of 40 items (3 calls of 300 ms each) on a worker with the default lease and reaper settings
    metrics = ["faithfulness", "relevancy"]
    server = fake_llm("--script", script_file(tmp_path / "script.jsonl"), latency_ms=300)
    judge = make_fake_judge(server, max_concurrency=4)
    first = celery_worker(concurrency=4, **DEFAULT_RECOVERY)
    run = runs.run_create(dataset_version=make_dataset(40), judge_config=judge, metrics=metrics)
    wait_until(lambda: Run.objects.get(pk=run.pk).items_done >= 3, timeout=60, message="a few items done")
    wait_until(lambda: len(held_items(run)) >= 4, message="items held by the worker")

    # when the worker is killed and a new one starts
    stop_abruptly(first, how)
    killed_at = time.monotonic()
    held = held_items(run)
    attempts_before = dict(RunItem.objects.filter(pk__in=held).values_list("id", "attempts"))
    celery_worker(concurrency=4, **DEFAULT_RECOVERY)

    # then every item the dead worker held is back in work within 60 s
    def taken_over() -> bool:
        items = RunItem.objects.filter(pk__in=held).values_list("id", "status", "attempts")
        return all(status != ItemStatus.PENDING and attempts > attempts_before[pk] for pk, status, attempts in items)

    wait_until(taken_over, timeout=60, message="the dead worker's items taken over")
    recovery = time.monotonic() - killed_at
    print(f"{how}: recovered {len(held)} items {recovery:.1f} s after the kill")

    # and the run completes with every item scored exactly once, no logged judge call paid twice
    run = wait_for_run(run, timeout=120)
    assert run.status == RunStatus.COMPLETED, run.error
    assert (run.items_done, run.items_failed) == (40, 0)
    assert_every_item_scored_once(run, metrics)
    paid = JudgeCall.objects.filter(run_id=run.pk, error="").values_list("cache_key", flat=True)
    assert len(paid) == len(set(paid)), "a judge call already logged was made again"
    assert recovery < 60
