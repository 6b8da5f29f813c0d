"""A finished run with claims, written straight to the database (no judge): for the review bench and tests.

`seed_finished_run(items=10_000)` imports a generated dataset, creates a completed run of
faithfulness + rubric + citation_audit, and bulk-inserts every item's results and claims as
the metrics would have stored them (the same pure scoring functions), then builds the run's
aggregates. Item n has `claims` claims whose judge verdicts cycle through a fixed pattern, so
scores spread; every 7th item has an invalid citation (a clamp fires); tags cycle over TAGS.
With `repeats` > 1 the faithfulness and rubric results carry k samples and their std.
"""

from __future__ import annotations

import io
import json
import statistics
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from datasets.services import dataset_import
from evaluations.metrics import overall_score
from evaluations.metrics.base import MetricOutcome
from evaluations.metrics.citation_audit import audit_citations
from evaluations.metrics.faithfulness import faithfulness_details, faithfulness_score
from evaluations.metrics.rubric import DIMENSIONS, apply_citation_caps, weighted_overall
from evaluations.models import Claim, ItemStatus, MetricResult, Run, RunItem, RunStatus
from evaluations.services import runs as services
from judges.models import JudgeConfig
from judges.services import judge_config_create

TAGS = ("factual", "status", "numbers")
VERDICT_CYCLE = ("SUPPORTED", "SUPPORTED", "PARTIALLY_SUPPORTED", "SUPPORTED", "CONTRADICTED", "NOT_ENOUGH_INFO")
METRICS = ["faithfulness", "rubric"]
BATCH = 2000


def example_row(n: int, *, claims: int) -> dict[str, Any]:
    bad = n % 7 == 0
    sentences = [
        f"Finding {i} of report {n} is that the river rose by {n + i} cm [c{1 + i % 2}]." for i in range(claims)
    ]
    if bad:
        sentences.append(f"The council vetoed report {n} [c9].")
    return {
        "id": f"item-{n:05d}",
        "query": f"What did report {n} find about the river?",
        "response": " ".join(sentences),
        "contexts": [
            {"id": "c1", "text": f"Report {n}: the river level rose in spring.", "score": 0.91},
            {"id": "c2", "text": f"Gauge data for report {n} were collected daily.", "score": 0.74},
        ],
        "reference_answer": f"The river rose by {n} cm.",
        "expected_context_ids": ["c1"],
        "tags": [TAGS[n % len(TAGS)], *(["hard"] if bad else [])],
    }


def seed_finished_run(
    *,
    items: int = 100,
    claims: int = 4,
    repeats: int = 1,
    judge: JudgeConfig | None = None,
    name: str = "review-seed",
    rows: Sequence[dict[str, Any]] | None = None,
) -> Run:
    """A completed run of `items` items (or of the given dataset `rows`), each with its results and claims."""
    rows = list(rows) if rows is not None else [example_row(n, claims=claims) for n in range(1, items + 1)]
    content = "".join(json.dumps(row) + "\n" for row in rows).encode()
    version = dataset_import(name=name, file=io.BytesIO(content), filename=f"{name}.jsonl", fmt="jsonl").version
    judge = judge or judge_config_create(name=f"{name}-judge", provider="offline", model="heuristic-v1")
    run = services.run_create(
        dataset_version=version,
        judge_config=judge,
        metrics=METRICS,
        settings={"repeats": repeats},
        name=name,
        enqueue=False,
    )
    now = timezone.now()
    examples = list(version.examples.order_by("position").values_list("id", "position", "response", "contexts"))
    with transaction.atomic():
        for start in range(0, len(examples), BATCH):
            _insert_batch(run, examples[start : start + BATCH], now)
        Run.objects.filter(pk=run.pk).update(
            status=RunStatus.COMPLETED,
            items_done=len(examples),
            started_at=now,
            finished_at=now,
        )
    run.refresh_from_db()
    Run.objects.filter(pk=run.pk).update(aggregates=services.build_aggregates(run))
    run.refresh_from_db()
    return run


