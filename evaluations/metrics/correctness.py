"""Correctness (LlamaIndex CorrectnessEvaluator semantics): how well does the answer match the reference answer?

Steps:
1. Without a reference answer the metric is skipped (score None, reason "no reference
   answer"): not failed, and no judge call.
2. One judge call (`correctness`) with the query, the answer and the reference; the judge
   gives a score from 1 to 5 and a justification (kept as feedback).
3. Score = the judge's 1..5 score (higher is better; the one metric not on 0..1). Details
   carry `normalized` = (score − 1) / 4 on 0..1 for dashboards.

Default threshold 4.0 (run setting `thresholds.correctness`); passed = score ≥ threshold,
the rule of every metric (`base.passes`); skipped items neither pass nor fail.
"""

from __future__ import annotations

from typing import Any

from evaluations.metrics.base import ItemInput, MetricContext, MetricOutcome, prompt_versions, scored_outcome
from judges.types import Correctness

NO_REFERENCE = "no reference answer"


def normalized_correctness(score: float) -> float:
    """Map the 1..5 scale onto 0..1 (1 → 0.0, 3 → 0.5, 5 → 1.0)."""
    return round(min(max((score - 1.0) / 4.0, 0.0), 1.0), 3)


class CorrectnessMetric:
    name = "correctness"
    uses_judge = True

    def first_prompt(self, item: ItemInput, settings: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if not item.reference_answer.strip():
            return None
        return "correctness", {"query": item.query, "response": item.response, "reference": item.reference_answer}

    def evaluate(self, item: ItemInput, ctx: MetricContext) -> MetricOutcome:
        threshold = ctx.settings["thresholds"]["correctness"]
        request = self.first_prompt(item, ctx.settings)
        if request is None:
            return MetricOutcome(metric=self.name, threshold=threshold, skipped_reason=NO_REFERENCE)
        result = ctx.judge(*request)
        verdict: Correctness = result.value  # type: ignore[assignment]
        score = float(verdict.score)
        return scored_outcome(
            self.name,
            score,
            threshold,
            feedback=verdict.justification,
            details={"normalized": normalized_correctness(score)},
            raw_value=verdict.score,
            prompt_version=prompt_versions([result]),
        )


CORRECTNESS = CorrectnessMetric()
