"""Rubric: four quality dimensions from one judge call, with the citation audit as hard constraints.

Steps:
1. Audit the answer's citations (`citation_audit.audit_item`, deterministic).
2. Turn the audit's findings into hard rules for the judge (`audit_rules`): invalid
   citation ids (hallucination) → faithfulness at most 0.4; 5 or more uncited sentences →
   at most 0.5; 10 or more → at most 0.3.
3. One judge call (`rubric`): faithfulness, relevance, completeness and reasoning_quality,
   plus improvement suggestions. The parser has already brought 0–100 replies to 0..1
   (this module never divides again); values outside 0..1 are clipped.
4. Apply the same caps in code whatever the judge said (`apply_citation_caps`); the
   judge's values stay in `raw_value` and details["raw"].
5. Overall = weighted mean of the four dimensions (run setting `weights`, normalised by
   their sum; default 0.35 / 0.25 / 0.25 / 0.15), rounded half up to 3 decimals
   (`weighted_overall`). Score = overall, 0..1, higher is better.

Default threshold 0.7 (run setting `thresholds.rubric`); passed = score ≥ threshold, the
rule of every metric (`base.passes`).

The item's overall score (`evaluations.metrics.overall_score`) starts from these clamped
values and, when claim-level faithfulness also ran, puts its score in place of the
rubric's faithfulness, capped by the same triggered caps (`item_overall`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from evaluations.metrics.base import ItemInput, MetricContext, MetricOutcome, prompt_versions, scored_outcome
from evaluations.metrics.citation_audit import CitationAudit, audit_item
from judges.types import RubricScores

DIMENSIONS = ("faithfulness", "relevance", "completeness", "reasoning_quality")
HALLUCINATION_CAP = 0.4
UNCITED_CAPS = ((10, 0.3), (5, 0.5))  # (at least this many uncited sentences, faithfulness cap), strictest first


def triggered_caps(audit: CitationAudit) -> list[dict[str, Any]]:
    """The citation caps this audit triggers: [{"rule", "cap", "reason"}] (JSON, stored in details)."""
    caps: list[dict[str, Any]] = []
    if audit.hallucination_detected:
        caps.append(
            {
                "rule": "invalid_citation_ids",
                "cap": HALLUCINATION_CAP,
                "reason": "citation ids that match no retrieved context, a sign of hallucination: "
                + ", ".join(audit.invalid_ids),
            }
        )
    for at_least, cap in UNCITED_CAPS:
        if audit.uncited_sentences >= at_least:
            caps.append(
                {
                    "rule": f"uncited_sentences>={at_least}",
                    "cap": cap,
                    "reason": f"{audit.uncited_sentences} sentences that cite no context",
                }
            )
            break
    return caps


def cap_faithfulness(value: float, caps: Sequence[Mapping[str, Any]]) -> float:
    """`value` lowered to the strictest of `caps` (unchanged when there is none)."""
    return min([value, *(cap["cap"] for cap in caps)])


def apply_citation_caps(faithfulness: float, audit: CitationAudit) -> tuple[float, list[dict[str, Any]]]:
    """Clamp a faithfulness value (0..1) by the audit's findings; returns (value, caps triggered)."""
    caps = triggered_caps(audit)
    return cap_faithfulness(faithfulness, caps), caps


def audit_rules(audit: CitationAudit) -> list[str]:
    """The audit's findings as hard rules written into the rubric prompt."""
    return [
        f"The citation audit found {cap['reason']}. Faithfulness must be at most {cap['cap']:g}."
        for cap in triggered_caps(audit)
    ]


def weighted_overall(values: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Weighted mean of the four dimensions, weights normalised by their sum, rounded to 3 decimals."""
    total = sum(weights[dimension] for dimension in DIMENSIONS)
    if total <= 0:
        raise ValueError("weights must sum to more than 0")
    return round_half_up(sum(weights[dimension] * values[dimension] for dimension in DIMENSIONS) / total)


def round_half_up(value: float, places: int = 3) -> float:
    """Round as people do (0.9825 → 0.983), after snapping away float noise such as 0.98249999999."""
    snapped = Decimal(repr(round(value, 9)))
    return float(snapped.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def item_overall(
    rubric_details: Mapping[str, Any], claim_faithfulness: float | None, weights: Mapping[str, float]
) -> float:
    """Overall of one item from a rubric result's details, optionally with claim-level faithfulness in place."""
    values = dict(rubric_details["scores"])
    if claim_faithfulness is not None:
        values["faithfulness"] = cap_faithfulness(claim_faithfulness, rubric_details["caps_applied"])
    return weighted_overall(values, weights)


def _rubric_fields(item: ItemInput, audit: CitationAudit) -> dict[str, Any]:
    return {
        "query": item.query,
        "response": item.response,
        "contexts": list(item.contexts),
        "audit_rules": audit_rules(audit),
    }


class RubricMetric:
    name = "rubric"
    uses_judge = True

    def first_prompt(self, item: ItemInput, settings: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "rubric", _rubric_fields(item, audit_item(item, settings))

    def evaluate(self, item: ItemInput, ctx: MetricContext) -> MetricOutcome:
        audit = audit_item(item, ctx.settings)
        fields = _rubric_fields(item, audit)
        result = ctx.judge("rubric", fields)
        reply: RubricScores = result.value  # type: ignore[assignment]
        raw = {dimension: getattr(reply, dimension) for dimension in DIMENSIONS}
        values = {dimension: min(max(float(value), 0.0), 1.0) for dimension, value in raw.items()}
        values["faithfulness"], caps = apply_citation_caps(values["faithfulness"], audit)
        weights = ctx.settings["weights"]
        overall = weighted_overall(values, weights)
        threshold = ctx.settings["thresholds"]["rubric"]
        suggestions = list(reply.improvement_suggestions)
        return scored_outcome(
            self.name,
            overall,
            threshold,
            feedback="\n".join(suggestions),
            details={
                "scores": values,
                "raw": raw,
                "caps_applied": caps,
                "audit_rules": fields["audit_rules"],
                "weights": dict(weights),
                "improvement_suggestions": suggestions,
            },
            raw_value=raw | {"improvement_suggestions": suggestions},
            prompt_version=prompt_versions([result]),
        )


RUBRIC = RubricMetric()
