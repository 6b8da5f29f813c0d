"""Relevancy (LlamaIndex RelevancyEvaluator semantics): is the answer to the query in line with the contexts?

Steps:
1. One judge call (`relevancy`) with the query, the answer and the retrieved contexts; the
   judge answers YES or NO with feedback.
2. Score = `relevancy_score(passing)`: YES → 1.0, NO → 0.0 (higher is better). The judge's
   feedback is kept.

Default threshold 1.0 (run setting `thresholds.relevancy`: YES passes, NO fails); passed =
score ≥ threshold, the rule of every metric (`base.passes`).
"""

from __future__ import annotations

from typing import Any

from evaluations.metrics.base import ItemInput, MetricContext, MetricOutcome, prompt_versions, scored_outcome
from judges.types import Relevancy


def relevancy_score(passing: bool) -> float:
    return 1.0 if passing else 0.0


class RelevancyMetric:
    name = "relevancy"
    uses_judge = True

    def first_prompt(self, item: ItemInput, settings: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "relevancy", {"query": item.query, "response": item.response, "contexts": list(item.contexts)}

    def evaluate(self, item: ItemInput, ctx: MetricContext) -> MetricOutcome:
        result = ctx.judge(*self.first_prompt(item, ctx.settings))
        verdict: Relevancy = result.value  # type: ignore[assignment]
        score = relevancy_score(verdict.passing)
        threshold = ctx.settings["thresholds"]["relevancy"]
        return scored_outcome(
            self.name,
            score,
            threshold,
            feedback=verdict.feedback,
            details={"verdict": "YES" if verdict.passing else "NO"},
            raw_value="YES" if verdict.passing else "NO",
            prompt_version=prompt_versions([result]),
        )


RELEVANCY = RelevancyMetric()
