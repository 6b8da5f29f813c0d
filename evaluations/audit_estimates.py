"""Human-calibrated scores of a run from its random audit: the judge's mean corrected by people's labels.

What is estimated (`TARGETS`), per scored item (status done, a faithfulness score):

- `faithfulness`: claim-level faithfulness, (SUPPORTED + partial_weight × PARTIALLY_SUPPORTED) / claims
  (1.0 without claims, as the metric). The *judge's* value comes from the claims' original
  verdicts (`Claim.judge_verdict`), so reviews never change it; a *person's* value, on an
  audited item, from the claims' current verdicts (the people's final word after overrides and
  confirmations). With repeats the claims are the first sample's (the ones people see), so the
  judge's figure here can differ from the metric's mean over the k samples.
- `faithfulness_pass_rate`: the share of items whose faithfulness reaches the run's threshold
  (score ≥ threshold, the rule of every metric); left out when the threshold is null.

These are the figures a person can judge in evalsite: the review pages take a human verdict per
claim and nothing else. Relevancy, the rubric and correctness have no human label to calibrate
against; retrieval and the citation audit are computed, not judged.

For each target: the judge's mean over all N scored items, the people's mean over the n audited
ones with its classical interval, and the prediction-powered mean with its 95% interval
(`evaluations.calibration`: PPI++, whose λ falls back towards the people's mean when the judge
does not track them; plain PPI, λ = 1, is reported beside it). Values are means of 0..1 scores,
so intervals are clipped to [0, 1] (the true mean lies there; coverage is unchanged).

`run_calibration(run_id)` and `calibrated_comparison(base_run_id, candidate_run_id)` return
JSON-ready dicts (documented on each) for the run page, the comparison, the API and
`evaluate --json`. Below `MIN_AUDITED` audited items there is no figure, only progress.
Queries: one without an audit or below the minimum, three with a figure, whatever the run's size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import Count, Q

from evaluations.calibration import CONFIDENCE, CalibratedMean, MeanEstimate, calibrated_mean, z_value
from evaluations.models import Audit, AuditItem, ItemStatus, MetricResult, Verdict

MIN_AUDITED = 30  # below this the normal interval is not trusted: the page shows progress instead
IN_PROGRESS, CALIBRATED = "in_progress", "calibrated"


@dataclass(frozen=True)
class Target:
    key: str
    label: str
    kind: str  # "mean" (a 0..1 score) or "pass_rate" (a share of items)


FAITHFULNESS = Target("faithfulness", "Faithfulness", "mean")
FAITHFULNESS_PASS_RATE = Target("faithfulness_pass_rate", "Faithfulness pass rate", "pass_rate")
TARGETS = (FAITHFULNESS, FAITHFULNESS_PASS_RATE)


# --- Pure: values → estimate -----------------------------------------------------------------


def estimate(
    target: Target,
    judge_all: Sequence[float] | np.ndarray,
    judge_audited: Sequence[float] | np.ndarray,
    human_audited: Sequence[float] | np.ndarray,
    *,
    confidence: float = CONFIDENCE,
) -> dict[str, Any]:
    """One target's figures as a JSON-ready dict (`judge_audited[i]` and `human_audited[i]` are one item):

    {"key", "label", "kind", "n_items", "n_audited",
     "judge": {"mean"},                                   # over all N items
     "judge_on_audit": {"mean"}, "bias": mean(judge − human) on the audit,
     "human":      {"mean", "ci_low", "ci_high", "std_error"},          # audit only
     "calibrated": {"mean", "ci_low", "ci_high", "std_error", "method": "ppi++", "lambda"},
     "ppi":        {"mean", "ci_low", "ci_high", "std_error", "method": "ppi"}}
    """
    result: CalibratedMean = calibrated_mean(judge_all, judge_audited, human_audited, confidence=confidence)
    judge_labelled, human = np.asarray(judge_audited, dtype=float), np.asarray(human_audited, dtype=float)
    return {
        "key": target.key,
        "label": target.label,
        "kind": target.kind,
        "n_items": result.n_items,
        "n_audited": result.n_audited,
        "judge": {"mean": result.judge_mean},
        "judge_on_audit": {"mean": float(judge_labelled.mean())},
        "bias": float((judge_labelled - human).mean()),
        "human": _bounded(result.human),
        "calibrated": _bounded(result.ppi_plus) | {"method": "ppi++", "lambda": result.lam},
        "ppi": _bounded(result.ppi) | {"method": "ppi"},
    }


def difference(base: dict[str, Any], candidate: dict[str, Any], *, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Candidate − base of two independent calibrated estimates (from `estimate`): the difference of the
    calibrated means with a normal interval from the two standard errors. `significant`: the interval excludes 0."""
    delta = candidate["calibrated"]["mean"] - base["calibrated"]["mean"]
    std_error = math.hypot(base["calibrated"]["std_error"], candidate["calibrated"]["std_error"])
    z = z_value(confidence)
    low, high = delta - z * std_error, delta + z * std_error
    return {
        "key": base["key"],
        "label": base["label"],
        "kind": base["kind"],
        "base": base["calibrated"],
        "candidate": candidate["calibrated"],
        "delta": delta,
        "ci_low": low,
        "ci_high": high,
        "std_error": std_error,
        "significant": bool(low > 0 or high < 0),
    }


def _bounded(value: MeanEstimate) -> dict[str, float]:
    clip = lambda x: min(1.0, max(0.0, x))  # noqa: E731
    return {
        "mean": clip(value.mean),
        "ci_low": clip(value.ci_low),
        "ci_high": clip(value.ci_high),
        "std_error": value.std_error,
    }


# --- Reads -----------------------------------------------------------------------------------


