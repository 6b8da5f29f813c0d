from __future__ import annotations

import pytest

from evaluations.metrics import METRIC_NAMES, REGISTRY, evaluate_item, execution_order, first_prompts, overall_score
from evaluations.metrics.base import MetricContext, MetricOutcome, passes
from evaluations.metrics.run_settings import THRESHOLD_RANGES, resolve_settings
from judges.types import SUPPORTED, ClaimVerdict, Correctness, JudgeError, Relevancy, RubricScores
from tests.metrics.conftest import ScriptedJudge, make_ctx, make_item

CONTEXTS = {"c1": "The sky is blue.", "c2": "Grass is green."}


def test_registry_holds_every_metric_under_its_name():
    assert METRIC_NAMES == ("faithfulness", "relevancy", "rubric", "correctness", "citation_audit", "retrieval")
    for name, metric in REGISTRY.items():
        assert metric.name == name
        assert metric.uses_judge == (name not in {"citation_audit", "retrieval"})


def test_execution_order_runs_the_citation_audit_before_the_rubric():
    assert execution_order(["rubric", "faithfulness", "citation_audit"]) == ["citation_audit", "rubric", "faithfulness"]
    assert execution_order(["faithfulness", "rubric"]) == ["faithfulness", "citation_audit", "rubric"]
    assert execution_order(["retrieval", "retrieval", "relevancy"]) == ["retrieval", "relevancy"]


def test_unknown_metric_names_are_rejected():
    with pytest.raises(ValueError, match="bleu"):
        execution_order(["faithfulness", "bleu"])


def rubric_outcome(faithfulness: float, caps: list[dict] | None = None) -> MetricOutcome:
    return MetricOutcome(
        metric="rubric",
        score=0.0,  # overall_score recomputes from the details
        details={
            "scores": {"faithfulness": faithfulness, "relevance": 1.0, "completeness": 0.5, "reasoning_quality": 0.0},
            "caps_applied": caps or [],
        },
    )


def test_overall_is_none_without_the_rubric():
    outcomes = {"faithfulness": MetricOutcome(metric="faithfulness", score=1.0)}

    assert overall_score(outcomes, resolve_settings(None)) is None


def test_overall_is_the_rubric_overall_alone():
    assert overall_score({"rubric": rubric_outcome(0.8)}, resolve_settings(None)) == 0.655  # .28 + .25 + .125


def test_overall_uses_claim_faithfulness_when_it_ran():
    outcomes = {"rubric": rubric_outcome(0.8), "faithfulness": MetricOutcome(metric="faithfulness", score=0.5)}

    assert overall_score(outcomes, resolve_settings(None)) == 0.55  # .175 + .25 + .125


def test_overall_caps_claim_faithfulness_like_the_rubric():
    caps = [{"rule": "uncited_sentences>=10", "cap": 0.3, "reason": "12 sentences that cite no context"}]
    outcomes = {"rubric": rubric_outcome(0.3, caps), "faithfulness": MetricOutcome(metric="faithfulness", score=1.0)}

    assert overall_score(outcomes, resolve_settings(None)) == 0.48  # .105 + .25 + .125


def test_overall_follows_the_run_weights():
    settings = resolve_settings(
        {"weights": {"faithfulness": 0, "relevance": 1, "completeness": 1, "reasoning_quality": 0}}
    )

    assert overall_score({"rubric": rubric_outcome(0.8)}, settings) == 0.75


def full_judge() -> ScriptedJudge:
    return ScriptedJudge(
        {
            "claim_extraction": ["The sky is blue.", "Grass is green."],
            "claim_verification": [ClaimVerdict(0, SUPPORTED), ClaimVerdict(1, SUPPORTED)],
            "relevancy": Relevancy(passing=True, feedback="On topic."),
            "rubric": RubricScores(0.5, 1.0, 1.0, 1.0, []),
            "correctness": Correctness(score=5, justification="Matches."),
        }
    )


def test_evaluate_item_runs_every_metric_and_scores_the_item():
    judge = full_judge()
    item = make_item(
        "The sky is blue today [c1]. Grass is green in spring [c2].",
        CONTEXTS,
        reference_answer="Blue and green.",
        expected_context_ids=("c1",),
    )

    evaluation = evaluate_item(item, list(METRIC_NAMES), make_ctx(judge))

    assert list(evaluation.outcomes) == [
        "faithfulness",
        "relevancy",
        "citation_audit",
        "rubric",
        "correctness",
        "retrieval",
    ]
    assert {name: outcome.score for name, outcome in evaluation.outcomes.items()} == {
        "faithfulness": 1.0,
        "relevancy": 1.0,
        "citation_audit": 1.0,
        "rubric": 0.825,
        "correctness": 5.0,
        "retrieval": 1.0,
    }
    assert evaluation.overall == 1.0  # claim-level faithfulness 1.0 replaces the rubric's 0.5
    assert judge.names() == ["claim_extraction", "claim_verification", "relevancy", "rubric", "correctness"]


