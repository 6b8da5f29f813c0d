"""Reviewers' writes: override a claim's verdict, confirm the judge's, undo, mark a claim-less item reviewed.

Every review is one `VerdictOverride` row (a confirmation has new_verdict == old_verdict; an undo
is a new row back to the verdict before the latest change, never a deletion). The judge's own
verdict stays in `Claim.judge_verdict`. Only reviewers and admins may write (`PermissionDenied`
otherwise, whatever the page shows); `reviewer=None` is the system, as in the run services.

After each review, in the same transaction:

1. The item (`item_rescore`): faithfulness from the claims' current verdicts (the metric's own
   `faithfulness_score`), then the item's overall (`metrics.overall_score`). The judge's figures
   are kept in the faithfulness result's `details["judge"]` the first time a person touches the
   item — `score`, `passed`, the item's `overall` — and the person's in `details["reviewed"]`
   (`score`, `passed`, `claims_reviewed`, `n_claims`). `score` / `overall_score` hold the reviewed
   values from then on, so tables and aggregates use them; with repeats, `details["samples"]`
   and `details["std"]` stay the judge's k samples: the judge's mean ± std is never replaced, and
   the reviewed score (from the claims of the first sample, the ones a person sees) is labelled.
2. The run (`run_review_aggregates_update`, finished runs only: a running run gets its
   aggregates when it finishes): one SQL aggregation over the run's items — never the items in
   Python — recomputes what a review can change: faithfulness and overall mean / median /
   pass rate for the run and for each tag of the item, and the `review` key:

       aggregates["review"] = {
           "items": {"reviewed": N, "to_review": M},          # finished items
           "overall":      {"judge": STATS, "reviewed": STATS},
           "faithfulness": {"judge": STATS, "reviewed": STATS},
       }
       STATS = {"mean", "median", "covered", "pass_rate"}   # pass_rate None for overall

   "judge" is over the judge's values of every item, "reviewed" over the values after human
   review (the same numbers as aggregates["overall"] / ["metrics"]["faithfulness"]). On a
   database other than PostgreSQL the aggregates are rebuilt in full instead (small local runs).

A drawn item of the run's audit becomes audited in the same transaction once every claim has a
human verdict (`services.audits.audit_item_sync`).

Reviews of one run are serialised by a lock on the run's row, so two reviewers' recomputes never
miss each other's change.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from evalsite.roles import REVIEWER, require_role
from evaluations.aggregates import (
    OVERALL,
    REVIEW_STATS_COLUMNS,
    review_summary,
    sql_faithfulness_stats,
    sql_overall_stats,
)
from evaluations.metrics import overall_score
from evaluations.metrics.base import MetricOutcome, passes
from evaluations.metrics.faithfulness import faithfulness_details, faithfulness_score
from evaluations.metrics.rubric import DIMENSIONS
from evaluations.models import (
    FINISHED_STATUSES,
    Claim,
    ItemStatus,
    MetricResult,
    Run,
    RunItem,
    Verdict,
    VerdictOverride,
)
from evaluations.services.audits import audit_item_sync
from evaluations.services.runs import run_aggregates_refresh
from evaluations.sql import run_review_stats

UNDO_PREFIX = "Undo: "


class NothingToUndo(ValueError):
    """The claim has no verdict change to undo (never reviewed, or only confirmed)."""


def claim_override(*, claim: Claim, reviewer: Any, new_verdict: str, reason: str = "") -> VerdictOverride:
    """Set the claim's verdict (a reason is required when it changes; the same verdict is a confirmation),
    then rescore the item and the run."""
    if new_verdict not in Verdict.values:
        raise ValueError(f"new_verdict: {new_verdict!r} is not one of {', '.join(Verdict.values)}")
    reason = (reason or "").strip()
    return _review(claim, reviewer, lambda current: (new_verdict, reason), require_reason=True)


def claim_confirm(*, claim: Claim, reviewer: Any, reason: str = "") -> VerdictOverride:
    """Agree with the claim's current verdict: a review (old == new) that the agreement statistics count."""
    return _review(claim, reviewer, lambda current: (current.current_verdict, (reason or "").strip()))


