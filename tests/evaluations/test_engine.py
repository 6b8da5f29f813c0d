"""The item pipeline and run lifecycle, executed in-process against a stand-in gateway (fast, no network)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from evaluations.engine import ItemOutcome, item_execute
from evaluations.models import Claim, ItemStatus, MetricResult, Run, RunItem, RunStatus
from evaluations.services import executor, overrides, reaper, runs
from evaluations.tasks import item_process_task
from tests.evaluations.helpers import example, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.sqlite]

ALL_METRICS = ["faithfulness", "relevancy", "rubric", "correctness", "citation_audit", "retrieval"]
JUDGE_CALLS_PER_ITEM = 5  # claim extraction + verification, relevancy, rubric, correctness


def in_process_run(version, judge, metrics=ALL_METRICS, **kwargs) -> Run:
    run = runs.run_create(dataset_version=version, judge_config=judge, metrics=metrics, enqueue=False, **kwargs)
    return executor.run_execute_in_process(run=run)


def started_without_workers(version, judge, metrics=ALL_METRICS) -> Run:
    """A running run with its items created and nothing queued (as the in-process executor starts it)."""
    run = runs.run_create(dataset_version=version, judge_config=judge, metrics=metrics, enqueue=False)
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
    runs.run_start(run_id=run.pk)
    run.refresh_from_db()
    return run


def in_thread(function: Callable[[], object]) -> Callable[[], None]:
    """A thread target that closes the thread's database connections when done."""

    def target() -> None:
        try:
            function()
        finally:
            connections.close_all()

    return target


def test_a_run_stores_one_result_per_metric_and_its_claims(make_dataset, offline_judge, stub_gateway) -> None:
    version = make_dataset(6, tags=lambda n: ("even",) if n % 2 == 0 else ("odd",))

    run = in_process_run(version, offline_judge)

    assert run.status == RunStatus.COMPLETED
    assert (run.items_total, run.items_done, run.items_failed) == (6, 6, 0)
    assert set(RunItem.objects.filter(run=run).values_list("status", flat=True)) == {ItemStatus.DONE}
    assert MetricResult.objects.filter(item__run=run).count() == 6 * len(ALL_METRICS)
    assert Claim.objects.filter(item__run=run).count() == 6 * 2
    assert run.judge_calls == 6 * JUDGE_CALLS_PER_ITEM == len(stub_gateway.calls)
    assert {run_id for _, _, run_id in stub_gateway.calls} == {run.pk}
    assert (run.input_tokens, run.output_tokens) == (run.judge_calls * 10, run.judge_calls * 5)
    assert float(run.cost) == pytest.approx(run.judge_calls * 0.001)
    assert run.started_at and run.finished_at and run.heartbeat_at is None
    assert RunItem.objects.filter(run=run, overall_score__isnull=True).count() == 0
    aggregates = run.aggregates
    assert set(aggregates["metrics"]) == set(ALL_METRICS)
    assert aggregates["metrics"]["correctness"]["mean"] == 4.5
    assert aggregates["metrics"]["faithfulness"]["pass_rate"] == 1.0
    assert aggregates["tags"]["even"]["items"]["total"] == 3
    assert aggregates["judge"]["calls"] == run.judge_calls
    assert aggregates["wall_seconds"] > 0


def test_the_same_item_task_delivered_twice_writes_once(make_dataset, offline_judge, stub_gateway) -> None:
    # given a started run of two items
    run = started_without_workers(make_dataset(2), offline_judge)
    first, second = RunItem.objects.filter(run=run).order_by("id")

    # when the first item's task is delivered twice (the second time as a message of an earlier
    # release, which carried a bare id)
    assert item_process_task([first.pk]) == [ItemOutcome.DONE]
    assert item_process_task(first.pk) == [ItemOutcome.SKIPPED]

    # then its results, claims, judge calls and counters are written once
    first.refresh_from_db()
    run.refresh_from_db()
    assert (first.status, first.attempts) == (ItemStatus.DONE, 1)
    assert MetricResult.objects.filter(item=first).count() == len(ALL_METRICS)
    assert Claim.objects.filter(item=first).count() == 2
    assert (run.items_done, run.judge_calls) == (1, JUDGE_CALLS_PER_ITEM)
    assert len(stub_gateway.calls) == JUDGE_CALLS_PER_ITEM
    # and the finished item fed the next one to the broker
    second.refresh_from_db()
    assert second.enqueued_at is not None