def test_evaluate_item_adds_the_citation_audit_for_the_rubric():
    judge = full_judge()
    item = make_item("The moon is made of green cheese [c9].", CONTEXTS)

    evaluation = evaluate_item(item, ["rubric"], make_ctx(judge))

    assert list(evaluation.outcomes) == ["citation_audit", "rubric"]
    assert evaluation.outcomes["citation_audit"].passed is False
    assert evaluation.outcomes["rubric"].details["scores"]["faithfulness"] == 0.4
    assert evaluation.overall == evaluation.outcomes["rubric"].score == 0.79


def test_evaluate_item_without_rubric_has_no_overall():
    evaluation = evaluate_item(make_item("x", CONTEXTS, expected_context_ids=("c2",)), ["retrieval"], make_ctx())

    assert evaluation.overall is None
    assert evaluation.outcomes["retrieval"].score == 0.5


def test_evaluate_item_propagates_a_judge_error():
    judge = full_judge()
    judge.replies["relevancy"] = JudgeError("provider returned 500 three times")

    with pytest.raises(JudgeError, match="500"):
        evaluate_item(make_item("The sky is blue.", CONTEXTS), ["faithfulness", "relevancy"], make_ctx(judge))


def test_evaluate_item_fills_in_default_settings_and_validates_them():
    item = make_item("x", CONTEXTS, expected_context_ids=("c2",))

    outcome = evaluate_item(item, ["retrieval"], MetricContext(judge=full_judge(), settings={})).outcomes["retrieval"]

    assert outcome.passed is True
    with pytest.raises(ValueError, match="retrieval_k"):
        evaluate_item(item, ["retrieval"], MetricContext(judge=full_judge(), settings={"retrieval_k": 0}))


def test_every_metric_passes_by_one_rule_and_without_a_threshold_neither_passes_nor_fails():
    item = make_item(
        "The sky is blue today [c1]. Grass is green in spring [c2].",
        CONTEXTS,
        reference_answer="Blue and green.",
        expected_context_ids=("c2",),
    )
    scores = {
        name: outcome.score
        for name, outcome in evaluate_item(item, METRIC_NAMES, make_ctx(full_judge())).outcomes.items()
    }

    def outcomes_with(thresholds: dict) -> dict[str, MetricOutcome]:
        return evaluate_item(item, METRIC_NAMES, make_ctx(full_judge(), thresholds=thresholds)).outcomes

    below_the_top = {name: score for name, score in scores.items() if score < THRESHOLD_RANGES[name][1]}
    at_the_score = outcomes_with(dict(scores))
    just_above = outcomes_with({name: score + 0.01 for name, score in below_the_top.items()})
    no_threshold = outcomes_with(dict.fromkeys(scores))

    assert len(below_the_top) >= 2  # the rubric and retrieval here; the others score their best
    assert {name: outcome.passed for name, outcome in at_the_score.items()} == dict.fromkeys(scores, True)
    assert {name: just_above[name].passed for name in below_the_top} == dict.fromkeys(below_the_top, False)
    assert {name: (outcome.threshold, outcome.passed) for name, outcome in no_threshold.items()} == dict.fromkeys(
        scores, (None, None)
    )


@pytest.mark.parametrize(
    ("score", "threshold", "passed"),
    [(0.8, 0.8, True), (0.79, 0.8, False), (0.0, 0.0, True), (0.0, 0.1, False), (0.9, None, None), (None, 0.5, None)],
)
def test_passes(score, threshold, passed):
    assert passes(score, threshold) is passed


@pytest.mark.parametrize("reference", ["The sky is blue.", ""])
def test_first_prompts_are_the_first_call_each_judge_metric_makes(reference):
    # given an item, and every metric run with a judge that records its calls
    item = make_item("The sky is blue [c1]. Grass is green [c2].", CONTEXTS, reference_answer=reference)
    judge = full_judge()
    evaluate_item(item, list(METRIC_NAMES), make_ctx(judge))
    first_calls = [(name, fields) for name, fields in judge.calls if name != "claim_verification"]

    # then the prompts the engine prefetches are exactly those first calls (correctness: only with a reference)
    assert sorted(first_prompts(item, list(METRIC_NAMES), resolve_settings(None)), key=str) == sorted(
        first_calls, key=str
    )
    assert ("correctness" in [name for name, _ in first_calls]) == bool(reference)
