"""The embedded default end to end: SQLite (a file) and the filesystem broker, as `make run` serves them.

Import a dataset → a run executed by a real Celery worker process on the filesystem broker →
results in the database. Runs in `make test`'s SQLite pass (`-m sqlite`, DATABASE_URL=sqlite:///...,
CELERY_BROKER_URL=filesystem://localhost/); skipped on other databases or brokers, where
test_worker.py covers the same path.
"""

from __future__ import annotations

import io
import json

import pytest
from django.conf import settings
from django.db import connection

from datasets.services import dataset_import
from evaluations.models import MetricResult, RunItem, RunStatus
from evaluations.services import runs
from judges.models import JudgeCall
from tests.evaluations.helpers import example, wait_for_run

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.sqlite,
    pytest.mark.slow,
    pytest.mark.skipif(
        connection.vendor != "sqlite" or not settings.CELERY_BROKER_URL.startswith("filesystem://"),
        reason="the embedded path: needs DATABASE_URL=sqlite:///FILE and CELERY_BROKER_URL=filesystem://",
    ),
]

METRICS = ["faithfulness", "relevancy", "rubric", "correctness", "retrieval"]


def test_import_then_a_run_on_a_worker_over_the_filesystem_broker(offline_judge, celery_worker) -> None:
    # given a dataset imported from JSONL and a worker on the filesystem broker
    content = "".join(json.dumps(example(n)) + "\n" for n in range(1, 7)).encode()
    version = dataset_import(name="embedded", file=io.BytesIO(content), filename="data.jsonl", fmt="jsonl").version
    celery_worker(concurrency=4)

    # when a run is created (queued for the workers)
    run = runs.run_create(dataset_version=version, judge_config=offline_judge, metrics=METRICS)
    run = wait_for_run(run, timeout=120)

    # then every item was scored once per metric (citation_audit rides along with the rubric)
    assert run.status == RunStatus.COMPLETED, run.error
    assert (run.items_total, run.items_done, run.items_failed) == (6, 6, 0)
    assert MetricResult.objects.filter(item__run=run).count() == 6 * (len(METRICS) + 1)
    assert not RunItem.objects.filter(run=run, overall_score__isnull=True).exists()
    assert run.aggregates["metrics"]["relevancy"]["covered"] == 6
    # and the offline judge's calls were logged against their items
    items = set(RunItem.objects.filter(run=run).values_list("id", flat=True))
    assert set(JudgeCall.objects.filter(run_id=run.pk).values_list("run_item_id", flat=True)) <= items