def test_an_item_task_executes_its_items_and_feeds_as_many(make_dataset, offline_judge, stub_gateway) -> None:
    # given a started run of five items, nothing queued
    run = started_without_workers(make_dataset(5), offline_judge)
    items = list(RunItem.objects.filter(run=run).order_by("id"))

    # when one task carries three of them (one already finished by an earlier delivery)
    assert item_process_task([items[0].pk]) == [ItemOutcome.DONE]  # feeds one
    fed_before = set(RunItem.objects.filter(run=run, enqueued_at__isnull=False).values_list("id", flat=True))
    outcomes = item_process_task([items[0].pk, items[1].pk, items[2].pk])

    # then it executes the two new ones, skips the finished one and feeds two more
    assert outcomes == [ItemOutcome.SKIPPED, ItemOutcome.DONE, ItemOutcome.DONE]
    fed_after = set(RunItem.objects.filter(run=run, enqueued_at__isnull=False).values_list("id", flat=True))
    assert len(fed_after - fed_before) == 2
    assert RunItem.objects.filter(run=run, status=ItemStatus.DONE).count() == 3


def test_two_concurrent_deliveries_claim_once(make_dataset, offline_judge, stub_gateway) -> None:
    run = started_without_workers(make_dataset(1), offline_judge)
    item = RunItem.objects.get(run=run)
    stub_gateway.latency = 0.05
    outcomes: list[ItemOutcome] = []

    def deliver() -> None:
        outcomes.append(item_execute(item.pk).outcome)
        connections.close_all()

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == sorted([ItemOutcome.DONE] + [ItemOutcome.SKIPPED] * 3)
    assert MetricResult.objects.filter(item=item).count() == len(ALL_METRICS)
    assert Run.objects.get(pk=run.pk).items_done == 1


