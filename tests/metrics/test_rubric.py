from __future__ import annotations

import pytest

from evaluations.metrics.citation_audit import audit_citations
from evaluations.metrics.rubric import (
    RUBRIC,
    apply_citation_caps,
    audit_rules,
    cap_faithfulness,
    item_overall,
    round_half_up,
    triggered_caps,
    weighted_overall,
)
from judges.types import JudgeError, RubricScores
from tests.metrics.conftest import ScriptedJudge, make_ctx, make_item

IDS = ["c1", "c2"]
CONTEXTS = {"c1": "The sky is blue.", "c2": "Grass is green."}
DEFAULT_WEIGHTS = {"faithfulness": 0.35, "relevance": 0.25, "completeness": 0.25, "reasoning_quality": 0.15}


def uncited(n: int) -> str:
    return " ".join(f"Uncited sentence number {i} has enough words." for i in range(n))


# caps


def test_clean_audit_triggers_no_cap():
    audit = audit_citations("The sky is blue today [c1]. Grass is green in spring [c2].", IDS)

    assert apply_citation_caps(0.95, audit) == (0.95, [])
    assert audit_rules(audit) == []


def test_hallucinated_citation_caps_faithfulness_at_0_4():
    audit = audit_citations("The sky is blue today [c1]. The moon is made of cheese [c9].", IDS)

    value, caps = apply_citation_caps(0.9, audit)

    assert value == 0.4
    assert [(cap["rule"], cap["cap"]) for cap in caps] == [("invalid_citation_ids", 0.4)]
    assert "c9" in caps[0]["reason"]


@pytest.mark.parametrize(
    ("n_uncited", "expected_value", "expected_caps"),
    [(4, 0.9, []), (5, 0.5, [0.5]), (9, 0.5, [0.5]), (10, 0.3, [0.3]), (14, 0.3, [0.3])],
)
def test_uncited_sentences_cap_faithfulness(n_uncited, expected_value, expected_caps):
    audit = audit_citations(uncited(n_uncited), IDS)

    value, caps = apply_citation_caps(0.9, audit)

    assert audit.uncited_sentences == n_uncited
    assert value == expected_value
    assert [cap["cap"] for cap in caps] == expected_caps


def test_caps_combine_to_the_strictest():
    audit = audit_citations(uncited(5) + " The moon is made of cheese [c9].", IDS)

    value, caps = apply_citation_caps(0.9, audit)

    assert value == 0.4
    assert sorted(cap["cap"] for cap in caps) == [0.4, 0.5]


def test_a_value_already_below_the_cap_is_kept():
    audit = audit_citations("The moon is made of cheese [c9].", IDS)

    assert apply_citation_caps(0.2, audit)[0] == 0.2
    assert cap_faithfulness(0.2, triggered_caps(audit)) == 0.2


def test_audit_rules_state_every_triggered_cap_for_the_prompt():
    audit = audit_citations(uncited(10) + " The moon is made of cheese [c9].", IDS)

    rules = audit_rules(audit)

    assert len(rules) == 2
    assert "c9" in rules[0] and "at most 0.4" in rules[0]
    assert "10 sentences" in rules[1] and "at most 0.3" in rules[1]


# weighted overall


def test_weighted_overall_with_default_weights():
    values = {"faithfulness": 1.0, "relevance": 0.5, "completeness": 0.5, "reasoning_quality": 0.0}

    assert weighted_overall(values, DEFAULT_WEIGHTS) == 0.6  # .35 + .125 + .125


def test_weighted_overall_normalises_custom_weights_by_their_sum():
    values = {"faithfulness": 0.9, "relevance": 0.3, "completeness": 0.6, "reasoning_quality": 0.0}
    weights = {"faithfulness": 2, "relevance": 1, "completeness": 1, "reasoning_quality": 0}

    assert weighted_overall(values, weights) == 0.675  # (1.8 + .3 + .6) / 4


def test_weighted_overall_rounds_to_three_decimals():
    values = {"faithfulness": 1 / 3, "relevance": 1 / 3, "completeness": 1 / 3, "reasoning_quality": 1 / 3}

    assert weighted_overall(values, DEFAULT_WEIGHTS) == 0.333


