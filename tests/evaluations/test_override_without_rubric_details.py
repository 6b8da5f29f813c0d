"""claim_override on an item whose rubric result has a score but no per-dimension details (issue #12's bug:
`KeyError: 'scores'`): the claim is reviewed and faithfulness rescored; the overall, which cannot be
rebuilt without the rubric's dimensions, keeps its value."""

from __future__ import annotations

import pytest

from bench.seed_review import seed_finished_run
from evaluations.models import Claim, MetricResult, RunItem
from evaluations.services import overrides as review

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


@pytest.mark.parametrize(
    "details",
    [
        {},
        {"error": "judge 'x': unreadable reply"},
        {"raw": {"faithfulness": 0.5}, "caps_applied": []},
        {"scores": {"faithfulness": 0.5}, "caps_applied": []},
        {"scores": {"faithfulness": 0.5, "relevance": 1.0, "completeness": 1.0, "reasoning_quality": 1.0}},
    ],
    ids=["empty", "errored", "no-scores-key", "some-dimensions", "no-caps"],
)
def test_an_override_on_an_item_whose_rubric_lacks_its_dimension_scores_rescores_faithfulness(
    make_user, details
) -> None:
    # given: the first item's rubric has a score but its details lack "scores"
    reviewer = make_user("rita", role="reviewer")
    run = seed_finished_run(items=4, claims=3)
    item = RunItem.objects.filter(run=run).order_by("id").first()
    MetricResult.objects.filter(item=item, metric="rubric").update(details=details)
    overall_before = item.overall_score
    claim = Claim.objects.filter(item=item).order_by("position").first()
    new_verdict = "CONTRADICTED" if claim.current_verdict != "CONTRADICTED" else "SUPPORTED"
    faithfulness_before = MetricResult.objects.get(item=item, metric="faithfulness").score

    # when
    entry = review.claim_override(claim=claim, reviewer=reviewer, new_verdict=new_verdict, reason="c1 says otherwise")

    # then
    claim.refresh_from_db()
    item.refresh_from_db()
    faithfulness = MetricResult.objects.get(item=item, metric="faithfulness")
    assert entry.new_verdict == claim.current_verdict == new_verdict
    assert faithfulness.score != faithfulness_before
    assert faithfulness.details["judge"]["score"] == faithfulness_before
    assert item.overall_score == overall_before  # nothing to rebuild it from: left as the judge scored it