def test_a_stale_execution_whose_lease_was_reclaimed_writes_nothing(make_dataset, offline_judge, stub_gateway) -> None:
    # given an execution that stalls (its worker presumed dead)
    run = started_without_workers(make_dataset(1), offline_judge)
    item = RunItem.objects.get(run=run)
    stub_gateway.latency = 0.2
    stale: list[ItemOutcome] = []
    thread = threading.Thread(target=in_thread(lambda: stale.append(item_execute(item.pk).outcome)))
    thread.start()
    stub_gateway.started.wait(5)

    # when its lease expires, the reaper puts the item back and another execution does it
    RunItem.objects.filter(pk=item.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert reaper.items_reclaim_expired() == (1, 0)
    fresh = item_execute(item.pk).outcome
    thread.join()

    # then only the fresh execution's results exist
    assert (fresh, stale) == (ItemOutcome.DONE, [ItemOutcome.LOST])
    item.refresh_from_db()
    assert (item.status, item.attempts) == (ItemStatus.DONE, 2)
    assert MetricResult.objects.filter(item=item).count() == len(ALL_METRICS)
    assert Claim.objects.filter(item=item).count() == 2
    assert Run.objects.get(pk=run.pk).items_done == 1


def test_judge_failures_are_item_errors_never_scores(make_dataset, offline_judge, stub_gateway) -> None:
    items = [example(1), example(2, query="FAIL: what now?"), example(3)]

    run = in_process_run(make_dataset(items), offline_judge)

    assert run.status == RunStatus.COMPLETED_WITH_ERRORS
    assert (run.items_done, run.items_failed) == (2, 1)
    failed = RunItem.objects.get(run=run, status=ItemStatus.ERROR)
    assert "HTTP 500" in failed.error
    assert failed.overall_score is None
    assert not MetricResult.objects.filter(item=failed).exists()
    relevancy = run.aggregates["metrics"]["relevancy"]
    assert (relevancy["covered"], relevancy["errored"], relevancy["mean"]) == (2, 1, 1.0)


def test_a_run_whose_every_item_failed_has_failed(make_dataset, offline_judge, stub_gateway) -> None:
    run = in_process_run(make_dataset([example(1, query="FAIL 1"), example(2, query="FAIL 2")]), offline_judge)

    assert run.status == RunStatus.FAILED
    assert run.error.startswith("all 2 items failed")


def test_repeats_store_mean_and_std_of_the_samples(make_dataset, offline_judge, stub_gateway) -> None:
    stub_gateway.rubric_by_sample = {0: 0.6, 1: 0.8, 2: 1.0}

    run = in_process_run(make_dataset(2), offline_judge, metrics=["relevancy", "rubric"], settings={"repeats": 3})

    assert run.status == RunStatus.COMPLETED
    rubric = MetricResult.objects.filter(item__run=run, metric="rubric").first()
    assert rubric.score == pytest.approx(0.8)
    assert rubric.details["samples"] == [0.6, 0.8, 1.0]
    assert rubric.details["std"] == pytest.approx(0.1633, abs=1e-4)
    assert sorted({sample for _, sample, _ in stub_gateway.calls}) == [0, 1, 2]
    assert run.judge_calls == 2 * 2 * 3
    assert run.aggregates["metrics"]["rubric"]["std_mean"] == pytest.approx(0.1633, abs=1e-4)
    assert run.aggregates["metrics"]["relevancy"]["std_mean"] == 0.0


def test_cancel_stops_promptly_and_resume_finishes_the_rest(make_dataset, offline_judge, stub_gateway) -> None:
    # given a slow run executing in a background thread
    stub_gateway.latency = 0.1
    run = runs.run_create(
        dataset_version=make_dataset(12), judge_config=offline_judge, metrics=ALL_METRICS, enqueue=False
    )
    in_process = threading.Thread(target=in_thread(lambda: executor.run_execute_in_process(run=run, workers=2)))
    in_process.start()
    wait_until(lambda: Run.objects.get(pk=run.pk).items_done >= 1, message="a first item")

    # when it is cancelled
    runs.run_cancel(run=run)
    in_process.join(10)

    # then the interrupted items went back to pending, not error, and the run is cancelled
    assert not in_process.is_alive()
    run.refresh_from_db()
    counts = {status: RunItem.objects.filter(run=run, status=status).count() for status in ItemStatus.values}
    assert run.status == RunStatus.CANCELLED
    assert counts[ItemStatus.RUNNING] == counts[ItemStatus.ERROR] == 0
    assert counts[ItemStatus.PENDING] > 0
    assert not MetricResult.objects.filter(item__run=run, item__status=ItemStatus.PENDING).exists()

    # when it is resumed
    stub_gateway.latency = 0
    runs.run_resume(run=run)
    run = executor.run_execute_in_process(run=run)

    # then every item is done once
    assert run.status == RunStatus.COMPLETED
    assert run.items_done == 12
    assert MetricResult.objects.filter(item__run=run).count() == 12 * len(ALL_METRICS)


def test_rerun_failed_resets_only_the_errored_items(make_dataset, offline_judge, stub_gateway) -> None:
    run = in_process_run(make_dataset([example(1), example(2, query="FAIL now"), example(3)]), offline_judge)
    assert run.status == RunStatus.COMPLETED_WITH_ERRORS
    done_before = dict(RunItem.objects.filter(run=run, status=ItemStatus.DONE).values_list("id", "attempts"))

    stub_gateway.fail_marked = False
    assert runs.run_rerun_failed(run=run) == 1
    run = executor.run_execute_in_process(run=run)

    assert run.status == RunStatus.COMPLETED
    assert (run.items_done, run.items_failed) == (3, 0)
    assert dict(RunItem.objects.filter(pk__in=done_before).values_list("id", "attempts")) == done_before
    assert MetricResult.objects.filter(item__run=run).count() == 3 * len(ALL_METRICS)
    with pytest.raises(ValueError, match="only a run that finished with errors"):
        runs.run_rerun_failed(run=run)


def test_run_create_validates_and_enqueues_after_commit(make_dataset, offline_judge, monkeypatch) -> None:
    from evaluations import tasks

    sent: list[int] = []
    monkeypatch.setattr(tasks.run_start_task, "delay", sent.append)
    version = make_dataset(1)

    with pytest.raises(ValueError, match="metrics: unknown metric bleu"):
        runs.run_create(dataset_version=version, judge_config=offline_judge, metrics=["relevancy", "bleu"])
    with pytest.raises(ValueError, match="thresholds.faithfulness"):
        runs.run_create(
            dataset_version=version,
            judge_config=offline_judge,
            metrics=["faithfulness"],
            settings={"thresholds": {"faithfulness": 2}},
        )
    run = runs.run_create(
        dataset_version=version, judge_config=offline_judge, metrics=["relevancy", "relevancy"], settings={"repeats": 2}
    )

    assert sent == [run.pk]
    assert run.metrics == ["relevancy"]
    assert run.settings["repeats"] == 2 and "thresholds" in run.settings
    assert run.status == RunStatus.QUEUED


def test_cancelling_a_queued_run_cancels_it_at_once(make_dataset, offline_judge, monkeypatch) -> None:
    from evaluations import tasks

    monkeypatch.setattr(tasks.run_start_task, "delay", lambda run_id: None)
    run = runs.run_create(dataset_version=make_dataset(1), judge_config=offline_judge, metrics=["retrieval"])

    assert runs.run_cancel(run=run).status == RunStatus.CANCELLED
    with pytest.raises(ValueError, match="only a queued or running run"):
        runs.run_cancel(run=run)
    runs.run_start(run_id=run.pk)  # a late start task does nothing
    assert Run.objects.get(pk=run.pk).status == RunStatus.CANCELLED


def test_reaper_reclaims_expired_leases_and_gives_up_after_max_attempts(
    make_dataset, offline_judge, stub_gateway, settings
) -> None:
    settings.EVALSITE_MAX_ITEM_ATTEMPTS = 3
    run = started_without_workers(make_dataset(3), offline_judge)
    Run.objects.filter(pk=run.pk).update(heartbeat_at=None)  # workers' run now
    first, second, third = RunItem.objects.filter(run=run).order_by("id")
    expired = timezone.now() - timedelta(seconds=1)
    RunItem.objects.filter(pk=first.pk).update(status=ItemStatus.RUNNING, attempts=1, lease_expires_at=expired)
    RunItem.objects.filter(pk=second.pk).update(status=ItemStatus.RUNNING, attempts=3, lease_expires_at=expired)
    RunItem.objects.filter(pk=third.pk).update(
        status=ItemStatus.RUNNING, attempts=1, lease_expires_at=timezone.now() + timedelta(minutes=5)
    )

    report = reaper.runs_reap()

    assert (report.reclaimed, report.abandoned) == (1, 1)
    first.refresh_from_db()
    second.refresh_from_db()
    third.refresh_from_db()
    assert first.status == ItemStatus.PENDING and first.enqueued_at is not None  # fed again
    assert report.fed == 1
    assert second.status == ItemStatus.ERROR and "abandoned after 3 attempts" in second.error
    assert third.status == ItemStatus.RUNNING
    assert Run.objects.get(pk=run.pk).items_failed == 1


def test_reaper_finishes_idle_runs_and_requeues_lost_messages(
    make_dataset, offline_judge, settings, monkeypatch
) -> None:
    from evaluations import tasks

    started: list[int] = []
    monkeypatch.setattr(tasks.run_start_task, "delay", started.append)
    settings.EVALSITE_REQUEUE_AFTER_SECONDS = 60
    version = make_dataset(2)
    long_ago = timezone.now() - timedelta(minutes=5)

    # a run whose last item finished but whose finaliser died
    idle = started_without_workers(version, offline_judge, metrics=["retrieval"])
    RunItem.objects.filter(run=idle).update(status=ItemStatus.DONE)
    Run.objects.filter(pk=idle.pk).update(heartbeat_at=None)
    # a running run whose queued messages were lost
    lost = started_without_workers(version, offline_judge, metrics=["retrieval"])
    RunItem.objects.filter(run=lost).update(enqueued_at=long_ago)
    Run.objects.filter(pk=lost.pk).update(heartbeat_at=None)
    # a queued run whose start message was lost, and a fresh one left alone
    queued = runs.run_create(dataset_version=version, judge_config=offline_judge, metrics=["retrieval"])
    Run.objects.filter(pk=queued.pk).update(created_at=long_ago)
    runs.run_create(dataset_version=version, judge_config=offline_judge, metrics=["retrieval"])
    started.clear()

    report = reaper.runs_reap()

    assert Run.objects.get(pk=idle.pk).status == RunStatus.COMPLETED
    assert (report.finalized, report.requeued, report.restarted) == (1, 2, 1)
    assert started == [queued.pk]
    assert RunItem.objects.filter(run=lost, enqueued_at__gt=long_ago).count() == 2


def test_a_running_run_whose_items_are_not_created_yet_is_not_finished(make_dataset, offline_judge) -> None:
    # given a run between run_start's two steps: running, its items not created yet
    run = runs.run_create(dataset_version=make_dataset(3), judge_config=offline_judge, metrics=["retrieval"])
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)

    # when a reaper pass comes by, it does not finish the run as "0 items, completed"
    reaper.runs_reap()

    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
    runs.run_start(run_id=run.pk)
    assert RunItem.objects.filter(run=run).count() == 3


