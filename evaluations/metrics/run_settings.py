"""Run settings of the metrics: defaults and validation.

A run stores its settings as JSON (`Run.settings`); `resolve_settings` fills in the
defaults and rejects anything a metric could not use, with a message naming the key.

Keys and defaults:

- `partial_weight` (0.5): what a PARTIALLY_SUPPORTED claim counts for in claim faithfulness (0..1).
- `thresholds`: the bar each metric's score must reach to pass. Every score reads "higher is
  better" and every metric passes by one rule, score ≥ threshold (`base.passes`); a
  threshold set to null means no bar: `passed` is None, shown as "–".
    - `faithfulness` 0.8: share of supported claims (0..1).
    - `relevancy` 1.0: YES scores 1.0 and passes, NO scores 0.0 and fails (0..1).
    - `rubric` 0.7: on the weighted overall after the citation clamps (0..1).
    - `correctness` 4.0: on the judge's 1..5 score (1..5).
    - `citation_audit` 0.5: at least half the answer's sentences cite a valid context; any
      citation of an id that does not exist scores 0 and fails (0..1).
    - `retrieval` 0.1: on the reciprocal rank, i.e. an expected context within the top 10;
      1.0 = ranked first, 0.5 = within the top two; a miss scores 0 and fails at any bar
      above 0 (0..1).
- `weights`: of the rubric dimensions in the overall score; normalised by their sum, so
  they need not add up to 1 (none negative, sum > 0).
- `citation_pattern`: regex of one citation marker; group 1 captures the inside of the
  brackets (ids separated by commas or semicolons). The default matches `[id]`,
  `[id1, id2]` and `[1]`, not markdown links `[text](url)` nor prose like `[see below]`.
- `min_sentence_words` (4): sentences with fewer words are "trivially short": never
  counted as uncited.
- `retrieval_k` (None): cut-off of the retrieval metrics; None = every retrieved context.
- `verify_per_claim` (False): verify each claim in its own judge call, concurrently, instead
  of all claims in one call (for long answers).
- `repeats` (1): how many times the run evaluates each item (the run engine's business;
  the metrics evaluate once per call).

Partial dicts merge over the defaults: `{"weights": {"faithfulness": 1}}` keeps the other
three default weights.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from typing import Any

DEFAULT_CITATION_PATTERN = r"\[\s*([\w.:/-]+(?:\s*[,;]\s*[\w.:/-]+)*)\s*\](?!\()"

DEFAULT_SETTINGS: dict[str, Any] = {
    "partial_weight": 0.5,
    "thresholds": {
        "faithfulness": 0.8,
        "relevancy": 1.0,
        "rubric": 0.7,
        "correctness": 4.0,
        "citation_audit": 0.5,
        "retrieval": 0.1,
    },
    "weights": {
        "faithfulness": 0.35,
        "relevance": 0.25,
        "completeness": 0.25,
        "reasoning_quality": 0.15,
    },
    "citation_pattern": DEFAULT_CITATION_PATTERN,
    "min_sentence_words": 4,
    "retrieval_k": None,
    "verify_per_claim": False,
    "repeats": 1,
}

THRESHOLD_RANGES: dict[str, tuple[float, float]] = {
    "faithfulness": (0.0, 1.0),
    "relevancy": (0.0, 1.0),
    "rubric": (0.0, 1.0),
    "correctness": (1.0, 5.0),
    "citation_audit": (0.0, 1.0),
    "retrieval": (0.0, 1.0),
}
MAX_REPEATS = 10


class SettingsError(ValueError):
    """A run setting is unknown or invalid; `key` is its dotted name (e.g. `weights.relevance`)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


def resolve_settings(user: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the defaults overlaid with `user`, validated; raises SettingsError (a ValueError)."""
    if user is not None and not isinstance(user, Mapping):
        raise SettingsError("settings", "must be an object")
    resolved = copy.deepcopy(DEFAULT_SETTINGS)
    for key, value in (user or {}).items():
        if key not in DEFAULT_SETTINGS:
            raise SettingsError(str(key), "unknown setting")
        if isinstance(DEFAULT_SETTINGS[key], dict):
            resolved[key] = _merge_group(key, value)
        else:
            resolved[key] = value

    resolved["partial_weight"] = _number("partial_weight", resolved["partial_weight"], 0.0, 1.0)
    for name, (low, high) in THRESHOLD_RANGES.items():
        if resolved["thresholds"][name] is not None:  # null: no bar, the metric neither passes nor fails
            resolved["thresholds"][name] = _number(f"thresholds.{name}", resolved["thresholds"][name], low, high)
    for name, weight in resolved["weights"].items():
        resolved["weights"][name] = _number(f"weights.{name}", weight, 0.0, None)
    if sum(resolved["weights"].values()) <= 0:
        raise SettingsError("weights", "must sum to more than 0")
    _check_pattern(resolved["citation_pattern"])
    resolved["min_sentence_words"] = _integer("min_sentence_words", resolved["min_sentence_words"], 0)
    if resolved["retrieval_k"] is not None:
        resolved["retrieval_k"] = _integer("retrieval_k", resolved["retrieval_k"], 1)
    if not isinstance(resolved["verify_per_claim"], bool):
        raise SettingsError("verify_per_claim", "must be true or false")
    resolved["repeats"] = _integer("repeats", resolved["repeats"], 1, MAX_REPEATS)
    return resolved


def _merge_group(key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise SettingsError(key, "must be an object")
    merged = dict(DEFAULT_SETTINGS[key])
    for name, item in value.items():
        if name not in merged:
            raise SettingsError(f"{key}.{name}", "unknown key")
        merged[name] = item
    return merged


def _number(key: str, value: Any, low: float, high: float | None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SettingsError(key, "must be a finite number")
    if value < low or (high is not None and value > high):
        bounds = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
        raise SettingsError(key, f"must be {bounds}, got {value!r}")
    return float(value)


def _integer(key: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError(key, "must be an integer")
    if value < low or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise SettingsError(key, f"must be {bounds}, got {value!r}")
    return value


def _check_pattern(pattern: Any) -> None:
    if not isinstance(pattern, str) or not pattern:
        raise SettingsError("citation_pattern", "must be a non-empty string")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise SettingsError("citation_pattern", f"is not a valid regular expression: {exc}") from exc
    if compiled.groups < 1:
        raise SettingsError("citation_pattern", "needs a group capturing the inside of the brackets")
