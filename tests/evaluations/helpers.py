"""Plain helpers of the run-engine tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluations.models import FINISHED_STATUSES, Run


def example(number: int, *, tags: tuple[str, ...] = (), reference: bool = True, **fields: Any) -> dict[str, Any]:
    item = {
        "id": f"q-{number}",
        "query": f"What did report {number} find about the river?",
        "response": f"Report {number} found the river level rose by {number} cm [c1]. It cites the gauge data [c2].",
        "contexts": [
            {"id": "c1", "text": f"Report {number}: the river level rose by {number} cm in spring."},
            {"id": "c2", "text": f"Gauge data for report {number} were collected daily."},
        ],
        "expected_context_ids": ["c1"],
        "tags": list(tags),
    }
    if reference:
        item["reference_answer"] = f"The river level rose by {number} cm."
    return item | fields


def wait_for_run(run: Run, *, timeout: float = 60, statuses: tuple[str, ...] = FINISHED_STATUSES) -> Run:
    deadline = time.monotonic() + timeout
    while True:
        run.refresh_from_db()
        if run.status in statuses:
            return run
        if time.monotonic() > deadline:
            raise AssertionError(
                f"run {run.pk} still {run.status} after {timeout} s "
                f"({run.items_done} done, {run.items_failed} failed of {run.items_total})"
            )
        time.sleep(0.1)


def wait_until(condition: Callable[[], bool], *, timeout: float = 30, message: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        time.sleep(0.05)


class StubGateway:
    """Replaces `judges.gateway.judge`: typed replies, optional latency, scripted failures, call log.

    A query containing "FAIL" makes every relevancy call fail; `scores` maps a sample index
    to the rubric values returned (judge instability for repeats); should_stop is honoured.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int | None]] = []
        self.latency = 0.0
        self.rubric_by_sample: dict[int, float] = {}
        self.fail_marked = True  # relevancy fails for queries containing "FAIL"
        self.started = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, config, prompt_name, fields, *, sample=0, run_id=None, run_item_id=None, should_stop=None):
        from judges.types import (
            ClaimVerdict,
            Correctness,
            JudgeCancelled,
            JudgeError,
            JudgeResult,
            Relevancy,
            RubricScores,
        )

        self.started.set()
        if should_stop is not None and should_stop():
            raise JudgeCancelled("stopped")
        if self.latency:
            deadline = time.monotonic() + self.latency
            while time.monotonic() < deadline:
                time.sleep(0.01)
                if should_stop is not None and should_stop():
                    raise JudgeCancelled("stopped")
        with self._lock:
            self.calls.append((prompt_name, sample, run_id))
        query = fields.get("query", "")
        if prompt_name == "claim_extraction":
            value: object = ["The river level rose.", "Gauge data were collected daily."]
        elif prompt_name == "claim_verification":
            value = [
                ClaimVerdict(claim=i, verdict="SUPPORTED", evidence="yes", context_ids=("c1",))
                for i in range(len(fields["claims"]))
            ]
        elif prompt_name == "relevancy":
            if "FAIL" in query and self.fail_marked:
                raise JudgeError("judge 'stub': HTTP 500 from the provider [4 attempts]")
            value = Relevancy(passing=True, feedback="on topic")
        elif prompt_name == "rubric":
            score = self.rubric_by_sample.get(sample, 0.9)
            value = RubricScores(faithfulness=score, relevance=score, completeness=score, reasoning_quality=score)
        elif prompt_name == "correctness":
            value = Correctness(score=4.5, justification="matches")
        else:
            raise AssertionError(prompt_name)
        return JudgeResult(
            value=value, prompt_name=prompt_name, prompt_version="1", input_tokens=10, output_tokens=5, cost=0.001
        )


# --- Scripted fake LLM replies (valid for every prompt; faults added per test) ---------------

CLAIMS_REPLY = '{"claims": ["The river level rose.", "Gauge data were collected daily."]}'
VERDICTS_REPLY = (
    '{"verdicts": [{"claim": 1, "evidence": "the river level rose", "context_ids": ["c1"], "verdict": "SUPPORTED"},'
    ' {"claim": 2, "evidence": "collected daily", "context_ids": ["c2"], "verdict": "SUPPORTED"}]}'
)
RUBRIC_REPLY = (
    '{"faithfulness": 0.9, "relevance": 0.9, "completeness": 0.8, "reasoning_quality": 0.8,'
    ' "improvement_suggestions": ["Say when."]}'
)
VALID_REPLIES = [
    {"match": "claim extraction judge", "reply": CLAIMS_REPLY},
    {"match": "claim verification judge", "reply": VERDICTS_REPLY},
    {"match": "relevancy judge", "reply": "YES\nThe answer addresses the question."},
    {"match": "rubric judge", "reply": RUBRIC_REPLY},
    {"match": "correctness judge", "reply": "4\nThe answer matches the reference."},
]


def script_file(path: Path, *fault_rows: dict[str, Any]) -> str:
    """A --script file: the fault rows first (they win while they apply), then valid replies for every prompt."""
    import json

    path.write_text("".join(json.dumps(row) + "\n" for row in [*fault_rows, *VALID_REPLIES]))
    return str(path)