def test_reaper_tells_a_message_held_by_a_dead_process_from_one_still_queued(make_dataset, offline_judge) -> None:
    # given a running run (its heartbeat stale, as on workers) with four queued, pending items:
    run = started_without_workers(make_dataset(4), offline_judge, metrics=["retrieval"])
    Run.objects.filter(pk=run.pk).update(heartbeat_at=None)
    now = timezone.now()
    orphaned, held, waiting, old = RunItem.objects.filter(run=run).order_by("id")
    RunItem.objects.filter(run=run).update(enqueued_at=now - timedelta(minutes=1))
    # reserved by a process that stopped renewing, reserved by a live one, and two without a lease
    RunItem.objects.filter(pk=orphaned.pk).update(lease_expires_at=now - timedelta(seconds=1))
    RunItem.objects.filter(pk=held.pk).update(lease_expires_at=now + timedelta(seconds=20))
    RunItem.objects.filter(pk=old.pk).update(enqueued_at=now - timedelta(hours=1))

    report = reaper.runs_reap()

    # then the dead process's item is sent again at once; the live one's and the queued one stay;
    # the one queued past EVALSITE_REQUEUE_AFTER_SECONDS with no process holding it is sent again
    assert (report.orphaned, report.requeued) == (1, 1)
    queued_at = dict(RunItem.objects.filter(run=run).values_list("id", "enqueued_at"))
    assert queued_at[orphaned.pk] > now and queued_at[old.pk] > now  # re-fed by the same pass
    assert queued_at[held.pk] < now and queued_at[waiting.pk] < now
    assert RunItem.objects.get(pk=orphaned.pk).lease_expires_at is None


