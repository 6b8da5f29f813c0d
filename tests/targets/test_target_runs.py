"""Runs with a live target: the demo RAG server started by the test, real Celery workers or `evaluate --in-process`."""

from __future__ import annotations

import io
import json
import socket
from datetime import timedelta

import pytest
from django.core import serializers
from django.core.management import CommandError, call_command
from django.utils import timezone

from datasets.services import dataset_import
from evaluations.models import ItemStatus, MetricResult, Run, RunItem, RunStatus
from evaluations.services import runs
from judges.models import JudgeCall
from targets.models import SnapshotStatus, Target, TargetSnapshot
from targets.services import target_update
from tests.evaluations.conftest import REPO
from tests.evaluations.helpers import script_file, wait_for_run, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

DEMO_DATASET = REPO / "datasets" / "demo" / "stip-governance.jsonl"
ALL_METRICS = ["faithfulness", "relevancy", "rubric", "correctness", "citation_audit", "retrieval"]
SECRET = "s3cret-token-for-the-demo-rag-4711"


def demo_version():
    with DEMO_DATASET.open("rb") as handle:
        return dataset_import(name="stip-governance", file=handle, filename=DEMO_DATASET.name).version


def stored_text() -> str:
    """Every row a target run writes, as JSON text (to look for a secret in it)."""
    models = (Target, TargetSnapshot, Run, RunItem, MetricResult, JudgeCall)
    return "".join(serializers.serialize("json", model.objects.all()) for model in models)


@pytest.mark.sqlite  # also on the embedded path (SQLite, filesystem broker) in make test's second pass
def test_a_run_with_a_target_on_a_worker_scores_what_the_target_answered(
    demo_rag, make_target, offline_judge, celery_worker, monkeypatch
):
    # given the demo RAG server wanting a bearer token, and a target that reads it from the environment
    monkeypatch.setenv("DEMO_RAG_TOKEN", SECRET)
    server = demo_rag("--token-env", "DEMO_RAG_TOKEN", "--latency-ms", "20")
    target = make_target(server.url, headers={"Authorization": {"env": "DEMO_RAG_TOKEN", "format": "Bearer {}"}})
    version = demo_version()
    celery_worker(concurrency=4)  # inherits DEMO_RAG_TOKEN from this process's environment

    # when a run names the target
    run = runs.run_create(dataset_version=version, judge_config=offline_judge, metrics=ALL_METRICS, target=target)
    run = wait_for_run(run, timeout=90)

    # then every item was answered by the target (once) and scored on that answer
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.items_done == version.item_count
    snapshots = list(TargetSnapshot.objects.filter(item__run=run).select_related("item__example"))
    assert len(snapshots) == version.item_count
    assert all(snapshot.status == SnapshotStatus.OK for snapshot in snapshots)
    assert set(server.stats()["by_id"].values()) == {1}
    assert server.stats()["max_in_flight"] <= target.max_concurrency  # the target's own limit held
    for snapshot in snapshots:
        example = snapshot.item.example
        assert snapshot.answer != example.response  # the target's answer, not the dataset's
        assert snapshot.answer.endswith(f"[{snapshot.retrieved_ids[0]}]")
        assert snapshot.retrieved_ids == [context["id"] for context in snapshot.contexts]
        assert snapshot.latency_ms is not None and snapshot.http_status == 200
        assert json.loads(snapshot.raw_body)["answer"] == snapshot.answer
        retrieval = MetricResult.objects.get(item=snapshot.item, metric="retrieval")
        # the dataset's expected ids against the target's ranking
        expected = set(example.expected_context_ids)
        if expected:
            first_hit = next((i for i, cid in enumerate(snapshot.retrieved_ids, 1) if cid in expected), None)
            assert retrieval.score == pytest.approx(1 / first_hit if first_hit else 0.0)
    summary = run.aggregates["target"]
    assert summary["calls"] == version.item_count and summary["errors"] == 0
    assert 0 < summary["latency_ms"]["p50"] <= summary["latency_ms"]["p95"] <= summary["latency_ms"]["max"]
    # the run keeps the target's configuration as it called it
    assert run.target_config["url"] == server.url
    assert run.target_config["headers"] == {"Authorization": {"env": "DEMO_RAG_TOKEN", "format": "Bearer {}"}}

    # and the secret was sent (the server accepted it) but is stored nowhere
    assert SECRET not in stored_text()
    assert snapshots[0].request["headers"] == {"Authorization": "${DEMO_RAG_TOKEN}"}

    # and a later edit of the target changes neither the snapshots nor the run's record of it
    target_update(target=target, url="http://127.0.0.1:9/query", response_mapping={"answer": "other"})
    assert Run.objects.get(pk=run.pk).target_config["url"] == server.url
    again = TargetSnapshot.objects.get(pk=snapshots[0].pk)
    assert (again.answer, again.contexts) == (snapshots[0].answer, snapshots[0].contexts)


