"""How often the judge agrees with people: per judge config and faithfulness prompt version.

Over the claims a person reviewed (a claim with at least one VerdictOverride row: an override,
or a confirmation where new_verdict == old_verdict), comparing the judge's verdict with the
person's final verdict (`Claim.current_verdict`, the latest review):

- reviewed claims, overridden ones (final verdict ≠ the judge's) and the override rate;
- Cohen's κ over the four verdicts and over supported vs not supported (PARTIALLY_SUPPORTED,
  CONTRADICTED and NOT_ENOUGH_INFO are "not supported"), each with a bootstrap interval;
  κ is None (undefined) when both used a single, identical label;
- the 4×4 confusion matrix (rows: the judge's verdict, columns: the person's);
- the most-overridden claims (most verdict changes first) with their item and run;
- `reliable`: at least RELIABLE_MIN_REVIEWED reviewed claims; below, a page says the figure is
  not yet reliable.

`Claim.reviewed_at` is not used: the VerdictOverride rows are the record of review.
One query, whatever the number of claims.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, F, OuterRef, Q, Subquery

from evaluations.models import Claim, MetricResult, Verdict
from evaluations.statistics import KappaEstimate, cohen_kappa, confusion_matrix

RELIABLE_MIN_REVIEWED = 30
MOST_OVERRIDDEN_LIMIT = 10
LABELS: tuple[str, ...] = tuple(Verdict.values)
SUPPORTED, NOT_SUPPORTED = "SUPPORTED", "NOT_SUPPORTED"
CLAIM_METRIC = "faithfulness"  # the metric whose judge calls produce the claims' verdicts


@dataclass(frozen=True)
class ReviewedClaim:
    claim_id: int
    item_id: int
    run_id: int
    text: str
    judge_verdict: str
    final_verdict: str
    reviews: int  # VerdictOverride rows, confirmations included
    changes: int  # rows that changed the verdict


@dataclass(frozen=True)
class JudgeAgreement:
    judge_config_id: int
    judge: str
    provider: str
    model: str
    prompt_version: str  # of the claims' faithfulness results ("" when unknown)
    reviewed: int
    overridden: int
    override_rate: float
    kappa: KappaEstimate  # four verdicts
    kappa_supported: KappaEstimate  # supported vs not supported
    labels: list[str]
    confusion: list[list[int]]  # [judge verdict][person's verdict], in `labels` order
    most_overridden: list[ReviewedClaim]
    reliable: bool


def judge_agreement(*, judge_config_id: int | None = None, run_id: int | None = None) -> list[JudgeAgreement]:
    """One entry per (judge config, prompt version) with reviewed claims, by judge name then prompt version."""
    groups: dict[tuple[int, str, str, str, str], list[ReviewedClaim]] = defaultdict(list)
    for row in _reviewed_claims(judge_config_id=judge_config_id, run_id=run_id):
        *key, claim = row
        groups[tuple(key)].append(claim)  # type: ignore[arg-type]
    return [
        _agreement(judge_config_id, judge, provider, model, prompt_version, claims)
        for (judge_config_id, judge, provider, model, prompt_version), claims in sorted(
            groups.items(), key=lambda entry: (entry[0][1], entry[0][0], entry[0][4])
        )
    ]


def _reviewed_claims(*, judge_config_id: int | None, run_id: int | None):
    claim_prompt = MetricResult.objects.filter(item_id=OuterRef("item_id"), metric=CLAIM_METRIC).values(
        "prompt_version"
    )[:1]
    claims = Claim.objects.annotate(
        reviews=Count("overrides"),
        changes=Count("overrides", filter=~Q(overrides__new_verdict=F("overrides__old_verdict"))),
        prompt_version=Subquery(claim_prompt),
    ).filter(reviews__gt=0)
    if judge_config_id is not None:
        claims = claims.filter(item__run__judge_config_id=judge_config_id)
    if run_id is not None:
        claims = claims.filter(item__run_id=run_id)
    rows = claims.order_by("id").values_list(
        "item__run__judge_config_id",
        "item__run__judge_config__name",
        "item__run__judge_config__provider",
        "item__run__judge_config__model",
        "prompt_version",
        "id",
        "item_id",
        "item__run_id",
        "text",
        "judge_verdict",
        "current_verdict",
        "reviews",
        "changes",
    )
    for config_id, judge, provider, model, prompt_version, *claim in rows:
        yield config_id, judge, provider, model, prompt_version or "", ReviewedClaim(*claim)


def _agreement(
    judge_config_id: int, judge: str, provider: str, model: str, prompt_version: str, claims: list[ReviewedClaim]
) -> JudgeAgreement:
    judged = [claim.judge_verdict for claim in claims]
    final = [claim.final_verdict for claim in claims]
    overridden = sum(1 for claim in claims if claim.final_verdict != claim.judge_verdict)
    contested = sorted(
        (claim for claim in claims if claim.changes),
        key=lambda claim: (-claim.changes, claim.final_verdict == claim.judge_verdict, claim.claim_id),
    )
    return JudgeAgreement(
        judge_config_id=judge_config_id,
        judge=judge,
        provider=provider,
        model=model,
        prompt_version=prompt_version,
        reviewed=len(claims),
        overridden=overridden,
        override_rate=overridden / len(claims),
        kappa=cohen_kappa(judged, final),
        kappa_supported=cohen_kappa(
            [_supported(verdict) for verdict in judged], [_supported(verdict) for verdict in final]
        ),
        labels=list(LABELS),
        confusion=confusion_matrix(judged, final, LABELS),
        most_overridden=contested[:MOST_OVERRIDDEN_LIMIT],
        reliable=len(claims) >= RELIABLE_MIN_REVIEWED,
    )


def _supported(verdict: str) -> str:
    return SUPPORTED if verdict == Verdict.SUPPORTED else NOT_SUPPORTED