def test_a_task_reserves_its_items_and_the_keeper_renews_them_until_done(
    make_dataset, offline_judge, stub_gateway, settings
) -> None:
    from evaluations import leases

    # given a task of three items (the judge answers slowly), with 3-second leases
    settings.EVALSITE_ITEM_LEASE_SECONDS = 3
    stub_gateway.latency = 1.0
    run = started_without_workers(make_dataset(3), offline_judge, metrics=["relevancy"])
    first, second, third = RunItem.objects.filter(run=run).order_by("id")
    done = in_thread(lambda: item_process_task([first.pk, second.pk, third.pk]))
    thread = threading.Thread(target=done)
    thread.start()

    # while the first item executes, the waiting ones are pending with a lease, and held
    wait_until(lambda: RunItem.objects.filter(pk=first.pk, status=ItemStatus.RUNNING).exists())
    waiting = RunItem.objects.get(pk=third.pk)
    assert waiting.status == ItemStatus.PENDING and waiting.lease_expires_at > timezone.now()
    assert {first.pk, second.pk, third.pk} <= set(leases.keeper.held())
    # and the keeper renews that lease while the item waits its turn (a beat every second here)
    wait_until(
        lambda: RunItem.objects.get(pk=third.pk).lease_expires_at > waiting.lease_expires_at,
        timeout=2,
        message="the waiting item's lease renewed",
    )
    thread.join()

    # then all are done, nothing is held any more
    assert set(RunItem.objects.filter(run=run).values_list("status", flat=True)) == {ItemStatus.DONE}
    assert not {first.pk, second.pk, third.pk} & set(leases.keeper.held())


