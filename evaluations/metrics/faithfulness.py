"""Claim-level faithfulness: how much of what the answer claims do the retrieved contexts support?

Steps:
1. An empty (or whitespace-only) answer claims nothing: score 1.0, no claims, details
   `vacuous: true`, no judge call.
2. Extract the answer's atomic claims (judge prompt `claim_extraction`, 1 call). No claim
   extracted: vacuous as well.
3. Verify every claim against the contexts (`claim_verification`): all claims in one call,
   or, with run setting `verify_per_claim`, one call per claim run concurrently. Without
   any context every claim is NOT_ENOUGH_INFO and the verification judge is not called.
4. Score = (SUPPORTED + partial_weight × PARTIALLY_SUPPORTED) / number of claims extracted
   (`faithfulness_score`, the one place of this arithmetic: reviewers' overrides reuse it).
   0..1, higher is better.

Default threshold 0.8 (run setting `thresholds.faithfulness`); passed = score ≥ threshold,
the rule of every metric (`base.passes`), re-applied when a reviewer overrides a verdict.

Every claim is kept (`MetricOutcome.claims`, 0-based position) with its verdict, the
judge's evidence and the ids of the supporting contexts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from django.db import connections

from evaluations.metrics.base import (
    ClaimRecord,
    ItemInput,
    JudgeFn,
    JudgeRequest,
    MetricContext,
    MetricOutcome,
    prompt_versions,
    scored_outcome,
)
from judges.types import (
    NOT_ENOUGH_INFO,
    PARTIALLY_SUPPORTED,
    SUPPORTED,
    VERDICTS,
    ClaimVerdict,
    Context,
    JudgeResponseError,
    JudgeResult,
)

# Upper bound on concurrent per-claim verification calls of one item; the gateway's rate
# limiter still applies across the whole run.
MAX_PARALLEL_VERIFICATIONS = 8
NO_CONTEXT_EVIDENCE = "No context was retrieved for this item."


def faithfulness_score(verdicts: Sequence[str], n_claims: int, partial_weight: float) -> float:
    """(SUPPORTED + partial_weight × PARTIALLY_SUPPORTED) / n_claims; 1.0 when there is no claim.

    The denominator is the number of claims extracted, never the number of verdicts.
    """
    if n_claims < 0 or len(verdicts) > n_claims:
        raise ValueError(f"{len(verdicts)} verdicts for {n_claims} claims")
    unknown = set(verdicts) - set(VERDICTS)
    if unknown:
        raise ValueError(f"unknown verdicts: {', '.join(sorted(unknown))}")
    if n_claims == 0:
        return 1.0
    counts = Counter(verdicts)
    return (counts[SUPPORTED] + partial_weight * counts[PARTIALLY_SUPPORTED]) / n_claims


def faithfulness_details(verdicts: Sequence[str], n_claims: int, partial_weight: float) -> dict[str, Any]:
    """The stored details of a claim-faithfulness result (recomputed the same way after overrides)."""
    counts = Counter(verdicts)
    return {
        "n_claims": n_claims,
        "partial_weight": partial_weight,
        "counts": {verdict: counts[verdict] for verdict in VERDICTS},
        "vacuous": n_claims == 0,
    }


class FaithfulnessMetric:
    name = "faithfulness"
    uses_judge = True

    def first_prompt(self, item: ItemInput, settings: dict[str, Any]) -> JudgeRequest | None:
        return _extraction_prompt(item)

    def evaluate(self, item: ItemInput, ctx: MetricContext) -> MetricOutcome:
        partial_weight = ctx.settings["partial_weight"]
        claims, results = _extract_claims(item, ctx.judge)
        verdicts, verification_results, verification = _verify_claims(claims, item.contexts, ctx)
        results += verification_results
        labels = [verdict.verdict for verdict in verdicts]
        score = faithfulness_score(labels, len(claims), partial_weight)
        threshold = ctx.settings["thresholds"]["faithfulness"]
        return scored_outcome(
            self.name,
            score,
            threshold,
            feedback=_feedback(labels, len(claims)),
            details=faithfulness_details(labels, len(claims), partial_weight) | {"verification": verification},
            raw_value={"claims": claims, "verdicts": labels},
            prompt_version=prompt_versions(results),
            claims=[
                ClaimRecord(
                    position=i,
                    text=claim,
                    verdict=verdict.verdict,
                    evidence=verdict.evidence,
                    context_ids=list(verdict.context_ids),
                )
                for i, (claim, verdict) in enumerate(zip(claims, verdicts, strict=True))
            ],
        )


def _extraction_prompt(item: ItemInput) -> JudgeRequest | None:
    if not item.response.strip():
        return None
    return "claim_extraction", {"query": item.query, "response": item.response}


def _extract_claims(item: ItemInput, judge: JudgeFn) -> tuple[list[str], list[JudgeResult]]:
    request = _extraction_prompt(item)
    if request is None:
        return [], []
    result = judge(*request)
    return list(result.value), [result]  # type: ignore[call-overload]


def _verify_claims(
    claims: list[str], contexts: Sequence[Context], ctx: MetricContext
) -> tuple[list[ClaimVerdict], list[JudgeResult], str]:
    """(verdicts in claim order, judge results, how they were obtained)."""
    if not claims:
        return [], [], "none"
    if not contexts:
        verdicts = [
            ClaimVerdict(claim=i, verdict=NOT_ENOUGH_INFO, evidence=NO_CONTEXT_EVIDENCE) for i in range(len(claims))
        ]
        return verdicts, [], "no_contexts"
    if ctx.settings["verify_per_claim"]:
        return *_verify_each(claims, contexts, ctx.judge), "per_claim"
    result = ctx.judge("claim_verification", {"claims": claims, "contexts": list(contexts)})
    return _in_claim_order(result.value, len(claims)), [result], "batch"  # type: ignore[arg-type]


def _in_claim_order(verdicts: Sequence[ClaimVerdict], n_claims: int) -> list[ClaimVerdict]:
    by_claim = {verdict.claim: verdict for verdict in verdicts}
    missing = [i for i in range(n_claims) if i not in by_claim]
    if missing or len(by_claim) != n_claims:
        raise JudgeResponseError(
            f"claim_verification: expected one verdict for each of {n_claims} claims, missing {missing}"
        )
    return [by_claim[i] for i in range(n_claims)]


def _verify_each(
    claims: list[str], contexts: Sequence[Context], judge: JudgeFn
) -> tuple[list[ClaimVerdict], list[JudgeResult]]:
    """One claim_verification call per claim, concurrently; the first failure cancels the rest and propagates."""
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_VERIFICATIONS, len(claims))) as pool:
        futures: list[Future[JudgeResult]] = [pool.submit(_verify_one, judge, claim, contexts) for claim in claims]
        try:
            results = [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    verdicts = []
    for i, result in enumerate(results):
        (verdict,) = _in_claim_order(result.value, 1)  # type: ignore[arg-type]
        verdicts.append(
            ClaimVerdict(claim=i, verdict=verdict.verdict, evidence=verdict.evidence, context_ids=verdict.context_ids)
        )
    return verdicts, results


def _verify_one(judge: JudgeFn, claim: str, contexts: Sequence[Context]) -> JudgeResult:
    try:
        return judge("claim_verification", {"claims": [claim], "contexts": list(contexts)})
    finally:
        # The gateway may have opened a database connection in this worker thread.
        connections.close_all()


def _feedback(labels: Sequence[str], n_claims: int) -> str:
    if n_claims == 0:
        return "No claims to verify."
    counts = Counter(labels)
    parts = [f"{counts[SUPPORTED]} of {n_claims} claims supported"]
    parts += [f"{counts[verdict]} {verdict.lower().replace('_', ' ')}" for verdict in VERDICTS[1:] if counts[verdict]]
    return ", ".join(parts) + "."


FAITHFULNESS = FaithfulnessMetric()
