"""Types every metric shares. A metric: `name`, `uses_judge`, and `evaluate(item, ctx) -> MetricOutcome`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from judges.types import Context, JudgeResult


@dataclass(frozen=True)
class ItemInput:
    """One dataset example as the metrics see it (built from datasets.Example)."""

    query: str
    response: str
    contexts: tuple[Context, ...]
    reference_answer: str = ""
    expected_context_ids: tuple[str, ...] = ()
    retrieved_ids: tuple[str, ...] | None = None  # rank order; None: the contexts' order


@dataclass
class ClaimRecord:
    position: int
    text: str
    verdict: str
    evidence: str = ""
    context_ids: list[str] = field(default_factory=list)


@dataclass
class MetricOutcome:
    metric: str
    score: float | None = None  # None only when skipped
    passed: bool | None = None
    threshold: float | None = None
    feedback: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    raw_value: Any = None  # the judge's values before clamps / normalisation to 0..1
    prompt_version: str = ""
    skipped_reason: str = ""
    claims: list[ClaimRecord] = field(default_factory=list)


def passes(score: float | None, threshold: float | None) -> bool | None:
    """The one pass rule of every metric: a score passes when it reaches the threshold (higher is
    better). None when there is nothing to judge: no score (skipped) or no threshold (the run
    set it to null): shown as "–", never as a pass."""
    if score is None or threshold is None:
        return None
    return score >= threshold


def scored_outcome(metric: str, score: float, threshold: float | None, **fields: Any) -> MetricOutcome:
    """A metric's outcome, passed by the common rule (`passes`)."""
    return MetricOutcome(metric=metric, score=score, passed=passes(score, threshold), threshold=threshold, **fields)


# prompt name, fields -> parsed reply; raises judges.types.JudgeError when the call fails for good.
JudgeFn = Callable[[str, dict[str, Any]], JudgeResult]
# A judge metric's first prompt: (prompt name, fields). It depends only on the item and the settings,
# so the engine looks the cache up for all of an item's first prompts in one query.
JudgeRequest = tuple[str, dict[str, Any]]


@dataclass
class MetricContext:
    judge: JudgeFn
    settings: dict[str, Any]  # resolved run settings (defaults filled in)


class Metric(Protocol):
    name: str
    uses_judge: bool

    def evaluate(self, item: ItemInput, ctx: MetricContext) -> MetricOutcome: ...

    # Judge metrics also have `first_prompt(item, settings) -> JudgeRequest | None` (None: no call).


def prompt_versions(results: Sequence[JudgeResult]) -> str:
    """What MetricOutcome.prompt_version records: `name@version` of each distinct prompt used, comma-separated."""
    return ",".join(dict.fromkeys(f"{result.prompt_name}@{result.prompt_version}" for result in results))
