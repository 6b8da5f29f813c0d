from __future__ import annotations

import threading
import time

import pytest

from evaluations.metrics.faithfulness import FAITHFULNESS, faithfulness_details, faithfulness_score
from judges.types import (
    CONTRADICTED,
    NOT_ENOUGH_INFO,
    PARTIALLY_SUPPORTED,
    SUPPORTED,
    ClaimVerdict,
    JudgeError,
    JudgeResponseError,
)
from tests.metrics.conftest import ScriptedJudge, make_ctx, make_item

S, P, C, N = SUPPORTED, PARTIALLY_SUPPORTED, CONTRADICTED, NOT_ENOUGH_INFO
CONTEXTS = {"c1": "The sky is blue.", "c2": "Grass is green."}


# faithfulness_score: the one place of the arithmetic


def test_all_claims_supported_scores_one():
    assert faithfulness_score([S, S, S], 3, 0.5) == 1.0


def test_half_the_claims_supported_scores_one_half():
    assert faithfulness_score([S, C, S, N], 4, 0.5) == 0.5


def test_no_claim_supported_scores_zero():
    assert faithfulness_score([C, N, C], 3, 0.5) == 0.0


def test_partially_supported_counts_for_the_partial_weight():
    assert faithfulness_score([S, P], 2, 0.5) == 0.75
    assert faithfulness_score([S, P], 2, 0.0) == 0.5
    assert faithfulness_score([P, P], 2, 1.0) == 1.0


def test_denominator_is_the_number_of_claims_not_of_verdicts():
    # given 4 claims extracted but only 2 verdicts (both supported)
    # then the two claims without a verdict count as not supported
    assert faithfulness_score([S, S], 4, 0.5) == 0.5


def test_no_claim_is_vacuously_faithful():
    assert faithfulness_score([], 0, 0.5) == 1.0


def test_more_verdicts_than_claims_or_unknown_verdicts_are_errors():
    with pytest.raises(ValueError):
        faithfulness_score([S, S], 1, 0.5)
    with pytest.raises(ValueError, match="MAYBE"):
        faithfulness_score(["MAYBE"], 1, 0.5)


def test_details_count_every_verdict():
    details = faithfulness_details([S, P, C, C], 4, 0.5)

    assert details == {
        "n_claims": 4,
        "partial_weight": 0.5,
        "counts": {S: 1, P: 1, C: 2, N: 0},
        "vacuous": False,
    }


# evaluate with scripted parsed replies


def verdicts(*labels: str) -> list[ClaimVerdict]:
    return [
        ClaimVerdict(claim=i, verdict=label, evidence=f"evidence {i}", context_ids=("c1",))
        for i, label in enumerate(labels)
    ]


def test_evaluate_extracts_then_verifies_all_claims_in_one_call():
    judge = ScriptedJudge({"claim_extraction": ["a", "b", "c", "d"], "claim_verification": verdicts(S, S, P, C)})

    outcome = FAITHFULNESS.evaluate(make_item("A. B. C. D.", CONTEXTS), make_ctx(judge))

    assert judge.names() == ["claim_extraction", "claim_verification"]
    assert judge.calls[1][1]["claims"] == ["a", "b", "c", "d"]
    assert [c.id for c in judge.calls[1][1]["contexts"]] == ["c1", "c2"]
    assert outcome.score == pytest.approx(0.625)
    assert outcome.passed is False
    assert outcome.threshold == 0.8
    assert outcome.details["counts"] == {S: 2, P: 1, C: 1, N: 0}
    assert outcome.details["n_claims"] == 4
    assert outcome.details["partial_weight"] == 0.5
    assert outcome.details["vacuous"] is False
    assert outcome.details["verification"] == "batch"
    assert [(c.position, c.text, c.verdict, c.evidence, c.context_ids) for c in outcome.claims] == [
        (0, "a", S, "evidence 0", ["c1"]),
        (1, "b", S, "evidence 1", ["c1"]),
        (2, "c", P, "evidence 2", ["c1"]),
        (3, "d", C, "evidence 3", ["c1"]),
    ]
    assert outcome.prompt_version == "claim_extraction@test-1,claim_verification@test-1"


def test_evaluate_passes_at_the_threshold():
    judge = ScriptedJudge(
        {"claim_extraction": ["a", "b", "c", "d", "e"], "claim_verification": verdicts(S, S, S, S, C)}
    )

    outcome = FAITHFULNESS.evaluate(make_item("Five claims.", CONTEXTS), make_ctx(judge))

    assert outcome.score == pytest.approx(0.8)
    assert outcome.passed is True


