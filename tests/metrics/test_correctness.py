from __future__ import annotations

import pytest

from evaluations.metrics.correctness import CORRECTNESS, normalized_correctness
from judges.types import Correctness, JudgeError
from tests.metrics.conftest import ScriptedJudge, make_ctx, make_item


@pytest.mark.parametrize(("score", "normalized"), [(1, 0.0), (2, 0.25), (3, 0.5), (4.5, 0.875), (5, 1.0)])
def test_normalized_copy_maps_one_to_five_onto_zero_to_one(score, normalized):
    assert normalized_correctness(score) == normalized


@pytest.mark.parametrize(("score", "passed"), [(5.0, True), (4.0, True), (3.5, False), (1.0, False)])
def test_evaluate_passes_from_four(score, passed):
    judge = ScriptedJudge({"correctness": Correctness(score=score, justification="Close to the reference.")})
    item = make_item("Paris.", query="Capital of France?", reference_answer="Paris")

    outcome = CORRECTNESS.evaluate(item, make_ctx(judge))

    ((name, fields),) = judge.calls
    assert name == "correctness"
    assert fields == {"query": "Capital of France?", "response": "Paris.", "reference": "Paris"}
    assert (outcome.score, outcome.passed, outcome.threshold) == (score, passed, 4.0)
    assert outcome.feedback == "Close to the reference."
    assert outcome.details["normalized"] == normalized_correctness(score)


def test_threshold_from_settings():
    judge = ScriptedJudge({"correctness": Correctness(score=3.0, justification="")})

    outcome = CORRECTNESS.evaluate(make_item("x", reference_answer="y"), make_ctx(judge, thresholds={"correctness": 3}))

    assert outcome.passed is True


@pytest.mark.parametrize("reference", ["", "  "])
def test_no_reference_is_skipped_without_a_call(reference):
    outcome = CORRECTNESS.evaluate(make_item("Paris.", reference_answer=reference), make_ctx())

    assert outcome.score is None
    assert outcome.passed is None
    assert outcome.skipped_reason == "no reference answer"


def test_judge_errors_propagate():
    judge = ScriptedJudge({"correctness": JudgeError("bad gateway")})

    with pytest.raises(JudgeError):
        CORRECTNESS.evaluate(make_item("x", reference_answer="y"), make_ctx(judge))
