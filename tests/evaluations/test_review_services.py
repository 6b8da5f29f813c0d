"""Reviewers' writes: override, confirm, undo, history, roles, and the exact recompute of item and run scores."""

from __future__ import annotations

import statistics

import pytest
from django.core.exceptions import PermissionDenied

from bench.seed_review import seed_finished_run
from evaluations.metrics.rubric import item_overall
from evaluations.models import Claim, MetricResult, Run, RunItem, RunStatus, VerdictOverride
from evaluations.services import overrides as review
from evaluations.services import runs as services

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


@pytest.fixture
def reviewer(make_user):
    return make_user("rita", role="reviewer")


@pytest.fixture
def run():
    return seed_finished_run(items=12, claims=4)


def first_item(run: Run, position: int = 0) -> RunItem:
    return RunItem.objects.filter(run=run).order_by("id")[position]


def claim_of(item: RunItem, position: int) -> Claim:
    return Claim.objects.get(item=item, position=position)


def faithfulness_of(item: RunItem) -> MetricResult:
    return MetricResult.objects.get(item=item, metric="faithfulness")


def assert_aggregates_match_a_full_rebuild(run: Run) -> None:
    run.refresh_from_db()
    rebuilt = services.build_aggregates(run)
    stored = run.aggregates
    keys = ("mean", "median", "pass_rate", "passed", "covered")
    assert {k: stored["overall"][k] for k in keys} == {k: rebuilt["overall"][k] for k in keys}
    faithfulness = stored["metrics"]["faithfulness"]
    assert {k: faithfulness[k] for k in keys} == {k: rebuilt["metrics"]["faithfulness"][k] for k in keys}
    for tag, scope in rebuilt["tags"].items():
        assert {k: stored["tags"][tag]["overall"][k] for k in keys} == {k: scope["overall"][k] for k in keys}, tag
        stored_f = stored["tags"][tag]["metrics"]["faithfulness"]
        assert {k: stored_f[k] for k in keys} == {k: scope["metrics"]["faithfulness"][k] for k in keys}, tag


def test_an_override_records_history_keeps_the_judge_verdict_and_rescores_the_item(run, reviewer) -> None:
    # given: item 1's claims are SUPPORTED, PARTIALLY_SUPPORTED, SUPPORTED, CONTRADICTED (and its extra sentence)
    item = first_item(run)
    claim = claim_of(item, 0)
    judge_verdicts = list(Claim.objects.filter(item=item).order_by("position").values_list("judge_verdict", flat=True))
    before = faithfulness_of(item)
    overall_before = item.overall_score

    # when
    entry = review.claim_override(claim=claim, reviewer=reviewer, new_verdict="CONTRADICTED", reason="c1 says spring")

    # then
    assert (entry.old_verdict, entry.new_verdict, entry.reviewer, entry.reason) == (
        judge_verdicts[0],
        "CONTRADICTED",
        reviewer,
        "c1 says spring",
    )
    claim.refresh_from_db()
    assert (claim.judge_verdict, claim.current_verdict) == (judge_verdicts[0], "CONTRADICTED")
    assert claim.reviewed_at is not None
    verdicts = ["CONTRADICTED", *judge_verdicts[1:]]
    supported = verdicts.count("SUPPORTED") + 0.5 * verdicts.count("PARTIALLY_SUPPORTED")
    after = faithfulness_of(item)
    assert after.score == pytest.approx(supported / len(verdicts))
    assert after.passed is (after.score >= 0.8)
    assert after.details["judge"] == {"score": before.score, "passed": before.passed, "overall": overall_before}
    assert after.details["reviewed"] == {
        "score": after.score,
        "passed": after.passed,
        "claims_reviewed": 1,
        "n_claims": len(verdicts),
    }
    assert after.details["counts"]["CONTRADICTED"] == verdicts.count("CONTRADICTED")
    item.refresh_from_db()
    rubric = MetricResult.objects.get(item=item, metric="rubric")
    assert item.overall_score == item_overall(rubric.details, after.score, run.settings["weights"])
    assert item.overall_score < overall_before
    assert item.reviewed_at is None  # three claims still unreviewed