@pytest.mark.parametrize(
    ("value", "rounded"),
    [(0.9825, 0.983), (0.33249999999999996 + 0.65, 0.983), (0.0125, 0.013), (0.1234, 0.123), (1.0, 1.0)],
)
def test_round_half_up_ignores_float_noise(value, rounded):
    assert round_half_up(value) == rounded


def test_weighted_overall_rejects_zero_weights():
    with pytest.raises(ValueError):
        weighted_overall(dict.fromkeys(DEFAULT_WEIGHTS, 1.0), dict.fromkeys(DEFAULT_WEIGHTS, 0))


def test_item_overall_puts_claim_faithfulness_in_place_capped_the_same_way():
    details = {
        "scores": {"faithfulness": 0.4, "relevance": 1.0, "completeness": 1.0, "reasoning_quality": 1.0},
        "caps_applied": [{"rule": "invalid_citation_ids", "cap": 0.4, "reason": "c9"}],
    }

    assert item_overall(details, None, DEFAULT_WEIGHTS) == 0.79
    assert item_overall(details, 1.0, DEFAULT_WEIGHTS) == 0.79  # claim score 1.0 capped at 0.4 too
    assert item_overall(details, 0.0, DEFAULT_WEIGHTS) == 0.65
    assert item_overall({**details, "caps_applied": []}, 1.0, DEFAULT_WEIGHTS) == 1.0


# evaluate with parsed values


def scores(faithfulness=0.9, relevance=0.8, completeness=0.7, reasoning_quality=0.6, suggestions=("Cite c2.",)):
    return RubricScores(faithfulness, relevance, completeness, reasoning_quality, list(suggestions))


def test_evaluate_sends_the_audit_rules_and_clamps_the_reply():
    judge = ScriptedJudge({"rubric": scores()})
    item = make_item("The sky is blue today [c1]. The moon is made of cheese [c9].", CONTEXTS, query="Colours?")

    outcome = RUBRIC.evaluate(item, make_ctx(judge))

    ((name, fields),) = judge.calls
    assert name == "rubric"
    assert fields["query"] == "Colours?"
    assert [c.id for c in fields["contexts"]] == ["c1", "c2"]
    assert len(fields["audit_rules"]) == 1 and "c9" in fields["audit_rules"][0]
    assert outcome.details["scores"] == {
        "faithfulness": 0.4,
        "relevance": 0.8,
        "completeness": 0.7,
        "reasoning_quality": 0.6,
    }
    assert outcome.details["raw"] == {
        "faithfulness": 0.9,
        "relevance": 0.8,
        "completeness": 0.7,
        "reasoning_quality": 0.6,
    }
    assert outcome.raw_value["faithfulness"] == 0.9
    assert outcome.details["caps_applied"][0]["cap"] == 0.4
    assert outcome.score == 0.605  # .14 + .2 + .175 + .09
    assert outcome.passed is False
    assert outcome.threshold == 0.7
    assert outcome.details["improvement_suggestions"] == ["Cite c2."]
    assert outcome.feedback == "Cite c2."
    assert outcome.prompt_version == "rubric@test-1"


def test_evaluate_uses_weights_and_threshold_of_the_run():
    judge = ScriptedJudge({"rubric": scores()})
    item = make_item("The sky is blue today [c1].", CONTEXTS)

    outcome = RUBRIC.evaluate(
        item,
        make_ctx(
            judge,
            weights={"faithfulness": 1, "relevance": 0, "completeness": 0, "reasoning_quality": 0},
            thresholds={"rubric": 0.9},
        ),
    )

    assert outcome.score == 0.9
    assert outcome.passed is True
    assert outcome.details["audit_rules"] == []


def test_evaluate_propagates_judge_errors():
    judge = ScriptedJudge({"rubric": JudgeError("timeout after 3 attempts")})

    with pytest.raises(JudgeError, match="timeout"):
        RUBRIC.evaluate(make_item("Anything at all here.", CONTEXTS), make_ctx(judge))
