"""Shared value types of the judge layer: what prompts take and what parsed replies are."""

from __future__ import annotations

from dataclasses import dataclass, field

SUPPORTED = "SUPPORTED"
PARTIALLY_SUPPORTED = "PARTIALLY_SUPPORTED"
CONTRADICTED = "CONTRADICTED"
NOT_ENOUGH_INFO = "NOT_ENOUGH_INFO"
VERDICTS = (SUPPORTED, PARTIALLY_SUPPORTED, CONTRADICTED, NOT_ENOUGH_INFO)


class JudgeError(Exception):
    """A judge call failed for good (after retries); the message says why."""


class JudgeResponseError(JudgeError):
    """A judge reply could not be read into the prompt's output contract."""


class JudgeCancelled(JudgeError):
    """The caller's `should_stop()` said stop before (or between) the attempts of a judge call."""


@dataclass(frozen=True)
class Context:
    id: str
    text: str


@dataclass(frozen=True)
class ClaimVerdict:
    claim: int  # 0-based index into the claims that were sent
    verdict: str  # one of VERDICTS
    evidence: str = ""
    context_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Relevancy:
    passing: bool
    feedback: str


@dataclass(frozen=True)
class RubricScores:
    """Judge's rubric values on a 0..1 scale (0-100 replies already divided by 100), before any clamp."""

    faithfulness: float
    relevance: float
    completeness: float
    reasoning_quality: float
    improvement_suggestions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Correctness:
    score: float  # 1..5
    justification: str


@dataclass(frozen=True)
class JudgeResult:
    """What the gateway returns for one prompt: the parsed value and the call's accounting."""

    value: object  # list[str] | list[ClaimVerdict] | Relevancy | RubricScores | Correctness
    prompt_name: str
    prompt_version: str
    call_id: int | None = None
    cached: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    latency_ms: int = 0