def test_500s_timeouts_and_mapping_errors_are_item_errors_and_the_run_carries_on(
    demo_rag, make_target, make_dataset, offline_judge
):
    # given a server that always fails q-2 (500) and answers q-3 too late for the target's timeout
    server = demo_rag("--fail-ids", "q-2", "--slow-ids", "q-3", "--slow-ms", "3000")
    make_target(server.url, name="flaky", timeout_seconds=0.5)
    make_dataset(5, name="five")
    out = io.StringIO()

    # when evaluate --target runs it in process
    with pytest.raises(CommandError, match="items in error"):
        call_command(
            "evaluate", "--dataset", "five", "--judge", offline_judge.name, "--metrics", "relevancy,retrieval",
            "--target", "flaky", "--in-process", "--no-progress", stdout=out, stderr=io.StringIO(),
        )  # fmt: skip

    # then those two items are errors with the target's message, retried first; the rest are scored
    run = Run.objects.get(target__name="flaky")
    assert run.status == RunStatus.COMPLETED_WITH_ERRORS
    assert (run.items_done, run.items_failed) == (3, 2)
    errors = dict(RunItem.objects.filter(run=run, status=ItemStatus.ERROR).values_list("example__external_id", "error"))
    assert set(errors) == {"q-2", "q-3"}
    assert "HTTP 500" in errors["q-2"] and "internal error answering q-2" in errors["q-2"]
    assert "no answer within 0.5 s" in errors["q-3"]
    assert "after 4 attempts" in errors["q-2"] and "after 4 attempts" in errors["q-3"]
    assert server.stats()["by_id"]["q-2"] == 4
    assert run.aggregates["target"]["errors"] == 2
    assert "target: 5 calls, 2 errors; latency p50" in out.getvalue()
    assert not MetricResult.objects.filter(item__run=run, item__status=ItemStatus.ERROR).exists()

    # when a target's mapping finds nothing, every item says which mapping and what came back
    make_target(server.url, name="wrong-mapping", response_mapping={"answer": "result.text"})
    with pytest.raises(CommandError, match="failed"):
        call_command(
            "evaluate", "--dataset", "five", "--judge", offline_judge.name, "--metrics", "relevancy",
            "--target", "wrong-mapping", "--in-process", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO(),
        )  # fmt: skip
    run = Run.objects.get(target__name="wrong-mapping")
    assert run.status == RunStatus.FAILED
    first = RunItem.objects.filter(run=run, example__external_id="q-1").get()
    assert "mapping answer: `result.text` found nothing in the response; the body: {" in first.error
    assert TargetSnapshot.objects.get(item=first).http_status == 200


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_rerun_failed_asks_the_target_again(demo_rag, make_target, make_dataset, offline_judge):
    # given a run whose target was down
    port = free_port()
    target = make_target(f"http://127.0.0.1:{port}/query", name="down")
    version = make_dataset(3)
    run = runs.run_create(
        dataset_version=version, judge_config=offline_judge, metrics=["retrieval"], target=target, enqueue=False
    )
    from evaluations.services.executor import run_execute_in_process

    run = run_execute_in_process(run=run)
    assert run.status == RunStatus.FAILED and "ConnectError" in run.error

    # when the target is back and the failures re-run
    server = demo_rag("--port", str(port))
    runs.run_rerun_failed(run=run)
    RunItem.objects.filter(run=run).update(enqueued_at=None)
    run = run_execute_in_process(run=Run.objects.get(pk=run.pk))

    # then each item was asked again and scored
    assert run.status == RunStatus.COMPLETED, run.error
    assert set(TargetSnapshot.objects.filter(item__run=run).values_list("status", flat=True)) == {SnapshotStatus.OK}
    assert sum(server.stats()["by_id"].values()) == 3


def test_a_worker_killed_mid_run_does_not_call_the_target_again_for_snapshotted_items(
    demo_rag, make_target, make_dataset, fake_llm, make_fake_judge, celery_worker, tmp_path
):
    # given items that spend ~4 s in the judge after their (fast) target call, on a worker
    server = demo_rag("--latency-ms", "20")
    target = make_target(server.url, max_concurrency=4)
    judge = make_fake_judge(fake_llm("--script", script_file(tmp_path / "s.jsonl"), latency_ms=4000), max_concurrency=4)
    first = celery_worker(concurrency=4)
    run = runs.run_create(dataset_version=make_dataset(16), judge_config=judge, metrics=["relevancy"], target=target)
    wait_until(lambda: Run.objects.get(pk=run.pk).items_done >= 2, timeout=60, message="a few items done")

    def snapshotted_running(since: float | None = None) -> set[int]:
        running = RunItem.objects.filter(run=run, status=ItemStatus.RUNNING, target_snapshot__isnull=False)
        if since is not None:  # snapshotted less than `since` seconds ago: seconds of judge time left
            running = running.filter(target_snapshot__created_at__gte=timezone.now() - timedelta(seconds=since))
        return set(running.values_list("id", flat=True))

    # (an item snapshotted a moment ago, so it is still in the judge when the kill lands, even on a loaded machine)
    wait_until(lambda: bool(snapshotted_running(since=1.5)), message="an item with its snapshot, still in the judge")

    # when the worker is killed by SIGKILL and another one takes over
    first.kill()
    held = snapshotted_running()
    assert held, list(RunItem.objects.filter(run=run).values_list("status", "target_snapshot__status"))
    before = {s.item_id: (s.pk, s.created_at, s.answer) for s in TargetSnapshot.objects.filter(item_id__in=held)}
    celery_worker(concurrency=4)
    run = wait_for_run(run, timeout=150)

    # then the run completes, the killed items ran again, but reused their snapshots
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.items_done == 16
    assert {item.attempts for item in RunItem.objects.filter(pk__in=held)} == {2}
    after = {s.item_id: (s.pk, s.created_at, s.answer) for s in TargetSnapshot.objects.filter(item_id__in=held)}
    assert after == before
    calls = server.stats()["by_id"]
    for external_id in RunItem.objects.filter(pk__in=held).values_list("example__external_id", flat=True):
        assert calls[external_id] == 1, external_id
    assert TargetSnapshot.objects.filter(item__run=run).count() == 16
