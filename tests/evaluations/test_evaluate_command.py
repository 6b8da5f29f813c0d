"""`manage.py evaluate`: arguments, exit status, summary, --json, and --wait without a worker."""

from __future__ import annotations

import io
import json
import time

import pytest
from django.core.management import CommandError, call_command

from evaluations.gates import parse_fail_under
from evaluations.models import Run, RunStatus
from tests.evaluations.helpers import example

pytestmark = pytest.mark.django_db(transaction=True)


def evaluate(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def exit_status(*args: str) -> tuple[int, str]:
    with pytest.raises(CommandError) as caught:
        evaluate(*args)
    return caught.value.returncode, str(caught.value)


@pytest.fixture
def dataset(make_dataset):
    make_dataset(3, name="river")
    return make_dataset([example(1), example(2), example(3), example(4)], name="river")  # version 2


def test_in_process_run_passing_its_bars_exits_0(dataset, offline_judge, stub_gateway, tmp_path) -> None:
    report = tmp_path / "report.json"

    out, err = evaluate(
        "--dataset", "river", "--judge", "offline-test", "--metrics", "faithfulness,relevancy,rubric,correctness",
        "--in-process", "--fail-under", "faithfulness=0.8,overall=0.7,correctness=4", "--json", str(report),
    )  # fmt: skip

    run = Run.objects.get()
    assert run.status == RunStatus.COMPLETED
    assert run.dataset_version == dataset and run.items_done == 4
    assert "faithfulness" in out and "citation_audit" in out and "overall" in out
    assert "with judge offline-test (offline heuristic, not an LLM)" in out
    assert "PASS faithfulness 1.000 (bar 0.8)" in out
    assert "4/4 items" in err  # the progress bar
    document = json.loads(report.read_text())
    assert document["run"]["status"] == "completed" and document["exit_code"] == 0
    assert {row["metric"] for row in document["summary"]} >= {"faithfulness", "relevancy", "overall"}
    assert document["fail_under"][0] == {"metric": "faithfulness", "bar": 0.8, "value": 1.0, "passed": True}
    assert document["aggregates"]["metrics"]["correctness"]["mean"] == 4.5


def test_a_metric_without_a_threshold_shows_a_dash_not_a_pass_rate(dataset, offline_judge, stub_gateway) -> None:
    out, _ = evaluate(
        "--dataset", "river", "--judge", "offline-test", "--metrics", "citation_audit,retrieval", "--in-process",
        "--run-settings", '{"thresholds": {"citation_audit": null}}',
    )  # fmt: skip

    rows = {
        line.split()[0]: line.split()
        for line in out.splitlines()
        if line.split()[:1] in (["citation_audit"], ["retrieval"])
    }
    assert rows["citation_audit"][1:3] == ["1.000", "–"]  # every sentence cites a context; no bar, so no pass rate
    assert rows["retrieval"][1:3] == ["1.000", "1.000"]
    aggregates = Run.objects.get().aggregates["metrics"]
    assert aggregates["citation_audit"]["pass_rate"] is None and aggregates["citation_audit"]["passed"] == 0


def test_a_bar_not_reached_exits_1(dataset, offline_judge, stub_gateway, tmp_path) -> None:
    report = tmp_path / "report.json"

    status, message = exit_status(
        "--dataset", "river@1", "--judge", "offline-test", "--metrics", "correctness,relevancy",
        "--in-process", "--fail-under", "correctness=4.8,relevancy=1", "--json", str(report),
    )  # fmt: skip

    assert status == 1
    assert "correctness 4.500 < 4.8" in message and "relevancy" not in message
    assert json.loads(report.read_text())["exit_code"] == 1
    assert Run.objects.get().dataset_version.number == 1
    # No rubric, no overall score: the summary has no empty "overall" row.
    assert [row["metric"] for row in json.loads(report.read_text())["summary"]] == ["correctness", "relevancy"]


def test_items_in_error_exit_2_unless_allowed(make_dataset, offline_judge, stub_gateway) -> None:
    make_dataset([example(1), example(2, query="FAIL here")], name="flaky")
    args = ("--dataset", "flaky", "--judge", "offline-test", "--metrics", "relevancy", "--in-process")

    status, message = exit_status(*args)
    assert status == 2 and "1 items in error" in message and "HTTP 500" in message

    out, _ = evaluate(*args, "--allow-errors", "--fail-under", "relevancy=1")
    assert "PASS relevancy" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "nope"], "--dataset: unknown dataset 'nope' (known: river)"),
        (["--dataset", "river@7"], "--dataset: unknown version 7 of 'river' (versions: 1, 2)"),
        (["--dataset", "river@x"], "--dataset: version 'x' is not a number"),
        (["--judge", "gpt-99"], "--judge: unknown judge 'gpt-99' (known: offline-test)"),
        (["--metrics", "relevancy,bleu"], "--metrics: unknown metric bleu"),
        (["--metrics", ""], "--metrics: give at least one"),
        (["--fail-under", "relevancy>0.5"], "--fail-under: 'relevancy>0.5' is not METRIC=NUMBER"),
        (["--fail-under", "relevancy=high"], "--fail-under: 'relevancy=high' is not METRIC=NUMBER"),
        (["--fail-under", "faithfulness=0.8"], "--fail-under: metric 'faithfulness' is not run"),
        (["--fail-under", "overall=0.5"], "--fail-under: overall needs the rubric metric"),
        (["--run-settings", "{repeats: 3}"], "--run-settings: not valid JSON"),
        (["--run-settings", '{"repeats": 0}'], "--run-settings: repeats: must be between 1 and 10"),
        (["--run-settings", '{"temperature": 1}'], "--run-settings: temperature: unknown setting"),
        (["--workers", "0"], "--workers: must be at least 1"),
    ],
)
def test_bad_arguments_exit_2_naming_the_argument(dataset, offline_judge, args, message) -> None:
    defaults = {"--dataset": "river", "--judge": "offline-test", "--metrics": "relevancy"}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        defaults[flag] = value

    status, text = exit_status(*[part for pair in defaults.items() for part in pair], "--in-process")

    assert status == 2
    assert message in text
    assert not Run.objects.exists()


def test_wait_without_a_worker_gives_up_with_a_message(dataset, offline_judge, settings) -> None:
    settings.EVALSITE_QUEUE_TIMEOUT_SECONDS = 1
    started = time.monotonic()

    status, message = exit_status("--dataset", "river", "--judge", "offline-test", "--metrics", "relevancy", "--wait")

    assert status == 2
    assert "no worker picked up run" in message and "within 1 s" in message
    assert time.monotonic() - started < 10
    assert Run.objects.get().status == RunStatus.QUEUED


def test_without_wait_the_run_is_queued_for_the_workers(dataset, offline_judge, monkeypatch) -> None:
    from evaluations import tasks

    sent: list[int] = []
    monkeypatch.setattr(tasks.run_start_task, "delay", sent.append)

    out, _ = evaluate("--dataset", "river", "--judge", "offline-test", "--metrics", "relevancy")

    run = Run.objects.get()
    assert sent == [run.pk]
    assert f"run {run.pk} queued for the workers" in out


def test_parse_fail_under() -> None:
    bars = parse_fail_under(" faithfulness=0.8, overall=0.7 ,")

    assert [(bar.name, bar.minimum) for bar in bars] == [("faithfulness", 0.8), ("overall", 0.7)]
    with pytest.raises(ValueError, match="at least one"):
        parse_fail_under(",")
