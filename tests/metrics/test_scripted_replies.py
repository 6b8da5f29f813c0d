"""Metrics fed by hand-written judge reply texts through the real parser and prompt templates."""

from __future__ import annotations

import json

import pytest

from evaluations.metrics import evaluate_item
from evaluations.metrics.faithfulness import FAITHFULNESS
from judges.prompts import prompt_version
from judges.types import JudgeError, JudgeResponseError
from tests.metrics.conftest import TextJudge, make_ctx, make_item

CONTEXTS = {"c1": "The sky is blue.", "c2": "Grass is green."}


def rubric_reply(
    faithfulness, relevance, completeness, reasoning_quality, suggestions=("Cite every sentence.",)
) -> str:
    return json.dumps(
        {
            "faithfulness": faithfulness,
            "relevance": relevance,
            "completeness": completeness,
            "reasoning_quality": reasoning_quality,
            "improvement_suggestions": list(suggestions),
        }
    )


def uncited(n: int) -> str:
    return " ".join(f"Uncited sentence number {i} has enough words." for i in range(n))


@pytest.mark.parametrize(
    "reply",
    [
        rubric_reply(90, 80, 70, 60),
        rubric_reply(0.9, 0.8, 0.7, 0.6),
        "```json\n" + rubric_reply("90", 80, 70, 60) + "\n```",
    ],
)
def test_rubric_0_to_100_reply_is_normalised_once_then_clamped(reply):
    judge = TextJudge({"rubric": reply})
    item = make_item("The sky is blue today [c1]. The moon is made of cheese [c9].", CONTEXTS)

    evaluation = evaluate_item(item, ["rubric"], make_ctx(judge))

    outcome = evaluation.outcomes["rubric"]
    assert outcome.details["raw"] == pytest.approx(
        {"faithfulness": 0.9, "relevance": 0.8, "completeness": 0.7, "reasoning_quality": 0.6}
    )
    assert outcome.details["scores"]["faithfulness"] == 0.4
    assert outcome.details["scores"]["relevance"] == pytest.approx(0.8)  # not 0.008: divided by 100 once
    assert outcome.score == 0.605
    assert evaluation.overall == 0.605
    assert outcome.details["improvement_suggestions"] == ["Cite every sentence."]
    assert outcome.prompt_version == f"rubric@{prompt_version('rubric')}"


@pytest.mark.parametrize(
    ("response", "expected", "overall"),
    [(uncited(4), 0.95, 0.983), (uncited(5), 0.5, 0.825), (uncited(10), 0.3, 0.755)],
)
def test_rubric_uncited_sentence_caps_whatever_the_judge_said(response, expected, overall):
    judge = TextJudge({"rubric": rubric_reply(95, 100, 100, 100)})

    outcome = evaluate_item(make_item(response, CONTEXTS), ["rubric"], make_ctx(judge)).outcomes["rubric"]

    assert outcome.details["raw"]["faithfulness"] == pytest.approx(0.95)
    assert outcome.details["scores"]["faithfulness"] == pytest.approx(expected)
    assert outcome.score == overall  # 0.35 × faithfulness + 0.65, rounded half up


def test_rubric_overall_with_custom_weights():
    judge = TextJudge({"rubric": rubric_reply(100, 50, 0, 100)})
    weights = {"faithfulness": 1, "relevance": 1, "completeness": 1, "reasoning_quality": 0}

    outcome = evaluate_item(
        make_item("Blue sky [c1].", CONTEXTS), ["rubric"], make_ctx(judge, weights=weights)
    ).outcomes["rubric"]

    assert outcome.score == 0.5


VERIFICATION_REPLY = json.dumps(
    {
        "verdicts": [
            {"claim": 1, "verdict": "SUPPORTED", "evidence": "The sky is blue.", "context_ids": ["c1"]},
            {"claim": 2, "verdict": "partially supported", "evidence": "Grass is green.", "context_ids": ["c2"]},
            {"claim": 3, "verdict": "CONTRADICTED", "evidence": "", "context_ids": []},
            {"claim": 4, "verdict": "NOT_ENOUGH_INFO"},
        ]
    }
)


