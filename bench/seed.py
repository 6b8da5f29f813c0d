"""A finished run written straight to the database (no judge): for bench/ui.py and the run-page tests.

Deterministic: item n gets scores derived from n, three claims with a rotation of verdicts, tags
from a fixed list, and a few errored items. `build_aggregates` (the engine's own) fills
Run.aggregates as a finished run has them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from datasets.models import Dataset, DatasetVersion, Example
from evaluations.models import Claim, ItemStatus, MetricResult, Run, RunItem, RunStatus, Verdict
from evaluations.services.runs import build_aggregates
from judges.models import JudgeConfig, Provider

METRICS = ["faithfulness", "relevancy", "rubric", "correctness"]
TAGS = ["factual", "numeric", "multi-hop", "policy", "dates"]
VERDICT_CYCLE = [
    Verdict.SUPPORTED,
    Verdict.SUPPORTED,
    Verdict.PARTIALLY_SUPPORTED,
    Verdict.CONTRADICTED,
    Verdict.NOT_ENOUGH_INFO,
]
BATCH = 2000


def _share(n: int, salt: str) -> float:
    """A stable pseudo-random number in [0, 1) for item n."""
    digest = hashlib.blake2b(f"{salt}:{n}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") / 2**32


@transaction.atomic
def seed_finished_run(
    items: int,
    *,
    name: str = "seeded",
    error_every: int = 50,
    text: Callable[[int], dict[str, str]] | None = None,
    judge: JudgeConfig | None = None,
    version: DatasetVersion | None = None,
    salt: str = "",
) -> Run:
    """A completed run of `items` items with METRICS, claims and aggregates; every `error_every`-th item errored.

    `version`: a second run of that dataset version (no new dataset); `salt` varies its scores, so two
    runs of one version differ the way a base and a candidate do (bench/ui.py's comparison page).
    """
    if version is None:
        version = _seed_version(items, name, text or _text)
    judge = (
        judge
        or JudgeConfig.objects.get_or_create(
            name="offline", defaults={"provider": Provider.OFFLINE, "model": "heuristic-v1", "max_concurrency": 0}
        )[0]
    )
    now = timezone.now()
    run = Run.objects.create(
        name=name,
        dataset_version=version,
        judge_config=judge,
        metrics=METRICS,
        status=RunStatus.RUNNING,
        items_total=items,
        started_at=now - timedelta(seconds=items / 40),
        judge_calls=items * 5,
        cache_hits=items // 10,
        input_tokens=items * 2400,
        output_tokens=items * 300,
    )
    examples = Example.objects.filter(version=version).order_by("position").values_list("id", "position")
    RunItem.objects.bulk_create(
        [
            RunItem(
                run=run,
                example_id=example_id,
                status=ItemStatus.ERROR if error_every and position % error_every == 0 else ItemStatus.DONE,
                error="judge reply could not be parsed" if error_every and position % error_every == 0 else "",
                overall_score=None
                if error_every and position % error_every == 0
                else round(_share(position, f"{salt}o"), 4),
                finished_at=now,
            )
            for example_id, position in examples
        ],
        batch_size=BATCH,
    )
    done = list(
        RunItem.objects.filter(run=run, status=ItemStatus.DONE).values_list("id", "example__position").order_by("id")
    )
    MetricResult.objects.bulk_create(
        [result for item_id, position in done for result in _results(item_id, position, salt)], batch_size=BATCH
    )
    Claim.objects.bulk_create(
        [
            Claim(
                item_id=item_id,
                position=k,
                text=f"Claim {k} of item {position}.",
                judge_verdict=VERDICT_CYCLE[(position + k) % len(VERDICT_CYCLE)],
                current_verdict=VERDICT_CYCLE[(position + k) % len(VERDICT_CYCLE)],
                evidence="Context says so.",
                context_ids=["c1"],
            )
            for item_id, position in done
            for k in range(1, 4)
        ],
        batch_size=BATCH,
    )
    errored = items - len(done)
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.COMPLETED_WITH_ERRORS if errored else RunStatus.COMPLETED,
        items_done=len(done),
        items_failed=errored,
        finished_at=now,
    )
    run.refresh_from_db()
    Run.objects.filter(pk=run.pk).update(aggregates=build_aggregates(run))
    run.refresh_from_db()
    return run


def _seed_version(items: int, name: str, texts: Callable[[int], dict[str, str]]) -> DatasetVersion:
    dataset = Dataset.objects.create(name=f"{name}-{timezone.now().timestamp()}")
    version = DatasetVersion.objects.create(
        dataset=dataset,
        number=1,
        content_sha256=hashlib.sha256(dataset.name.encode()).hexdigest(),
        source_format="jsonl",
        item_count=items,
    )
    Example.objects.bulk_create(
        [
            Example(
                version=version,
                position=n,
                external_id=f"q-{n}",
                contexts=[{"id": "c1", "text": f"Context {n}."}],
                tags=[TAGS[n % len(TAGS)], *([TAGS[(n + 2) % len(TAGS)]] if n % 3 == 0 else [])],
                expected_context_ids=["c1"],
                **texts(n),
            )
            for n in range(1, items + 1)
        ],
        batch_size=BATCH,
    )
    return version


def _text(n: int) -> dict[str, str]:
    return {
        "query": f"What did report {n} find about the river level?",
        "response": f"Report {n} found the river rose by {n % 90} cm in spring [c1].",
        "reference_answer": f"The river rose by {n % 90} cm.",
    }


def _results(item_id: int, position: int, salt: str = "") -> list[MetricResult]:
    faithfulness = round(_share(position, f"{salt}f"), 4)
    rubric = round(_share(position, f"{salt}r"), 4)
    correctness = round(1 + 4 * _share(position, f"{salt}c"), 2)
    relevant = _share(position, f"{salt}y") > 0.2
    details: dict[str, Any] = {"n_claims": 3}
    return [
        MetricResult(
            item_id=item_id,
            metric="faithfulness",
            score=faithfulness,
            passed=faithfulness >= 0.8,
            threshold=0.8,
            details=details,
        ),
        MetricResult(
            item_id=item_id, metric="relevancy", score=1.0 if relevant else 0.0, passed=relevant, threshold=1.0
        ),
        MetricResult(
            item_id=item_id, metric="citation_audit", score=0.0 if position % 7 == 0 else 1.0, passed=position % 7 != 0
        ),
        MetricResult(item_id=item_id, metric="rubric", score=rubric, passed=rubric >= 0.7, threshold=0.7),
        MetricResult(
            item_id=item_id, metric="correctness", score=correctness, passed=correctness >= 4.0, threshold=4.0
        ),
    ]