def test_the_run_aggregates_equal_a_full_rebuild_after_reviews_across_tags(run, reviewer) -> None:
    for position, verdict in ((0, "CONTRADICTED"), (3, "SUPPORTED"), (6, "NOT_ENOUGH_INFO"), (7, "SUPPORTED")):
        item = first_item(run, position)
        review.claim_override(claim=claim_of(item, 1), reviewer=reviewer, new_verdict=verdict, reason="checked")
    review.claim_confirm(claim=claim_of(first_item(run, 2), 0), reviewer=reviewer)

    assert_aggregates_match_a_full_rebuild(run)
    run.refresh_from_db()
    judged = run.aggregates["review"]
    assert judged["items"] == {"reviewed": 0, "to_review": 12}
    assert judged["overall"]["reviewed"]["mean"] == run.aggregates["overall"]["mean"]
    # the judge's side: every item's overall as the judge left it
    judge_overalls = []
    for item in RunItem.objects.filter(run=run):
        stored = faithfulness_of(item).details.get("judge")
        judge_overalls.append(stored["overall"] if stored else item.overall_score)
    assert judged["overall"]["judge"]["mean"] == round(statistics.fmean(judge_overalls), 6)
    assert judged["overall"]["judge"]["median"] == round(statistics.median(judge_overalls), 6)
    assert judged["overall"]["judge"]["mean"] != judged["overall"]["reviewed"]["mean"]


def test_confirming_every_claim_marks_the_item_reviewed_without_changing_its_score(run, reviewer) -> None:
    item = first_item(run, 1)
    score_before = faithfulness_of(item).score

    for claim in Claim.objects.filter(item=item):
        entry = review.claim_confirm(claim=claim, reviewer=reviewer)
        assert entry.old_verdict == entry.new_verdict == claim.current_verdict

    item.refresh_from_db()
    assert item.reviewed_by == reviewer and item.reviewed_at is not None
    after = faithfulness_of(item)
    assert after.score == score_before
    assert after.details["reviewed"]["claims_reviewed"] == after.details["reviewed"]["n_claims"]
    run.refresh_from_db()
    assert run.aggregates["review"]["items"] == {"reviewed": 1, "to_review": 11}


def test_undo_adds_an_entry_back_to_the_earlier_verdict_and_never_deletes(run, reviewer) -> None:
    item = first_item(run)
    claim = claim_of(item, 0)
    judge_verdict = claim.judge_verdict
    score_before = faithfulness_of(item).score
    review.claim_override(claim=claim, reviewer=reviewer, new_verdict="NOT_ENOUGH_INFO", reason="no source")
    review.claim_confirm(claim=claim, reviewer=reviewer)

    entry = review.claim_undo(claim=claim, reviewer=reviewer)

    assert (entry.old_verdict, entry.new_verdict) == ("NOT_ENOUGH_INFO", judge_verdict)
    assert entry.reason.startswith("Undo: NOT_ENOUGH_INFO")
    claim.refresh_from_db()
    assert claim.current_verdict == judge_verdict
    history = list(VerdictOverride.objects.filter(claim=claim).order_by("id").values_list("old_verdict", "new_verdict"))
    assert history == [
        (judge_verdict, "NOT_ENOUGH_INFO"),
        ("NOT_ENOUGH_INFO", "NOT_ENOUGH_INFO"),
        ("NOT_ENOUGH_INFO", judge_verdict),
    ]
    assert faithfulness_of(item).score == score_before
    assert_aggregates_match_a_full_rebuild(run)


def test_undo_without_a_change_is_refused(run, reviewer) -> None:
    claim = claim_of(first_item(run), 0)
    review.claim_confirm(claim=claim, reviewer=reviewer)

    with pytest.raises(review.NothingToUndo, match="no verdict change"):
        review.claim_undo(claim=claim, reviewer=reviewer)