def test_reaper_leaves_a_live_in_process_run_alone(make_dataset, offline_judge) -> None:
    run = started_without_workers(make_dataset(2), offline_judge)  # heartbeat fresh

    report = reaper.runs_reap()

    assert report.fed == 0
    assert not RunItem.objects.filter(run=run, enqueued_at__isnull=False).exists()


def test_claim_override_recomputes_faithfulness_overall_and_aggregates(
    make_dataset, offline_judge, stub_gateway, make_user
) -> None:
    run = in_process_run(make_dataset(2), offline_judge, metrics=["faithfulness", "rubric"])
    item = RunItem.objects.filter(run=run).order_by("id").first()
    overall_before = item.overall_score
    claim = Claim.objects.get(item=item, position=0)
    reviewer = make_user("reviewer", role="reviewer")

    override = overrides.claim_override(claim=claim, reviewer=reviewer, new_verdict="CONTRADICTED", reason="wrong")

    assert (override.old_verdict, override.new_verdict, override.reviewer) == ("SUPPORTED", "CONTRADICTED", reviewer)
    claim.refresh_from_db()
    assert (claim.judge_verdict, claim.current_verdict) == ("SUPPORTED", "CONTRADICTED")
    faithfulness = MetricResult.objects.get(item=item, metric="faithfulness")
    assert faithfulness.score == 0.5 and faithfulness.passed is False
    assert faithfulness.details["counts"]["CONTRADICTED"] == 1
    assert faithfulness.details["reviewed"]["claims_reviewed"] == 1 and faithfulness.details["judge"]["score"] == 1.0
    item.refresh_from_db()
    assert item.overall_score < overall_before
    run.refresh_from_db()
    assert run.aggregates["metrics"]["faithfulness"]["mean"] == 0.75
    assert run.aggregates["review"]["faithfulness"]["judge"]["mean"] == 1.0
    with pytest.raises(ValueError, match="new_verdict"):
        overrides.claim_override(claim=claim, reviewer=reviewer, new_verdict="MAYBE", reason="unsure")


def test_the_offline_judge_end_to_end_on_the_demo_dataset(transactional_db) -> None:
    # the real gateway and offline provider; max_concurrency 0 (no limit) still gets worker threads
    from pathlib import Path

    from datasets.services import dataset_import
    from judges.services import judge_default_offline

    demo = Path(__file__).resolve().parents[2] / "datasets" / "demo" / "stip-governance.jsonl"
    with demo.open("rb") as handle:
        version = dataset_import(name="demo", file=handle, filename=demo.name).version
    judge = judge_default_offline()
    assert judge.max_concurrency == 0

    run = in_process_run(version, judge)

    assert run.status == RunStatus.COMPLETED, run.error
    assert run.items_done == version.item_count
    assert run.judge_calls > 0 and run.cache_hits == 0
    assert MetricResult.objects.filter(item__run=run).count() == version.item_count * len(ALL_METRICS)
    again = in_process_run(version, judge)
    assert (again.judge_calls, again.cache_hits) == (0, run.judge_calls)


def test_a_run_of_an_empty_selection_completes_at_once(make_dataset, offline_judge, stub_gateway) -> None:
    run = started_without_workers(make_dataset(1), offline_judge, metrics=["retrieval"])
    RunItem.objects.filter(run=run).delete()
    Run.objects.filter(pk=run.pk).update(items_total=0)

    assert runs.run_finalize_if_idle(run_id=run.pk) is True
    assert Run.objects.get(pk=run.pk).status == RunStatus.COMPLETED
    assert runs.run_finalize_if_idle(run_id=run.pk) is False  # exactly once


