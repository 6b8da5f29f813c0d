"""Scripted judge replies served by the fake LLM server, read by the real openai SDK, scored by the metrics.

The whole path: metric → gateway → openai SDK → HTTP → fake server's script → parser → clamps/arithmetic.
"""

from __future__ import annotations

import json

import pytest

from evaluations.metrics import evaluate_item
from evaluations.metrics.base import MetricContext
from evaluations.metrics.run_settings import resolve_settings
from judges import gateway
from judges.models import JudgeCall
from judges.types import JudgeResponseError
from tests.metrics.conftest import make_item

pytestmark = pytest.mark.django_db

CONTEXTS = {"c1": "The sky is blue.", "c2": "Grass is green."}
RUBRIC = "rubric judge"
EXTRACT = "claim extraction judge"
VERIFY = "claim verification judge"


def rubric_reply(faithfulness, relevance, completeness, reasoning_quality) -> str:
    scores = dict(faithfulness=faithfulness, relevance=relevance, completeness=completeness)
    return json.dumps(scores | {"reasoning_quality": reasoning_quality, "improvement_suggestions": ["Cite more."]})


def context_for(config, **settings) -> MetricContext:
    return MetricContext(
        judge=lambda name, fields: gateway.judge(config, name, fields), settings=resolve_settings(settings)
    )


def test_rubric_0_to_100_reply_is_normalised_then_clamped_by_an_invalid_citation(fake_llm, make_judge):
    # given a judge that answers on a 0-100 scale and an answer citing an id that is not a context
    fake_llm.script({"match": RUBRIC, "reply": "```json\n" + rubric_reply(90, 80, 70, 60) + "\n```"})
    config = make_judge("openai")
    item = make_item("The sky is blue [c1]. Grass is purple [c9].", CONTEXTS)

    # when the rubric runs
    outcome = evaluate_item(item, ["rubric"], context_for(config)).outcomes["rubric"]

    # then the values were divided by 100 once, faithfulness capped at 0.4, the overall weighted from the capped value
    assert outcome.details["scores"]["faithfulness"] == 0.4
    assert outcome.raw_value["faithfulness"] == pytest.approx(0.9)
    assert outcome.details["scores"]["relevance"] == pytest.approx(0.8)
    assert outcome.score == round(0.35 * 0.4 + 0.25 * 0.8 + 0.25 * 0.7 + 0.15 * 0.6, 3)
    assert fake_llm.stats()["requests"] == 1


def test_rubric_weights_are_run_settings(fake_llm, make_judge):
    fake_llm.script({"match": RUBRIC, "reply": rubric_reply(1, 0, 0, 0)})
    config = make_judge("openai")
    item = make_item("The sky is blue [c1].", CONTEXTS)
    weights = {"faithfulness": 1, "relevance": 1, "completeness": 0, "reasoning_quality": 0}

    outcome = evaluate_item(item, ["rubric"], context_for(config, weights=weights)).outcomes["rubric"]

    assert outcome.score == 0.5


def test_faithfulness_divides_by_the_claims_extracted(fake_llm, make_judge):
    # given four claims, one supported, one partial, two not
    claims = ["The sky is blue.", "Grass is green.", "Snow is black.", "Water is dry."]
    verdicts = [
        {"claim": 1, "verdict": "supported", "evidence": "The sky is blue.", "context_ids": ["c1"]},
        {"claim": 2, "verdict": "partial", "evidence": "Grass is green.", "context_ids": ["c2"]},
        {"claim": 3, "verdict": "contradicted", "evidence": "", "context_ids": []},
        {"claim": 4, "verdict": "idk", "evidence": "", "context_ids": []},
    ]
    fake_llm.script(
        {"match": EXTRACT, "reply": json.dumps({"claims": claims})},
        {"match": VERIFY, "reply": "Here you go:\n" + json.dumps({"verdicts": verdicts})},
    )
    config = make_judge("anthropic")
    item = make_item(" ".join(claims), CONTEXTS)

    outcome = evaluate_item(item, ["faithfulness"], context_for(config)).outcomes["faithfulness"]

    assert outcome.score == pytest.approx((1 + 0.5) / 4)
    assert [c.verdict for c in outcome.claims] == [
        "SUPPORTED",
        "PARTIALLY_SUPPORTED",
        "CONTRADICTED",
        "NOT_ENOUGH_INFO",
    ]
    assert outcome.claims[0].context_ids == ["c1"]


def test_a_verdict_list_missing_a_claim_is_an_error_recorded_never_a_score(fake_llm, make_judge, fast_retries):
    # given a verifier that always forgets the second claim
    fake_llm.script(
        {"match": EXTRACT, "reply": json.dumps({"claims": ["The sky is blue.", "Grass is green."]})},
        {"match": VERIFY, "reply": json.dumps({"verdicts": [{"claim": 1, "verdict": "SUPPORTED"}]})},
    )
    config = make_judge("openai")
    item = make_item("The sky is blue. Grass is green.", CONTEXTS)

    # when faithfulness runs, then the error propagates after the bounded retries
    with pytest.raises(JudgeResponseError, match=r"no verdict for claim\(s\) 2 of 2"):
        evaluate_item(item, ["faithfulness"], context_for(config))
    failed = JudgeCall.objects.get(config=config, prompt_name="claim_verification")
    assert failed.error and failed.attempts == fast_retries.JUDGE_MAX_ATTEMPTS
