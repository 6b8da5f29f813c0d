"""Run statistics from item results: pure functions, no database (the services feed them rows).

Per metric (and the item overall): mean, median, pass rate, items covered (a score),
skipped (the metric did not apply, e.g. correctness without a reference answer) and
errored (the item failed: it has no score, and is never averaged in as one). The same
stats per tag. With `repeats` > 1, `combine_samples` folds the k evaluations of one item
into one (mean score, per-item standard deviation), and the run's stats carry `std_mean`:
the mean within-item standard deviation, the judge's (in)stability on that metric.

`histograms` holds the score distribution of each metric and of the overall (HISTOGRAM_BINS
equal bins over the metric's scale), so the run page charts them without reading the items.
"""

from __future__ import annotations

import copy
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluations.metrics.base import MetricOutcome, passes
from evaluations.models import ItemStatus

OVERALL = "overall"  # the item overall's key beside the metrics' names
_DIGITS = 6
HISTOGRAM_BINS = 20
# Score scales that are not 0..1 (correctness is the judge's 1..5).
SCORE_SCALES: dict[str, tuple[float, float]] = {"correctness": (1.0, 5.0)}


@dataclass(frozen=True)
class MetricScore:
    score: float | None  # None: skipped
    passed: bool | None = None
    std: float | None = None  # within-item standard deviation over repeats


@dataclass(frozen=True)
class ItemSummary:
    status: str  # RunItem status: pending / running / done / error
    tags: tuple[str, ...] = ()
    overall: float | None = None
    results: Mapping[str, MetricScore] = field(default_factory=dict)


def metric_stats(scores: Sequence[MetricScore], *, errored: int = 0, skipped: int = 0) -> dict[str, Any]:
    """mean / median / pass_rate over the scores present; None when nothing is covered."""
    values = [entry.score for entry in scores if entry.score is not None]
    verdicts = [entry.passed for entry in scores if entry.score is not None and entry.passed is not None]
    stds = [entry.std for entry in scores if entry.score is not None and entry.std is not None]
    skipped += sum(1 for entry in scores if entry.score is None)
    return {
        "mean": _round(statistics.fmean(values)) if values else None,
        "median": _round(statistics.median(values)) if values else None,
        "pass_rate": _round(sum(verdicts) / len(verdicts)) if verdicts else None,
        "passed": sum(verdicts),
        "covered": len(values),
        "skipped": skipped,
        "errored": errored,
        "std_mean": _round(statistics.fmean(stds)) if stds else None,
    }


def run_aggregates(items: Iterable[ItemSummary], metrics: Sequence[str]) -> dict[str, Any]:
    """Stats per metric, for the item overall, and per tag. Unfinished items are counted, not scored."""
    items = list(items)
    by_tag: dict[str, list[ItemSummary]] = {}
    for item in items:
        for tag in dict.fromkeys(item.tags):
            by_tag.setdefault(tag, []).append(item)
    return {
        "items": _item_counts(items),
        "metrics": _stats_by_metric(items, metrics),
        OVERALL: _overall_stats(items),
        "tags": {
            tag: {
                "items": _item_counts(tagged),
                "metrics": _stats_by_metric(tagged, metrics),
                OVERALL: _overall_stats(tagged),
            }
            for tag, tagged in sorted(by_tag.items())
        },
        "histograms": _histograms(items, metrics),
    }


