"""Metric registry and the evaluation of one item.

`REGISTRY` maps each metric name to its metric (see the modules beside this one);
`evaluate_item` runs a list of them on one item and computes the item's overall score.

Overall score of an item (`overall_score`): the rubric's weighted mean of faithfulness,
relevance, completeness and reasoning_quality after the citation clamps. When claim-level
faithfulness also ran, its score replaces the rubric's faithfulness (capped by the same
citation caps) and the weighted mean is recomputed. When the rubric did not run (or was
skipped) the overall is None: completeness and reasoning quality have no other source, and
mixing pass/fail metrics on different scales into one number would mislead.

Judge failures (`judges.types.JudgeError`, including unparseable replies) propagate: the
run engine records the item as an error, never as a score.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from evaluations.metrics.base import ItemInput, JudgeRequest, Metric, MetricContext, MetricOutcome
from evaluations.metrics.citation_audit import CITATION_AUDIT
from evaluations.metrics.correctness import CORRECTNESS
from evaluations.metrics.faithfulness import FAITHFULNESS
from evaluations.metrics.relevancy import RELEVANCY
from evaluations.metrics.retrieval import RETRIEVAL
from evaluations.metrics.rubric import RUBRIC, item_overall
from evaluations.metrics.run_settings import resolve_settings

REGISTRY: dict[str, Metric] = {
    metric.name: metric for metric in (FAITHFULNESS, RELEVANCY, RUBRIC, CORRECTNESS, CITATION_AUDIT, RETRIEVAL)
}
METRIC_NAMES: tuple[str, ...] = tuple(REGISTRY)


@dataclass
class ItemEvaluation:
    outcomes: dict[str, MetricOutcome]  # by metric name, in the order they ran
    overall: float | None


def evaluate_item(item: ItemInput, metric_names: Sequence[str], ctx: MetricContext) -> ItemEvaluation:
    """Run the named metrics on one item under `ctx.settings` (resolved here again: defaults filled, validated).

    With rubric, citation_audit always runs first and its outcome is included even when not
    named: it is the evidence of the rubric's clamps (0 judge calls).
    """
    ctx = replace(ctx, settings=resolve_settings(ctx.settings))
    outcomes = {name: REGISTRY[name].evaluate(item, ctx) for name in execution_order(metric_names)}
    return ItemEvaluation(outcomes=outcomes, overall=overall_score(outcomes, ctx.settings))


def first_prompts(item: ItemInput, metric_names: Sequence[str], settings: Mapping) -> list[JudgeRequest]:
    """The first judge prompt of each named metric that asks one: they depend only on the item, so the
    engine looks the cache up for all of them in one query before the metrics run."""
    resolved = resolve_settings(settings)
    requests = []
    for name in execution_order(metric_names):
        first_prompt = getattr(REGISTRY[name], "first_prompt", None)
        request = first_prompt(item, resolved) if first_prompt is not None else None
        if request is not None:
            requests.append(request)
    return requests


def execution_order(metric_names: Sequence[str]) -> list[str]:
    """The names without repeats, citation_audit (added if needed) just before rubric; ValueError on an unknown name."""
    require_known(metric_names)
    names = list(dict.fromkeys(metric_names))
    if "rubric" in names:
        if "citation_audit" in names:
            names.remove("citation_audit")
        names.insert(names.index("rubric"), "citation_audit")
    return names


def require_known(metric_names: Iterable[str]) -> None:
    """ValueError naming `metrics` and the unknown names, when any name is not a registered metric."""
    unknown = [name for name in metric_names if name not in REGISTRY]
    if unknown:
        raise ValueError(f"metrics: unknown metric {', '.join(unknown)} (known: {', '.join(METRIC_NAMES)})")


def has_overall(metric_names: Collection[str]) -> bool:
    """Whether a run of these metrics gives its items an overall score (it is built on the rubric)."""
    return "rubric" in metric_names


def overall_score(outcomes: Mapping[str, MetricOutcome], settings: Mapping) -> float | None:
    """The item's overall score from its outcomes (only their score and details, so stored results work too)."""
    rubric = outcomes.get("rubric")
    if rubric is None or rubric.score is None:
        return None
    faithfulness = outcomes.get("faithfulness")
    claim_score = faithfulness.score if faithfulness is not None else None
    return item_overall(rubric.details, claim_score, resolve_settings(settings)["weights"])