def test_claim_faithfulness_from_reply_texts_divides_by_the_claims_extracted():
    judge = TextJudge(
        {
            "claim_extraction": '{"claims": ["The sky is blue.", "Grass is green.", "Snow is black.", "Mars has cats."]}',
            "claim_verification": VERIFICATION_REPLY,
        }
    )

    outcome = FAITHFULNESS.evaluate(
        make_item("Sky blue, grass green, snow black, cats on Mars.", CONTEXTS), make_ctx(judge)
    )

    assert outcome.score == pytest.approx((1 + 0.5) / 4)
    assert [claim.verdict for claim in outcome.claims] == [
        "SUPPORTED",
        "PARTIALLY_SUPPORTED",
        "CONTRADICTED",
        "NOT_ENOUGH_INFO",
    ]
    assert outcome.claims[0].context_ids == ["c1"]
    assert outcome.claims[0].evidence == "The sky is blue."
    assert outcome.details["counts"] == {
        "SUPPORTED": 1,
        "PARTIALLY_SUPPORTED": 1,
        "CONTRADICTED": 1,
        "NOT_ENOUGH_INFO": 1,
    }


def test_a_reply_missing_a_verdict_is_an_error_not_a_smaller_denominator():
    judge = TextJudge(
        {
            "claim_extraction": '{"claims": ["The sky is blue.", "Grass is green."]}',
            "claim_verification": '{"verdicts": [{"claim": 1, "verdict": "SUPPORTED"}]}',
        }
    )

    with pytest.raises(JudgeResponseError):
        evaluate_item(make_item("Sky blue, grass green.", CONTEXTS), ["faithfulness"], make_ctx(judge))


def test_per_claim_verification_from_reply_texts():
    def reply(fields):
        (claim,) = fields["claims"]
        verdict = "SUPPORTED" if "blue" in claim else "CONTRADICTED"
        return json.dumps({"verdicts": [{"claim": 1, "verdict": verdict, "context_ids": ["c1"]}]})

    judge = TextJudge(
        {
            "claim_extraction": '["The sky is blue.", "Grass is red.", "The sky is blue at noon."]',
            "claim_verification": reply,
        }
    )

    outcome = FAITHFULNESS.evaluate(make_item("Sky blue, grass red.", CONTEXTS), make_ctx(judge, verify_per_claim=True))

    assert [claim.verdict for claim in outcome.claims] == ["SUPPORTED", "CONTRADICTED", "SUPPORTED"]
    assert outcome.score == pytest.approx(2 / 3)


def test_relevancy_and_correctness_from_reply_texts():
    judge = TextJudge(
        {"relevancy": "NO\nThe answer talks about another proposal.", "correctness": "**Score: 3**\nMisses the date."}
    )
    item = make_item("Grass is green.", CONTEXTS, reference_answer="The sky is blue.")

    outcomes = evaluate_item(item, ["relevancy", "correctness"], make_ctx(judge)).outcomes

    assert (outcomes["relevancy"].score, outcomes["relevancy"].passed) == (0.0, False)
    assert outcomes["relevancy"].feedback == "The answer talks about another proposal."
    assert (outcomes["correctness"].score, outcomes["correctness"].passed) == (3.0, False)
    assert outcomes["correctness"].details["normalized"] == 0.5
    assert outcomes["correctness"].feedback == "Misses the date."


@pytest.mark.parametrize(
    ("metric", "prompt", "reply"),
    [
        ("rubric", "rubric", "The answer is quite good overall, I would say."),
        ("rubric", "rubric", rubric_reply(150, 80, 70, 60)),
        ("relevancy", "relevancy", "Maybe, it depends."),
        ("correctness", "correctness", "Pretty correct."),
        ("faithfulness", "claim_extraction", "Here are the claims: none worth noting"),
    ],
)
def test_unparseable_reply_propagates_from_evaluate_item(metric, prompt, reply):
    judge = TextJudge({prompt: reply})
    item = make_item("The sky is blue today [c1].", CONTEXTS, reference_answer="Blue.")

    with pytest.raises(JudgeResponseError):
        evaluate_item(item, [metric], make_ctx(judge))


def test_failed_judge_call_propagates_from_evaluate_item():
    judge = TextJudge({"rubric": JudgeError("429 after 5 retries")})

    with pytest.raises(JudgeError, match="429"):
        evaluate_item(make_item("The sky is blue today [c1].", CONTEXTS), ["retrieval", "rubric"], make_ctx(judge))
