"""Reviewers' verdict overrides and the recomputation of the item (and the run's stats) they cause."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from evaluations.metrics import overall_score
from evaluations.metrics.base import MetricOutcome, passes
from evaluations.metrics.faithfulness import faithfulness_details, faithfulness_score
from evaluations.models import Claim, MetricResult, RunItem, Verdict, VerdictOverride
from evaluations.services.runs import run_aggregates_refresh


@transaction.atomic
def claim_override(*, claim: Claim, reviewer: Any, new_verdict: str, reason: str = "") -> VerdictOverride:
    """Record a reviewer's verdict on a claim, then recompute the item's faithfulness and overall and the run's stats."""
    if new_verdict not in Verdict.values:
        raise ValueError(f"new_verdict: {new_verdict!r} is not one of {', '.join(Verdict.values)}")
    claim = Claim.objects.select_for_update().select_related("item__run").get(pk=claim.pk)
    override = VerdictOverride.objects.create(
        claim=claim,
        reviewer=reviewer if getattr(reviewer, "is_authenticated", False) else None,
        old_verdict=claim.current_verdict,
        new_verdict=new_verdict,
        reason=reason,
    )
    Claim.objects.filter(pk=claim.pk).update(current_verdict=new_verdict)
    item_recompute(claim.item)
    run_aggregates_refresh(run=claim.item.run)
    return override


def item_recompute(item: RunItem) -> None:
    """Faithfulness from the claims' current verdicts, then the item's overall (same functions as the metrics)."""
    run_settings = item.run.settings
    results = {result.metric: result for result in MetricResult.objects.filter(item=item)}
    faithfulness = results.get("faithfulness")
    if faithfulness is None:
        return
    verdicts = list(Claim.objects.filter(item=item).order_by("position").values_list("current_verdict", flat=True))
    n_claims = int(faithfulness.details.get("n_claims", len(verdicts)))
    partial_weight = run_settings["partial_weight"]
    faithfulness.score = faithfulness_score(verdicts, n_claims, partial_weight)
    faithfulness.passed = passes(faithfulness.score, faithfulness.threshold)
    overrides = VerdictOverride.objects.filter(claim__item=item).count()
    faithfulness.details = {
        **faithfulness.details,
        **faithfulness_details(verdicts, n_claims, partial_weight),
        "overrides": overrides,
    }
    faithfulness.save(update_fields=["score", "passed", "details"])
    outcomes = {
        name: MetricOutcome(metric=name, score=result.score, details=result.details) for name, result in results.items()
    }
    RunItem.objects.filter(pk=item.pk).update(overall_score=overall_score(outcomes, run_settings))
