"""run_start: the run turns running only together with its items."""

from __future__ import annotations

import pytest

from evaluations.models import RunItem, RunStatus
from evaluations.services import runs
from evaluations.services.runs import run_create


def test_a_failure_while_creating_items_leaves_the_run_queued_with_no_items(make_dataset, offline_judge, monkeypatch):
    # given a queued run
    version = make_dataset(5)
    run = run_create(dataset_version=version, judge_config=offline_judge, metrics=["citation_audit"], enqueue=False)

    def broken(version_id: int):
        raise RuntimeError("database went away")

    monkeypatch.setattr(runs, "version_example_ids", broken)

    # when starting it fails half-way
    with pytest.raises(RuntimeError):
        runs.run_start(run_id=run.pk)

    # then no reaper can see a running run without items
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.started_at is None
    assert not RunItem.objects.filter(run=run).exists()
