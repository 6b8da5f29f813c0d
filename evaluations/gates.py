"""Quality gates: bars such as `faithfulness=0.8,overall=0.7` and their verdict on a run's aggregates.

Used by `manage.py evaluate --fail-under`; the API and pages can show the same structured bars.
A bar compares a metric's mean over the items it covers (each metric on its own scale: correctness
is 1..5) or `overall`, the items' overall score.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evaluations.aggregates import OVERALL
from evaluations.metrics import execution_order, has_overall


@dataclass(frozen=True)
class Bar:
    name: str  # a metric name or OVERALL
    minimum: float


@dataclass(frozen=True)
class BarResult:
    name: str
    minimum: float
    value: float | None  # the run's mean; None when it has no score

    @property
    def passed(self) -> bool:
        return self.value is not None and self.value >= self.minimum

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.name, "bar": self.minimum, "value": self.value, "passed": self.passed}


def parse_fail_under(text: str) -> list[Bar]:
    """ "faithfulness=0.8,overall=0.7" → bars; ValueError naming what is wrong."""
    bars = []
    for part in (piece.strip() for piece in text.split(",")):
        if not part:
            continue
        name, sep, number = part.partition("=")
        try:
            minimum = float(number)
        except ValueError:
            minimum = None
        if not sep or not name.strip() or minimum is None:
            raise ValueError(f"{part!r} is not METRIC=NUMBER (e.g. faithfulness=0.8,overall=0.7)")
        bars.append(Bar(name.strip(), minimum))
    if not bars:
        raise ValueError("give at least one METRIC=NUMBER")
    return bars


def check_bars_apply(bars: Iterable[Bar], metrics: list[str]) -> None:
    """ValueError when a bar names a metric the run does not compute (or overall without the rubric)."""
    ran = execution_order(metrics)
    for bar in bars:
        if bar.name == OVERALL and not has_overall(ran):
            raise ValueError("overall needs the rubric metric in --metrics")
        if bar.name != OVERALL and bar.name not in ran:
            raise ValueError(f"metric {bar.name!r} is not run (--metrics: {', '.join(ran)})")


def stats_of(aggregates: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """A metric's (or OVERALL's) stats in a run's aggregates."""
    return aggregates.get(OVERALL) if name == OVERALL else aggregates.get("metrics", {}).get(name)


def check_bars(bars: Iterable[Bar], aggregates: Mapping[str, Any]) -> list[BarResult]:
    return [BarResult(bar.name, bar.minimum, (stats_of(aggregates, bar.name) or {}).get("mean")) for bar in bars]