def score_histogram(values: Iterable[float], low: float = 0.0, high: float = 1.0) -> list[int]:
    """Counts of the values in HISTOGRAM_BINS equal bins from low to high (high in the last bin; outliers clamped)."""
    counts = [0] * HISTOGRAM_BINS
    for value in values:
        share = (min(max(value, low), high) - low) / (high - low)
        counts[min(int(share * HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += 1
    return counts


def _histograms(items: Sequence[ItemSummary], metrics: Sequence[str]) -> dict[str, list[int]]:
    done = [item for item in items if item.status == ItemStatus.DONE]
    values = {OVERALL: [item.overall for item in done if item.overall is not None]}
    for name in metrics:
        values[name] = [
            item.results[name].score for item in done if name in item.results and item.results[name].score is not None
        ]
    return {
        name: score_histogram(scores, *SCORE_SCALES.get(name, (0.0, 1.0))) for name, scores in values.items() if scores
    }


def combine_samples(
    samples: Sequence[Mapping[str, MetricOutcome]], repeated: Iterable[str]
) -> dict[str, MetricOutcome]:
    """Fold k evaluations of one item: each `repeated` metric scored in every sample gets the mean.

    The first sample's outcome is kept (its claims, feedback, details) with score = mean,
    details["samples"] = the k scores, details["std"] = their population standard deviation,
    and passed re-judged on the mean against the threshold.
    """
    combined = dict(samples[0])
    for name in repeated:
        outcomes = [sample[name] for sample in samples if name in sample]
        scores = [outcome.score for outcome in outcomes]
        if name not in combined or any(score is None for score in scores):
            continue
        first = combined[name]
        mean = statistics.fmean(scores)  # type: ignore[arg-type]
        outcome = copy.copy(first)
        outcome.score = mean
        outcome.details = {**first.details, "samples": scores, "std": statistics.pstdev(scores)}  # type: ignore[arg-type]
        outcome.passed = passes(mean, first.threshold)
        combined[name] = outcome
    return combined


def mean_overall(overalls: Sequence[float | None]) -> float | None:
    present = [value for value in overalls if value is not None]
    return statistics.fmean(present) if present else None


def _stats_by_metric(items: Sequence[ItemSummary], metrics: Sequence[str]) -> dict[str, dict[str, Any]]:
    stats = {}
    for name in metrics:
        done = [item for item in items if item.status == ItemStatus.DONE]
        scores = [item.results[name] for item in done if name in item.results]
        missing = len(done) - len(scores)  # a finished item without this metric's row: not applicable
        stats[name] = metric_stats(scores, errored=_errored(items), skipped=missing)
    return stats


def _overall_stats(items: Sequence[ItemSummary]) -> dict[str, Any]:
    scores = [MetricScore(score=item.overall) for item in items if item.status == ItemStatus.DONE]
    return metric_stats(scores, errored=_errored(items))


def _item_counts(items: Sequence[ItemSummary]) -> dict[str, int]:
    done = sum(1 for item in items if item.status == ItemStatus.DONE)
    errored = _errored(items)
    return {"total": len(items), "done": done, "errored": errored, "unfinished": len(items) - done - errored}


def _errored(items: Sequence[ItemSummary]) -> int:
    return sum(1 for item in items if item.status == ItemStatus.ERROR)


def _round(value: float) -> float:
    return round(value, _DIGITS)


# --- Review statistics from SQL aggregate rows (evaluations.sql.run_review_stats) -------------

# Values per scope: overall mean, median, covered; faithfulness mean, median, covered, passed, judged.
REVIEW_STATS_COLUMNS = 8


def sql_overall_stats(values: Sequence[Any]) -> dict[str, Any]:
    """mean / median / covered of the item overall from a stats chunk (see run_review_stats)."""
    mean, median, covered = values[0:3]
    return {"mean": _round_or_none(mean), "median": _round_or_none(median), "covered": covered}


def sql_faithfulness_stats(values: Sequence[Any]) -> dict[str, Any]:
    """mean / median / covered / passed / pass_rate of faithfulness from a stats chunk."""
    mean, median, covered, passed, judged = values[3:8]
    return {
        "mean": _round_or_none(mean),
        "median": _round_or_none(median),
        "covered": covered,
        "passed": passed,
        "pass_rate": _round(passed / judged) if judged else None,
    }


def review_summary(row: Sequence[Any]) -> dict[str, Any]:
    """Run.aggregates["review"] from run_review_stats' row: items reviewed / to review, and the overall and
    faithfulness stats as the judge left them ("judge") and after human review ("reviewed")."""
    reviewed, judge = row[:REVIEW_STATS_COLUMNS], row[REVIEW_STATS_COLUMNS : 2 * REVIEW_STATS_COLUMNS]
    return {
        "items": {"reviewed": row[-2], "to_review": row[-1]},
        OVERALL: {"judge": sql_overall_stats(judge), "reviewed": sql_overall_stats(reviewed)},
        "faithfulness": {"judge": sql_faithfulness_stats(judge), "reviewed": sql_faithfulness_stats(reviewed)},
    }


def _round_or_none(value: float | None) -> float | None:
    return None if value is None else _round(value)