def run_calibration(run_id: int) -> dict[str, Any] | None:
    """The run's human-calibrated scores, or None when it has no audit (or no such run).

    {"status": "in_progress" | "calibrated",
     "min_audited": 30, "confidence": 0.95,
     "audit": {"id", "size", "drawn", "audited", "seed", "population", "created_at" (ISO), "created_by"},
     "estimates": {target key: estimate(...) dict}}   # {} while in progress (fewer than 30 audited)

    Audited items count only when drawn; items reviewed through the review queue do not.
    """
    audit = (
        Audit.objects.filter(run_id=run_id)
        .select_related("run", "created_by")
        .annotate(drawn=Count("items"), audited=Count("items", filter=Q(items__audited_at__isnull=False)))
        .first()
    )
    if audit is None:
        return None
    ready = audit.audited >= MIN_AUDITED
    return {
        "status": CALIBRATED if ready else IN_PROGRESS,
        "min_audited": MIN_AUDITED,
        "confidence": CONFIDENCE,
        "audit": {
            "id": audit.pk,
            "size": audit.size,
            "drawn": audit.drawn,
            "audited": audit.audited,
            "seed": audit.seed,
            "population": audit.population,
            "created_at": audit.created_at.isoformat(),
            "created_by": audit.created_by.username if audit.created_by else None,
        },
        "estimates": _estimates(audit) if ready else {},
    }


def calibrated_comparison(base_run_id: int, candidate_run_id: int) -> dict[str, Any] | None:
    """Compare two runs by their calibrated means; None unless both runs are calibrated (≥ 30 audited items).

    {"base": run_calibration(base), "candidate": run_calibration(candidate), "confidence": 0.95,
     "metrics": {target key: {"key", "label", "kind", "base": {calibrated}, "candidate": {calibrated},
                              "delta", "ci_low", "ci_high", "std_error", "significant"}}}

    The two audits are independent random samples, so the interval adds their variances. Both runs
    score the same examples, whose judge scores usually correlate positively: treating the two
    estimates as independent then makes the interval wider, not narrower, than it could be.
    """
    return compare_calibrations(run_calibration(base_run_id), run_calibration(candidate_run_id))


def compare_calibrations(base: dict[str, Any] | None, candidate: dict[str, Any] | None) -> dict[str, Any] | None:
    """`calibrated_comparison` of two `run_calibration` results already read (the comparison page shows
    both audits' progress when they are not both calibrated)."""
    if base is None or candidate is None or not base["status"] == candidate["status"] == CALIBRATED:
        return None
    metrics = {
        key: difference(base["estimates"][key], candidate["estimates"][key])
        for key in base["estimates"]
        if key in candidate["estimates"]
    }
    return {"base": base, "candidate": candidate, "confidence": CONFIDENCE, "metrics": metrics}


@dataclass(frozen=True)
class ItemValues:
    """Per scored item of a run: the judge's and the people's faithfulness and the pass bar."""

    item_ids: np.ndarray
    judge: np.ndarray
    human: np.ndarray  # from current verdicts: the people's on audited items
    threshold: float | None


def item_values(run_id: int, partial_weight: float) -> ItemValues:
    """One query: each scored item's claim counts by judge and by current verdict."""
    claim = "item__claims"
    counts = {
        "n_claims": Count(claim),
        "judge_supported": Count(claim, filter=Q(item__claims__judge_verdict=Verdict.SUPPORTED)),
        "judge_partial": Count(claim, filter=Q(item__claims__judge_verdict=Verdict.PARTIALLY_SUPPORTED)),
        "human_supported": Count(claim, filter=Q(item__claims__current_verdict=Verdict.SUPPORTED)),
        "human_partial": Count(claim, filter=Q(item__claims__current_verdict=Verdict.PARTIALLY_SUPPORTED)),
    }
    rows = list(
        MetricResult.objects.filter(
            item__run_id=run_id, item__status=ItemStatus.DONE, metric="faithfulness", score__isnull=False
        )
        .values("item_id", "threshold")
        .annotate(**counts)
        .order_by("item_id")
    )
    table = np.array([[row[name] for name in counts] for row in rows], dtype=float).reshape(-1, len(counts))
    n_claims = table[:, 0]
    safe = np.where(n_claims > 0, n_claims, 1.0)

    def faithfulness(supported: np.ndarray, partial: np.ndarray) -> np.ndarray:
        return np.where(n_claims > 0, (supported + partial_weight * partial) / safe, 1.0)

    thresholds = {row["threshold"] for row in rows}
    return ItemValues(
        item_ids=np.array([row["item_id"] for row in rows], dtype=np.int64),
        judge=faithfulness(table[:, 1], table[:, 2]),
        human=faithfulness(table[:, 3], table[:, 4]),
        threshold=next(iter(thresholds)) if len(thresholds) == 1 else None,
    )


def _estimates(audit: Audit) -> dict[str, dict[str, Any]]:
    audited_ids = list(
        AuditItem.objects.filter(audit=audit, audited_at__isnull=False).values_list("item_id", flat=True)
    )
    values = item_values(audit.run_id, float(audit.run.settings.get("partial_weight", 0.5)))
    labelled = np.isin(values.item_ids, np.array(audited_ids, dtype=np.int64))
    if labelled.sum() == 0:
        return {}
    judge_labelled, human = values.judge[labelled], values.human[labelled]
    figures = {FAITHFULNESS.key: estimate(FAITHFULNESS, values.judge, judge_labelled, human)}
    if values.threshold is not None:
        bar = values.threshold
        figures[FAITHFULNESS_PASS_RATE.key] = estimate(
            FAITHFULNESS_PASS_RATE, values.judge >= bar, judge_labelled >= bar, human >= bar
        )
    return figures
