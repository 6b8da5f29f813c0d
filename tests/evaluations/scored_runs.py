"""Finished runs written straight to the database (bulk inserts, no judge): for comparison and agreement
tests and for bench/compare.py.

    run = scored_run(version, judge, {
        "q-1": {"faithfulness": 0.9, "relevancy": 1.0, "overall": 0.85},
        "q-2": ERROR,                                    # the item errored
        "q-3": {"faithfulness": None},                   # skipped (a row without a score)
        "q-4": {"claims": [("The river rose.", "SUPPORTED", "CONTRADICTED")]},
    })

Examples of `version` not named get no item. A metric's `passed` is its score against the run's
threshold; `prompt_versions` maps a metric to the version its rows record (default "1").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.utils import timezone

from datasets.models import DatasetVersion
from evaluations.models import Claim, ItemStatus, MetricResult, Run, RunItem, RunStatus
from evaluations.services.runs import run_create
from judges.models import JudgeConfig

ERROR = "error"
BATCH_SIZE = 2000


def scored_run(
    version: DatasetVersion,
    judge: JudgeConfig,
    items: Mapping[str, Mapping[str, Any] | str],
    *,
    metrics: Sequence[str] = ("faithfulness", "relevancy"),
    settings: Mapping[str, Any] | None = None,
    prompt_versions: Mapping[str, str] | None = None,
    name: str = "",
) -> Run:
    run = run_create(
        dataset_version=version, judge_config=judge, metrics=metrics, settings=settings, name=name, enqueue=False
    )
    examples = dict(version.examples.values_list("external_id", "id"))
    now = timezone.now()
    run_items = RunItem.objects.bulk_create(
        [
            RunItem(
                run=run,
                example_id=examples[external_id],
                status=ItemStatus.ERROR if scores == ERROR else ItemStatus.DONE,
                error="judge 'x': HTTP 500" if scores == ERROR else "",
                overall_score=None if scores == ERROR else scores.get("overall"),
                finished_at=now,
            )
            for external_id, scores in items.items()
        ],
        batch_size=BATCH_SIZE,
    )
    thresholds = run.settings["thresholds"]
    results, claims = [], []
    for item, scores in zip(run_items, items.values(), strict=True):
        if scores == ERROR:
            continue
        for metric, score in scores.items():
            if metric == "claims":
                claims += [
                    Claim(item=item, position=position, text=text, judge_verdict=judge_verdict, current_verdict=current)
                    for position, (text, judge_verdict, current) in enumerate(score, start=1)
                ]
            elif metric != "overall":
                threshold = thresholds.get(metric)
                results.append(
                    MetricResult(
                        item=item,
                        metric=metric,
                        score=score,
                        passed=None if score is None or threshold is None else score >= threshold,
                        threshold=threshold,
                        prompt_version=(prompt_versions or {}).get(metric, "1"),
                        skipped_reason="" if score is not None else "not applicable",
                    )
                )
    MetricResult.objects.bulk_create(results, batch_size=BATCH_SIZE)
    Claim.objects.bulk_create(claims, batch_size=BATCH_SIZE)
    failed = sum(1 for scores in items.values() if scores == ERROR)
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.COMPLETED_WITH_ERRORS if failed else RunStatus.COMPLETED,
        items_done=len(items) - failed,
        items_failed=failed,
        started_at=now,
        finished_at=now,
    )
    run.refresh_from_db()
    return run
