from __future__ import annotations

import pytest

from evaluations.metrics.relevancy import RELEVANCY, relevancy_score
from judges.types import JudgeError, Relevancy
from tests.metrics.conftest import ScriptedJudge, make_ctx, make_item


def test_yes_is_one_and_no_is_zero():
    assert relevancy_score(True) == 1.0
    assert relevancy_score(False) == 0.0


@pytest.mark.parametrize(("passing", "score", "passed"), [(True, 1.0, True), (False, 0.0, False)])
def test_evaluate_keeps_the_feedback(passing, score, passed):
    judge = ScriptedJudge({"relevancy": Relevancy(passing=passing, feedback="Because.")})
    item = make_item("Blue [c1].", {"c1": "The sky is blue."}, query="Sky colour?")

    outcome = RELEVANCY.evaluate(item, make_ctx(judge))

    ((name, fields),) = judge.calls
    assert name == "relevancy"
    assert fields["query"] == "Sky colour?" and fields["response"] == "Blue [c1]."
    assert [c.id for c in fields["contexts"]] == ["c1"]
    assert (outcome.score, outcome.passed, outcome.feedback) == (score, passed, "Because.")
    assert outcome.threshold == 1.0
    assert outcome.prompt_version == "relevancy@test-1"


def test_judge_errors_propagate():
    with pytest.raises(JudgeError):
        RELEVANCY.evaluate(make_item("x"), make_ctx(ScriptedJudge({"relevancy": JudgeError("down")})))