def test_verdicts_returned_out_of_order_are_matched_by_claim_index():
    shuffled = list(reversed(verdicts(S, C)))
    judge = ScriptedJudge({"claim_extraction": ["a", "b"], "claim_verification": shuffled})

    outcome = FAITHFULNESS.evaluate(make_item("A. B.", CONTEXTS), make_ctx(judge))

    assert [(c.text, c.verdict) for c in outcome.claims] == [("a", S), ("b", C)]


def test_a_missing_verdict_is_a_judge_response_error_not_a_score():
    judge = ScriptedJudge({"claim_extraction": ["a", "b"], "claim_verification": verdicts(S)})

    with pytest.raises(JudgeResponseError):
        FAITHFULNESS.evaluate(make_item("A. B.", CONTEXTS), make_ctx(judge))


@pytest.mark.parametrize("response", ["", "   \n\t "])
def test_empty_response_is_vacuously_faithful_without_any_judge_call(response):
    outcome = FAITHFULNESS.evaluate(make_item(response, CONTEXTS), make_ctx())

    assert outcome.score == 1.0
    assert outcome.passed is True
    assert outcome.claims == []
    assert outcome.details["vacuous"] is True
    assert outcome.details["n_claims"] == 0


def test_no_claim_extracted_is_vacuous_too():
    judge = ScriptedJudge({"claim_extraction": []})

    outcome = FAITHFULNESS.evaluate(make_item("Hello there.", CONTEXTS), make_ctx(judge))

    assert judge.names() == ["claim_extraction"]
    assert outcome.score == 1.0
    assert outcome.details["vacuous"] is True


def test_without_contexts_every_claim_is_not_enough_info_and_verification_is_not_called():
    judge = ScriptedJudge({"claim_extraction": ["a", "b"]})

    outcome = FAITHFULNESS.evaluate(make_item("A. B.", {}), make_ctx(judge))

    assert judge.names() == ["claim_extraction"]
    assert [c.verdict for c in outcome.claims] == [N, N]
    assert outcome.score == 0.0
    assert outcome.passed is False
    assert outcome.details["verification"] == "no_contexts"


def test_partial_weight_and_threshold_come_from_the_run_settings():
    judge = ScriptedJudge({"claim_extraction": ["a", "b"], "claim_verification": verdicts(S, P)})

    outcome = FAITHFULNESS.evaluate(
        make_item("A. B.", CONTEXTS), make_ctx(judge, partial_weight=0.0, thresholds={"faithfulness": 0.5})
    )

    assert outcome.score == 0.5
    assert outcome.passed is True
    assert outcome.details["partial_weight"] == 0.0


def test_verify_per_claim_makes_one_call_per_claim_concurrently():
    active, peak = 0, 0
    lock = threading.Lock()
    labels = {"a": S, "b": C, "c": P, "d": N}

    def verify(fields):
        nonlocal active, peak
        (claim,) = fields["claims"]
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return [ClaimVerdict(claim=0, verdict=labels[claim], evidence=f"about {claim}", context_ids=("c2",))]

    judge = ScriptedJudge({"claim_extraction": ["a", "b", "c", "d"], "claim_verification": verify})

    outcome = FAITHFULNESS.evaluate(make_item("A. B. C. D.", CONTEXTS), make_ctx(judge, verify_per_claim=True))

    assert judge.names().count("claim_verification") == 4
    assert peak > 1
    assert [(c.position, c.text, c.verdict, c.evidence) for c in outcome.claims] == [
        (0, "a", S, "about a"),
        (1, "b", C, "about b"),
        (2, "c", P, "about c"),
        (3, "d", N, "about d"),
    ]
    assert outcome.score == pytest.approx(0.375)
    assert outcome.details["verification"] == "per_claim"
    assert outcome.prompt_version == "claim_extraction@test-1,claim_verification@test-1"


def test_a_failing_per_claim_call_propagates_the_judge_error():
    def verify(fields):
        if fields["claims"] == ["b"]:
            raise JudgeError("rate limited for good")
        return [ClaimVerdict(claim=0, verdict=S)]

    judge = ScriptedJudge({"claim_extraction": ["a", "b", "c"], "claim_verification": verify})

    with pytest.raises(JudgeError, match="rate limited"):
        FAITHFULNESS.evaluate(make_item("A. B. C.", CONTEXTS), make_ctx(judge, verify_per_claim=True))


def test_judge_errors_propagate():
    judge = ScriptedJudge({"claim_extraction": JudgeError("provider down")})

    with pytest.raises(JudgeError, match="provider down"):
        FAITHFULNESS.evaluate(make_item("A.", CONTEXTS), make_ctx(judge))