def claim_undo(*, claim: Claim, reviewer: Any) -> VerdictOverride:
    """Undo the latest verdict change: a new entry back to the verdict before it (history is never deleted)."""

    def back(current: Claim) -> tuple[str, str]:
        last = _latest_change(current.pk)
        if last is None:
            raise NothingToUndo("claim: no verdict change to undo")
        return last.old_verdict, f"{UNDO_PREFIX}{last.new_verdict} → {last.old_verdict} (entry {last.pk})"

    return _review(claim, reviewer, back)


@transaction.atomic
def item_mark_reviewed(*, item: RunItem, reviewer: Any) -> RunItem:
    """Mark an item without claims reviewed (an item with claims is reviewed claim by claim)."""
    _check_reviewer(reviewer)
    item = RunItem.objects.select_for_update().get(pk=item.pk)
    if item.status not in (ItemStatus.DONE, ItemStatus.ERROR):
        raise ValueError(f"item: {item.status} items cannot be reviewed yet")
    if Claim.objects.filter(item_id=item.pk).exists():
        raise ValueError("item: it has claims; review each claim instead")
    if item.reviewed_at is None:
        item.reviewed_at, item.reviewed_by = timezone.now(), reviewer
        RunItem.objects.filter(pk=item.pk).update(reviewed_at=item.reviewed_at, reviewed_by=reviewer)
        run = Run.objects.select_for_update().get(pk=item.run_id)
        run_review_aggregates_update(run=run, item_id=item.pk)
        audit_item_sync(item=item, user=reviewer, now=item.reviewed_at)
    return item


# --- One review --------------------------------------------------------------------------------


@transaction.atomic
def _review(claim: Claim, reviewer: Any, decide, *, require_reason: bool = False) -> VerdictOverride:
    _check_reviewer(reviewer)
    # The claim and its item are locked, then the run: every review of the run waits for the one before.
    current = Claim.objects.select_for_update().select_related("item").get(pk=claim.pk)
    run = Run.objects.select_for_update().get(pk=current.item.run_id)
    new_verdict, reason = decide(current)
    if require_reason and new_verdict != current.current_verdict and not reason:
        raise ValueError("reason: say why the judge's verdict is wrong")
    now = timezone.now()
    override = VerdictOverride.objects.create(
        claim=current, reviewer=reviewer, old_verdict=current.current_verdict, new_verdict=new_verdict, reason=reason
    )
    current.current_verdict = new_verdict
    current.reviewed_at = current.reviewed_at or now
    Claim.objects.filter(pk=current.pk).update(current_verdict=new_verdict, reviewed_at=current.reviewed_at)
    item_rescore(item=current.item, run=run, reviewer=reviewer, now=now)
    run_review_aggregates_update(run=run, item_id=current.item_id)
    audit_item_sync(item=current.item, user=reviewer, now=now)  # the last claim's verdict completes a drawn item
    return override


def _check_reviewer(user: Any) -> None:
    """Reviewers and admins may review; None is the system (an import of human labels, say), as in the run services."""
    if user is not None:
        require_role(user, REVIEWER, "Reviewing a verdict")


def _latest_change(claim_id: int) -> VerdictOverride | None:
    for entry in VerdictOverride.objects.filter(claim_id=claim_id).order_by("-created_at", "-id"):
        if entry.old_verdict != entry.new_verdict:
            return entry
    return None


# --- The item's scores -----------------------------------------------------------------------


