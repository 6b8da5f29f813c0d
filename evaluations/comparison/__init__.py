"""Compare two runs of one dataset: per-metric deltas with intervals, flips, item changes, settings diff.

`run_compare(base, candidate)` pairs the runs' items by the example's external id (the runs may
use different versions of the dataset), then per metric (and the items' overall score):

- base mean, candidate mean and their delta over the pairs both runs scored, with a paired
  bootstrap 95% interval (`statistics.paired_bootstraps`); significant when it excludes 0;
- pass/fail flips each way with McNemar's exact p (metrics with a pass/fail verdict);
- pairs left out: an item errored in either run (`errored`), or a run has no score for it
  (`unscored`: the metric was skipped, not run, or the item is unfinished);
- the largest regressions and improvements (REGRESSIONS_LIMIT each).

Plus one point per matched example for a scatter, the examples found in one run only, and the
settings that differ (judge, provider, model, prompt versions, metrics, weights, thresholds, ...)
with `judges_or_prompts_differ` for the page's warning. `compare_item` is the side-by-side diff
of one example. Scores are the stored `MetricResult.score` (reviewer overrides are already in
faithfulness); claims show the judge's and the current verdict.

Every result is a dataclass of plain values: `dataclasses.asdict` makes it JSON.
Queries: 3 for `run_compare` and 5 for `compare_item`, whatever the runs' size.
"""

from evaluations.comparison.common import (
    ComparisonError,
    SettingRow,
    SettingsDiff,
    UnknownExample,
    UnknownRun,
    settings_diff,
)
from evaluations.comparison.item import ItemDiff, compare_item
from evaluations.comparison.runs import MetricComparison, RunComparison, run_compare

__all__ = [
    "ComparisonError",
    "ItemDiff",
    "MetricComparison",
    "RunComparison",
    "SettingRow",
    "SettingsDiff",
    "UnknownExample",
    "UnknownRun",
    "compare_item",
    "run_compare",
    "settings_diff",
]