@pytest.mark.parametrize("role", ["viewer", None])
def test_a_viewer_cannot_review_and_nothing_is_written(run, make_user, role) -> None:
    user = make_user("vic", role=role)
    claim = claim_of(first_item(run), 0)

    with pytest.raises(PermissionDenied):
        review.claim_override(claim=claim, reviewer=user, new_verdict="CONTRADICTED", reason="x")
    with pytest.raises(PermissionDenied):
        review.claim_confirm(claim=claim, reviewer=user)
    with pytest.raises(PermissionDenied):
        review.item_mark_reviewed(item=first_item(run), reviewer=user)

    assert not VerdictOverride.objects.exists()
    claim.refresh_from_db()
    assert claim.current_verdict == claim.judge_verdict and claim.reviewed_at is None


def test_an_admin_may_review(run, make_user) -> None:
    admin = make_user("ada", role="admin")
    review.claim_confirm(claim=claim_of(first_item(run), 0), reviewer=admin)
    assert VerdictOverride.objects.count() == 1


def test_bad_input_names_the_parameter(run, reviewer) -> None:
    claim = claim_of(first_item(run), 0)
    other = "CONTRADICTED" if claim.current_verdict != "CONTRADICTED" else "SUPPORTED"

    with pytest.raises(ValueError, match="new_verdict"):
        review.claim_override(claim=claim, reviewer=reviewer, new_verdict="MAYBE", reason="x")
    with pytest.raises(ValueError, match="reason"):
        review.claim_override(claim=claim, reviewer=reviewer, new_verdict=other, reason="   ")
    assert not VerdictOverride.objects.exists()


def test_with_repeats_the_judge_mean_and_std_stay_and_the_reviewed_score_is_labelled(reviewer) -> None:
    run = seed_finished_run(items=3, claims=2, repeats=3, name="repeats")
    item = first_item(run)
    before = faithfulness_of(item)
    samples, std = before.details["samples"], before.details["std"]

    review.claim_override(claim=claim_of(item, 0), reviewer=reviewer, new_verdict="CONTRADICTED", reason="c1 disagrees")

    after = faithfulness_of(item)
    assert after.details["samples"] == samples and after.details["std"] == std
    assert after.details["judge"]["score"] == before.score == statistics.fmean(samples)
    verdicts = list(Claim.objects.filter(item=item).order_by("position").values_list("current_verdict", flat=True))
    reviewed = (verdicts.count("SUPPORTED") + 0.5 * verdicts.count("PARTIALLY_SUPPORTED")) / len(verdicts)
    assert after.score == after.details["reviewed"]["score"] == pytest.approx(reviewed)
    assert after.details["reviewed"]["score"] != after.details["judge"]["score"]


def test_a_claimless_item_is_marked_reviewed_and_one_with_claims_is_refused(run, reviewer) -> None:
    item = first_item(run)
    with pytest.raises(ValueError, match="claims"):
        review.item_mark_reviewed(item=item, reviewer=reviewer)

    Claim.objects.filter(item=item).delete()
    review.item_mark_reviewed(item=item, reviewer=reviewer)

    item.refresh_from_db()
    assert item.reviewed_by == reviewer
    run.refresh_from_db()
    assert run.aggregates["review"]["items"]["reviewed"] == 1


def test_a_running_run_keeps_its_aggregates_until_it_finishes(run, reviewer) -> None:
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, aggregates={})
    item = first_item(run)

    review.claim_override(claim=claim_of(item, 0), reviewer=reviewer, new_verdict="CONTRADICTED", reason="wrong")

    run.refresh_from_db()
    assert run.aggregates == {}
    assert faithfulness_of(item).details["reviewed"]["claims_reviewed"] == 1


def test_a_full_rebuild_of_the_aggregates_keeps_the_judge_and_reviewed_figures(run, reviewer) -> None:
    item = first_item(run)
    review.claim_override(claim=claim_of(item, 0), reviewer=reviewer, new_verdict="CONTRADICTED", reason="wrong")
    run.refresh_from_db()
    after_review = run.aggregates["review"]

    services.run_aggregates_refresh(run=run)  # e.g. a re-run of failed items finalises the run again

    run.refresh_from_db()
    assert run.aggregates["review"] == after_review
    assert after_review["overall"]["judge"]["mean"] != after_review["overall"]["reviewed"]["mean"]