def item_rescore(*, item: RunItem, run: Run, reviewer: Any = None, now: Any = None) -> None:
    """Faithfulness and overall from the claims' current verdicts; judge's figures kept (see the module doc).

    Marks the item reviewed (by `reviewer`) once every claim has been reviewed.
    """
    claims = list(
        Claim.objects.filter(item_id=item.pk).order_by("position").values_list("current_verdict", "reviewed_at")
    )
    results = {result.metric: result for result in MetricResult.objects.filter(item_id=item.pk)}
    item_fields: dict[str, Any] = {}
    all_reviewed = bool(claims) and all(reviewed_at is not None for _, reviewed_at in claims)
    if all_reviewed and item.reviewed_at is None:
        item_fields.update(reviewed_at=now or timezone.now(), reviewed_by=reviewer)
    faithfulness = results.get("faithfulness")
    if faithfulness is not None:
        verdicts = [verdict for verdict, _ in claims]
        n_claims = int(faithfulness.details.get("n_claims", len(verdicts)))
        partial_weight = run.settings["partial_weight"]
        details = faithfulness.details
        judge = details.get("judge") or {
            "score": faithfulness.score,
            "passed": faithfulness.passed,
            "overall": item.overall_score,
        }
        score = faithfulness_score(verdicts, n_claims, partial_weight)
        passed = passes(score, faithfulness.threshold)
        faithfulness.score, faithfulness.passed = score, passed
        faithfulness.details = {
            **details,
            **faithfulness_details(verdicts, n_claims, partial_weight),
            "judge": judge,
            "reviewed": {
                "score": score,
                "passed": passed,
                "claims_reviewed": sum(reviewed_at is not None for _, reviewed_at in claims),
                "n_claims": n_claims,
            },
        }
        MetricResult.objects.filter(pk=faithfulness.pk).update(score=score, passed=passed, details=faithfulness.details)
        if _overall_rebuildable(results.get("rubric")):
            outcomes = {
                name: MetricOutcome(metric=name, score=result.score, details=result.details)
                for name, result in results.items()
            }
            item_fields["overall_score"] = overall_score(outcomes, run.settings)
    if item_fields:
        RunItem.objects.filter(pk=item.pk).update(**item_fields)
        for name, value in item_fields.items():
            setattr(item, name, value)


def _overall_rebuildable(rubric: MetricResult | None) -> bool:
    """The overall is rebuilt from the rubric's dimension scores; a rubric result without them (its judge
    errored, or details written without "scores") leaves the item's overall as it was rather than
    failing the review (KeyError: 'scores')."""
    if rubric is None or rubric.score is None:
        return True  # overall_score gives None: no rubric, no overall
    details = rubric.details if isinstance(rubric.details, dict) else {}
    scores = details.get("scores")
    return isinstance(scores, dict) and all(name in scores for name in DIMENSIONS) and "caps_applied" in details


# --- The run's aggregates --------------------------------------------------------------------


def run_review_aggregates_update(*, run: Run, item_id: int) -> None:
    """Recompute what a review of item `item_id` changed in the run's aggregates (see the module doc)."""
    if run.status not in FINISHED_STATUSES or not run.aggregates:
        return  # a running run's aggregates are built when it finishes
    if connection.vendor != "postgresql":
        run_aggregates_refresh(run=run)  # small local runs: rebuilt in full
        return
    aggregates = run.aggregates
    tags = [tag for tag in _item_tags(item_id) if tag in aggregates.get("tags", {})]
    row = run_review_stats(run.pk, tags)
    size = REVIEW_STATS_COLUMNS
    reviewed, _judge, *by_tag = (row[i : i + size] for i in range(0, len(row) - 2, size))
    scopes = [
        (aggregates, reviewed),
        *((aggregates["tags"][tag], chunk) for tag, chunk in zip(tags, by_tag, strict=True)),
    ]
    for scope, values in scopes:
        scope.setdefault(OVERALL, {}).update(sql_overall_stats(values))
        if "faithfulness" in scope.get("metrics", {}):
            scope["metrics"]["faithfulness"].update(sql_faithfulness_stats(values))
    aggregates["review"] = review_summary(row)
    Run.objects.filter(pk=run.pk).update(aggregates=aggregates)
    run.aggregates = aggregates


def _item_tags(item_id: int) -> list[str]:
    tags = RunItem.objects.filter(pk=item_id).values_list("example__tags", flat=True).first() or []
    return list(dict.fromkeys(str(tag) for tag in tags)) if isinstance(tags, list) else []
