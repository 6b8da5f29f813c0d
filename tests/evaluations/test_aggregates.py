"""Run statistics from item summaries: pure, no database."""

from __future__ import annotations

import pytest

from evaluations.aggregates import ItemSummary, MetricScore, combine_samples, metric_stats, run_aggregates
from evaluations.metrics.base import MetricOutcome


def done(tags: tuple[str, ...] = (), overall: float | None = None, **scores: MetricScore) -> ItemSummary:
    return ItemSummary(status="done", tags=tags, overall=overall, results=scores)


def test_mean_median_and_pass_rate() -> None:
    # given
    scores = [MetricScore(0.2, False), MetricScore(0.9, True), MetricScore(1.0, True), MetricScore(0.8, True)]

    # when
    stats = metric_stats(scores)

    # then
    assert stats["mean"] == pytest.approx(0.725)
    assert stats["median"] == pytest.approx(0.85)
    assert stats["pass_rate"] == 0.75
    assert (stats["covered"], stats["skipped"], stats["errored"], stats["passed"]) == (4, 0, 0, 3)
    assert stats["std_mean"] is None


def test_errored_items_are_counted_as_errored_never_as_scores() -> None:
    items = [
        done(faithfulness=MetricScore(1.0, True), overall=0.9),
        done(faithfulness=MetricScore(0.5, False), overall=0.5),
        ItemSummary(status="error"),
        ItemSummary(status="error"),
    ]

    aggregates = run_aggregates(items, ["faithfulness"])

    faithfulness = aggregates["metrics"]["faithfulness"]
    assert faithfulness["mean"] == 0.75  # the two errors are not zeros
    assert (faithfulness["covered"], faithfulness["errored"]) == (2, 2)
    assert faithfulness["pass_rate"] == 0.5
    assert aggregates["overall"]["mean"] == pytest.approx(0.7)
    assert aggregates["overall"]["errored"] == 2
    assert aggregates["items"] == {"total": 4, "done": 2, "errored": 2, "unfinished": 0}


def test_skipped_results_and_unfinished_items() -> None:
    items = [
        done(correctness=MetricScore(None)),  # no reference answer
        done(correctness=MetricScore(5.0, True)),
        done(),  # the metric has no row for this item
        ItemSummary(status="pending"),
    ]

    aggregates = run_aggregates(items, ["correctness"])

    correctness = aggregates["metrics"]["correctness"]
    assert (correctness["mean"], correctness["covered"], correctness["skipped"], correctness["errored"]) == (
        5.0,
        1,
        2,
        0,
    )
    assert aggregates["items"]["unfinished"] == 1


def test_nothing_covered_gives_no_mean() -> None:
    aggregates = run_aggregates([ItemSummary(status="error")], ["relevancy"])

    relevancy = aggregates["metrics"]["relevancy"]
    assert relevancy["mean"] is None and relevancy["median"] is None and relevancy["pass_rate"] is None
    assert relevancy["errored"] == 1


def test_stats_per_tag() -> None:
    items = [
        done(("easy",), relevancy=MetricScore(1.0, True)),
        done(("easy", "short"), relevancy=MetricScore(0.0, False)),
        done(("hard",), relevancy=MetricScore(1.0, True)),
        ItemSummary(status="error", tags=("hard",)),
    ]

    tags = run_aggregates(items, ["relevancy"])["tags"]

    assert sorted(tags) == ["easy", "hard", "short"]
    assert tags["easy"]["metrics"]["relevancy"]["pass_rate"] == 0.5
    assert tags["easy"]["items"]["total"] == 2
    assert (tags["hard"]["metrics"]["relevancy"]["covered"], tags["hard"]["metrics"]["relevancy"]["errored"]) == (1, 1)
    assert tags["short"]["metrics"]["relevancy"]["mean"] == 0.0


def test_repeats_store_mean_and_std_per_item_and_the_run_mean_std() -> None:
    # given three samples of one item: the judge wavers on rubric, relevancy is stable
    def sample(rubric: float) -> dict[str, MetricOutcome]:
        return {
            "rubric": MetricOutcome(
                "rubric", score=rubric, passed=rubric >= 0.7, threshold=0.7, details={"scores": {}}
            ),
            "relevancy": MetricOutcome("relevancy", score=1.0, passed=True, threshold=1.0),
            "citation_audit": MetricOutcome("citation_audit", score=1.0, passed=True),
        }

    # when
    combined = combine_samples([sample(0.6), sample(0.8), sample(1.0)], ["rubric", "relevancy"])

    # then
    rubric = combined["rubric"]
    assert rubric.score == pytest.approx(0.8)
    assert rubric.details["samples"] == [0.6, 0.8, 1.0]
    assert rubric.details["std"] == pytest.approx(0.163299, abs=1e-6)
    assert rubric.details["scores"] == {}  # the first sample's details are kept
    assert rubric.passed is True  # re-judged on the mean
    assert combined["relevancy"].details == {"samples": [1.0, 1.0, 1.0], "std": 0.0}
    assert "samples" not in combined["citation_audit"].details  # deterministic: not repeated

    # and the run reports the mean within-item std (judge stability)
    items = [
        done(rubric=MetricScore(0.8, True, std=0.2)),
        done(rubric=MetricScore(0.5, False, std=0.0)),
    ]
    assert run_aggregates(items, ["rubric"])["metrics"]["rubric"]["std_mean"] == pytest.approx(0.1)


def test_repeats_leave_a_skipped_metric_skipped() -> None:
    skipped = {"correctness": MetricOutcome("correctness", score=None, skipped_reason="no reference answer")}

    combined = combine_samples([skipped, skipped], ["correctness"])

    assert combined["correctness"].score is None
    assert "samples" not in combined["correctness"].details


def test_histograms_bin_each_metric_on_its_scale_and_leave_out_errors_and_skips():
    items = [
        ItemSummary(status="done", overall=0.0, results={"rubric": MetricScore(0.0), "correctness": MetricScore(5.0)}),
        ItemSummary(status="done", overall=1.0, results={"rubric": MetricScore(0.52), "correctness": MetricScore(1.0)}),
        ItemSummary(
            status="done", overall=None, results={"rubric": MetricScore(1.0), "correctness": MetricScore(None)}
        ),
        ItemSummary(status="error"),
    ]

    histograms = run_aggregates(items, ["rubric", "correctness", "relevancy"])["histograms"]

    assert set(histograms) == {"overall", "rubric", "correctness"}  # relevancy scored nothing
    assert histograms["rubric"][0] == 1 and histograms["rubric"][10] == 1 and histograms["rubric"][19] == 1
    assert (
        sum(histograms["correctness"]) == 2 and histograms["correctness"][0] == 1 and histograms["correctness"][19] == 1
    )
    assert sum(histograms["overall"]) == 2