def test_an_item_costs_a_fixed_number_of_queries_besides_the_judge(
    make_dataset, offline_judge, stub_gateway, django_assert_num_queries
):
    # claim (with the example), run context, the cache lookup of the item's first prompts, and
    # (PostgreSQL) one statement for the final item update, its results and claims, the run's counters;
    # SQLite: BEGIN, final item update, results, claims, run counters, COMMIT
    from evaluations import engine

    run = started_without_workers(make_dataset(2), offline_judge)
    item = RunItem.objects.filter(run=run).first()
    engine._run_contexts.clear()

    with django_assert_num_queries(4 if connection.vendor == "postgresql" else 9):
        assert item_execute(item.pk).outcome == ItemOutcome.DONE


def test_the_in_process_executor_stops_when_no_item_can_be_executed(make_dataset, offline_judge, monkeypatch) -> None:
    # A broken database, say: every claim raises. The executor must give up, not retry forever.
    from django.db import OperationalError

    from evaluations import engine

    def broken_claim(item_id: int, lease_seconds: float) -> None:
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(engine, "_claim", broken_claim)
    run = runs.run_create(
        dataset_version=make_dataset(3), judge_config=offline_judge, metrics=["retrieval"], enqueue=False
    )
    with pytest.raises(executor.ExecutorError, match="server closed the connection"):
        executor.run_execute_in_process(run=run, workers=2)
    assert set(RunItem.objects.filter(run=run).values_list("status", flat=True)) == {ItemStatus.PENDING}


def test_an_item_waiting_for_a_rate_limit_slot_keeps_its_lease(
    make_dataset, fake_llm, make_fake_judge, settings
) -> None:
    # given a judge whose only slot is held elsewhere, and 3-second item leases
    from judges import ratelimit

    settings.EVALSITE_ITEM_LEASE_SECONDS = 3
    judge = make_fake_judge(fake_llm(), max_concurrency=1)
    run = started_without_workers(make_dataset(1), judge, metrics=["relevancy"])
    item = RunItem.objects.get(run=run)
    holder = ratelimit.acquire(judge, tokens=1)

    # when the item waits for the slot longer than its lease
    outcome: list[ItemOutcome] = []
    worker = threading.Thread(target=in_thread(lambda: outcome.append(item_execute(item.pk).outcome)))
    worker.start()
    wait_until(lambda: RunItem.objects.get(pk=item.pk).status == ItemStatus.RUNNING, message="item claimed")
    claimed_lease = RunItem.objects.get(pk=item.pk).lease_expires_at
    time.sleep(4.5)
    waiting = RunItem.objects.get(pk=item.pk)
    holder.release()
    worker.join(30)

    # then its lease was renewed meanwhile (the reaper would not take it), and it finishes as its first attempt
    assert waiting.status == ItemStatus.RUNNING
    assert waiting.lease_expires_at > claimed_lease and waiting.lease_expires_at > timezone.now() - timedelta(seconds=1)
    assert outcome == [ItemOutcome.DONE]
    assert RunItem.objects.get(pk=item.pk).attempts == 1


def test_an_items_judge_calls_are_findable_by_its_run_item_id(make_dataset, offline_judge) -> None:
    from judges.models import JudgeCall

    # given a running run of two different items, through the real gateway and the offline judge
    run = started_without_workers(make_dataset(2), offline_judge, metrics=["relevancy", "correctness"])
    first, second = RunItem.objects.filter(run=run).order_by("id")

    # when both items are executed
    assert item_execute(first.pk).outcome == ItemOutcome.DONE
    assert item_execute(second.pk).outcome == ItemOutcome.DONE

    # then each item's JudgeCall rows carry its id (and the run's), one per judge prompt it sent
    for item in (first, second):
        calls = JudgeCall.objects.filter(run_item_id=item.pk)
        assert sorted(calls.values_list("prompt_name", flat=True)) == ["correctness", "relevancy"]
        assert set(calls.values_list("run_id", flat=True)) == {run.pk}
    assert not JudgeCall.objects.filter(run_id=run.pk, run_item_id__isnull=True).exists()