def _insert_batch(run: Run, examples: list[tuple], now: Any) -> None:
    settings = run.settings
    items = RunItem.objects.bulk_create(
        [
            RunItem(run=run, example_id=example_id, status=ItemStatus.DONE, finished_at=now)
            for example_id, *_ in examples
        ]
    )
    results: list[MetricResult] = []
    claims: list[Claim] = []
    overalls: list[RunItem] = []
    for item, (_, position, response, contexts) in zip(items, examples, strict=True):
        audit = audit_citations(response, [context["id"] for context in contexts])
        n_claims = len(audit.sentences)
        verdicts = [VERDICT_CYCLE[(position + i) % len(VERDICT_CYCLE)] for i in range(n_claims)]
        claims += [
            Claim(
                item=item,
                position=i,
                text=sentence.text.split(" [")[0],
                judge_verdict=verdict,
                current_verdict=verdict,
                evidence=f"Context says: {sentence.text[:60]}",
                context_ids=list(sentence.cited_ids),
            )
            for i, (sentence, verdict) in enumerate(zip(audit.sentences, verdicts, strict=True))
        ]
        faithfulness = _faithfulness(verdicts, settings, position, run.settings["repeats"])
        rubric = _rubric(audit, settings, position, run.settings["repeats"])
        outcomes = {
            "faithfulness": MetricOutcome(
                metric="faithfulness", score=faithfulness.score, details=faithfulness.details
            ),
            "rubric": MetricOutcome(metric="rubric", score=rubric.score, details=rubric.details),
        }
        item.overall_score = overall_score(outcomes, settings)
        overalls.append(item)
        for result in (faithfulness, rubric):
            result.item = item
            results.append(result)
    MetricResult.objects.bulk_create(results)
    Claim.objects.bulk_create(claims)
    RunItem.objects.bulk_update(overalls, ["overall_score"])


def _faithfulness(verdicts: list[str], settings: dict, position: int, repeats: int) -> MetricResult:
    partial_weight = settings["partial_weight"]
    score = faithfulness_score(verdicts, len(verdicts), partial_weight)
    details = faithfulness_details(verdicts, len(verdicts), partial_weight) | {"verification": "batch"}
    if repeats > 1:
        samples = [min(1.0, max(0.0, score + 0.1 * ((position + k) % 3 - 1))) for k in range(repeats)]
        score = statistics.fmean(samples)
        details |= {"samples": samples, "std": statistics.pstdev(samples)}
    threshold = settings["thresholds"]["faithfulness"]
    return MetricResult(
        metric="faithfulness",
        score=score,
        passed=score >= threshold,
        threshold=threshold,
        details=details,
        raw_value={"verdicts": verdicts},
        prompt_version="claim_extraction@1,claim_verification@1",
    )


def _rubric(audit: Any, settings: dict, position: int, repeats: int) -> MetricResult:
    raw = {dimension: round(0.55 + 0.05 * ((position + i) % 9), 2) for i, dimension in enumerate(DIMENSIONS)}
    values = dict(raw)
    values["faithfulness"], caps = apply_citation_caps(values["faithfulness"], audit)
    overall = weighted_overall(values, settings["weights"])
    threshold = settings["thresholds"]["rubric"]
    suggestions = ["Cite the gauge data for the figures."] if position % 2 else []
    details = {
        "scores": values,
        "raw": raw,
        "caps_applied": caps,
        "audit_rules": [],
        "weights": dict(settings["weights"]),
        "improvement_suggestions": suggestions,
    }
    return MetricResult(
        metric="rubric",
        score=overall,
        passed=overall >= threshold,
        threshold=threshold,
        feedback="\n".join(suggestions),
        details=details,
        raw_value=raw | {"improvement_suggestions": suggestions},
        prompt_version="rubric@1",
    )
