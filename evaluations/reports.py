"""A finished run's summary: rows per metric, the problem that fails a gate, the JSON report document.

`manage.py evaluate` prints and writes these; the API and pages can serve the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluations.aggregates import OVERALL
from evaluations.audit_estimates import run_calibration
from evaluations.gates import Bar, BarResult, check_bars, stats_of
from evaluations.metrics import execution_order, has_overall
from evaluations.models import ItemStatus, Run, RunStatus

SUMMARY_STATS = ("mean", "pass_rate", "covered", "errored", "skipped")
# `evaluate`'s exit statuses, and the gate's verdict the API reports.
GATE_PASSED, GATE_BAR_FAILED, GATE_ERROR = 0, 1, 2


def summary_rows(aggregates: dict[str, Any], metrics: list[str]) -> list[dict[str, Any]]:
    """One row per metric the run computed (in execution order), then overall when the rubric ran."""
    rows = []
    overall = [OVERALL] if has_overall(metrics) else []
    for name in [*execution_order(metrics), *overall]:
        stats = stats_of(aggregates, name)
        if stats is not None:
            rows.append({"metric": name} | {key: stats.get(key) for key in SUMMARY_STATS})
    return rows


def run_problem(run: Run, *, allow_errors: bool) -> str:
    """Why the run cannot pass a gate whatever its scores ("" when it can): failed, cancelled or items in error."""
    if run.status in (RunStatus.FAILED, RunStatus.CANCELLED):
        return f"run {run.pk} {run.status}" + (f": {run.error}" if run.error else "")
    if run.items_failed and not allow_errors:
        first = run.items.filter(status=ItemStatus.ERROR).order_by("id").values_list("error", flat=True).first()
        return f"run {run.pk}: {run.items_failed} items in error (first: {first}); --allow-errors to gate anyway"
    return ""


@dataclass(frozen=True)
class GateVerdict:
    results: list[BarResult]
    problem: str  # why the run cannot pass whatever its scores ("" when it can)
    exit_code: int  # GATE_PASSED, GATE_BAR_FAILED or GATE_ERROR

    @property
    def passed(self) -> bool:
        return self.exit_code == GATE_PASSED


def run_gate(run: Run, bars: Sequence[Bar], *, allow_errors: bool = False) -> GateVerdict:
    """The gate on a finished run (`evaluate --fail-under` and the API): a problem is an error, then any bar failed."""
    results = check_bars(bars, run.aggregates or {})
    problem = run_problem(run, allow_errors=allow_errors)
    if problem:
        return GateVerdict(results, problem, GATE_ERROR)
    return GateVerdict(results, "", GATE_BAR_FAILED if any(not r.passed for r in results) else GATE_PASSED)


def run_report(
    run: Run, rows: list[dict[str, Any]], results: Sequence[BarResult] = (), exit_code: int = 0
) -> dict[str, Any]:
    """The JSON document `evaluate --json` writes: the run, its summary rows, the bars, the aggregates and the
    human-calibrated scores (`audit_estimates.run_calibration`: None until the run has an audit)."""
    return {
        "run": {
            "id": run.pk,
            "name": run.name,
            "status": run.status,
            "dataset": str(run.dataset_version),
            "judge": run.judge_config.name,
            "metrics": run.metrics,
            "settings": run.settings,
            "items_total": run.items_total,
            "items_done": run.items_done,
            "items_failed": run.items_failed,
            "error": run.error,
        },
        "summary": rows,
        "fail_under": [result.as_dict() for result in results],
        "exit_code": exit_code,
        "aggregates": run.aggregates,
        "calibration": run_calibration(run.pk),
    }
