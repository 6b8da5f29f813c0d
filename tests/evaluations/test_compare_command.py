"""`manage.py compare`: the table, --json, and exit status 0 / 1 (significant regression) / 2 (bad arguments)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from tests.evaluations.conftest import REPO, worker_env
from tests.evaluations.scored_runs import scored_run


def compare(*args: object) -> str:
    out = io.StringIO()
    call_command("compare", *map(str, args), stdout=out)
    return out.getvalue()


def exit_status(*args: object) -> tuple[int, str]:
    with pytest.raises(CommandError) as caught:
        compare(*args)
    return caught.value.returncode, str(caught.value)


@pytest.fixture
def runs(make_dataset, offline_judge):
    """base, a candidate whose faithfulness dropped on every item, and an identical candidate."""
    version = make_dataset(30, name="river")
    base_scores = {f"q-{n}": {"faithfulness": 0.9, "relevancy": 1.0} for n in range(1, 31)}
    dropped = {key: {"faithfulness": 0.6 + 0.005 * n, "relevancy": 1.0} for n, key in enumerate(base_scores)}
    return (
        scored_run(version, offline_judge, base_scores, name="base"),
        scored_run(version, offline_judge, dropped, name="new prompt"),
        scored_run(version, offline_judge, base_scores, name="same"),
    )


def test_no_regression_exits_0_and_prints_the_table(runs) -> None:
    base, _, same = runs

    out = compare(base.pk, same.pk, "--fail-on-regression", "faithfulness,relevancy")

    assert f"base      run {base.pk} (base): river@1, judge offline-test" in out
    assert "faithfulness" in out and "relevancy" in out and "95% CI" in out
    assert "30 examples matched; 0 only in the base run, 0 only in the candidate" in out
    assert "no significant regression in faithfulness, relevancy" in out


def test_a_significant_drop_of_a_named_metric_exits_1_and_writes_json(runs, tmp_path) -> None:
    base, dropped, _ = runs
    report = tmp_path / "comparison.json"

    code, message = exit_status(base.pk, dropped.pk, "--fail-on-regression", "faithfulness", "--json", report)

    assert code == 1 and message.startswith("significant regression: faithfulness -0.")
    document = json.loads(report.read_text())
    assert document["exit_code"] == 1 and document["fail_on_regression"] == ["faithfulness"]
    faithfulness = next(entry for entry in document["metrics"] if entry["metric"] == "faithfulness")
    assert faithfulness["significant"] and faithfulness["delta"] < 0


def test_a_drop_of_a_metric_not_named_exits_0(runs) -> None:
    base, dropped, _ = runs

    out = compare(base.pk, dropped.pk, "--fail-on-regression", "relevancy")

    assert "no significant regression in relevancy" in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (lambda base, other: (base, 999_999), "candidate: no run with id 999999"),
        (lambda base, other: ("abc", base), "BASE_RUN: 'abc' is not a run id"),
        (
            lambda base, other: (base, other, "--fail-on-regression", "fluency"),
            "--fail-on-regression: fluency not compared",
        ),
        (lambda base, other: (base, other, "--fail-on-regression", ","), "give at least one metric name"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(runs, arguments, message) -> None:
    base, other, _ = runs

    code, text = exit_status(*arguments(base.pk, other.pk))

    assert code == 2 and message in text


def test_runs_of_different_datasets_exit_2(runs, make_dataset, offline_judge) -> None:
    lake = scored_run(make_dataset(2, name="lake"), offline_judge, {"q-1": {"faithfulness": 1.0}})

    code, text = exit_status(runs[0].pk, lake.pk)

    assert code == 2 and "different datasets ('river' and 'lake')" in text


def test_the_process_exit_status_is_1_on_a_regression(runs) -> None:
    base, dropped, _ = runs
    command = [
        sys.executable,
        "manage.py",
        "compare",
        str(base.pk),
        str(dropped.pk),
        "--fail-on-regression",
        "faithfulness",
    ]

    result = subprocess.run(command, cwd=REPO, env=worker_env(), capture_output=True, text=True, timeout=120)

    assert result.returncode == 1, result.stdout + result.stderr
    assert "significant regression: faithfulness" in result.stderr
