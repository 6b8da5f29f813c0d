from __future__ import annotations

import math

import pytest

from evaluations.metrics.retrieval import RETRIEVAL, retrieval_scores
from tests.metrics.conftest import make_ctx, make_item


def test_relevant_context_ranked_first():
    scores = retrieval_scores(["a"], ["a", "b", "c"])

    assert scores == {
        "k": 3,
        "hit": True,
        "reciprocal_rank": 1.0,
        "precision": pytest.approx(1 / 3),
        "recall": 1.0,
        "ndcg": 1.0,
    }


def test_hand_computed_ndcg_with_two_relevant_contexts():
    # relevant at ranks 2 and 4 of 4; two expected
    scores = retrieval_scores(["b", "d"], ["a", "b", "c", "d"])

    dcg = 1 / math.log2(3) + 1 / math.log2(5)  # 0.6309 + 0.4307
    idcg = 1 / math.log2(2) + 1 / math.log2(3)  # 1 + 0.6309
    assert scores["ndcg"] == pytest.approx(dcg / idcg)
    assert scores["ndcg"] == pytest.approx(0.6509, abs=1e-4)
    assert scores["reciprocal_rank"] == 0.5
    assert scores["precision"] == 0.5
    assert scores["recall"] == 1.0


def test_cut_off_at_k():
    scores = retrieval_scores(["c", "x"], ["a", "b", "c", "d"], k=2)

    assert scores == {"k": 2, "hit": False, "reciprocal_rank": 0.0, "precision": 0.0, "recall": 0.0, "ndcg": 0.0}

    scores = retrieval_scores(["c", "x"], ["a", "b", "c", "d"], k=3)

    assert scores["hit"] is True
    assert scores["reciprocal_rank"] == pytest.approx(1 / 3)
    assert scores["precision"] == pytest.approx(1 / 3)
    assert scores["recall"] == 0.5
    assert scores["ndcg"] == pytest.approx((1 / math.log2(4)) / (1 + 1 / math.log2(3)))


def test_mrr_is_the_first_relevant_rank_only():
    assert retrieval_scores(["b", "c"], ["a", "b", "c"])["reciprocal_rank"] == 0.5


def test_repeated_ids_count_once_and_nothing_retrieved_is_all_zero():
    assert retrieval_scores(["a"], ["a", "a", "b"])["precision"] == 0.5
    assert retrieval_scores(["a"], []) == {
        "k": 0,
        "hit": False,
        "reciprocal_rank": 0.0,
        "precision": 0.0,
        "recall": 0.0,
        "ndcg": 0.0,
    }


def test_k_larger_than_the_list():
    scores = retrieval_scores(["a"], ["b", "a"], k=10)

    assert scores["k"] == 10
    assert scores["precision"] == 0.5  # over the contexts actually in the top k
    assert scores["ndcg"] == pytest.approx(1 / math.log2(3))


def test_evaluate_uses_retrieved_ids_else_context_order():
    contexts = {"a": "A", "b": "B", "c": "C"}
    by_context_order = make_item("x", contexts, expected_context_ids=("b",))
    by_retrieved_ids = make_item("x", contexts, expected_context_ids=("b",), retrieved_ids=("b", "a"))

    first = RETRIEVAL.evaluate(by_context_order, make_ctx())
    second = RETRIEVAL.evaluate(by_retrieved_ids, make_ctx())

    assert first.score == 0.5
    assert first.passed is True
    assert first.details["hit"] is True
    assert set(first.details) >= {"hit", "reciprocal_rank", "precision", "recall", "ndcg", "k"}
    assert second.score == 1.0


def test_evaluate_threshold_on_reciprocal_rank_and_k_from_settings():
    item = make_item("x", {"a": "A", "b": "B", "c": "C"}, expected_context_ids=("c",))

    assert RETRIEVAL.evaluate(item, make_ctx()).passed is True
    assert RETRIEVAL.evaluate(item, make_ctx(thresholds={"retrieval": 0.5})).passed is False
    missed = RETRIEVAL.evaluate(item, make_ctx(retrieval_k=2))
    assert (missed.score, missed.passed, missed.details["hit"]) == (0.0, False, False)


def test_a_miss_fails_by_default_and_threshold_zero_passes_everything_alike():
    # The old oddity: score 0.0 against threshold 0.0 was "failed". Now one rule, score ≥ threshold.
    miss = make_item("x", {"a": "A", "b": "B"}, expected_context_ids=("z",))
    ranked_second = make_item("x", {"a": "A", "b": "B"}, expected_context_ids=("b",))

    by_default = [RETRIEVAL.evaluate(item, make_ctx()) for item in (miss, ranked_second)]
    no_bar_at_zero = [
        RETRIEVAL.evaluate(item, make_ctx(thresholds={"retrieval": 0.0})) for item in (miss, ranked_second)
    ]
    no_threshold = RETRIEVAL.evaluate(miss, make_ctx(thresholds={"retrieval": None}))

    assert [(o.score, o.threshold, o.passed) for o in by_default] == [(0.0, 0.1, False), (0.5, 0.1, True)]
    assert [(o.score, o.passed) for o in no_bar_at_zero] == [(0.0, True), (0.5, True)]
    assert (no_threshold.score, no_threshold.threshold, no_threshold.passed) == (0.0, None, None)


def test_no_expected_ids_is_skipped():
    outcome = RETRIEVAL.evaluate(make_item("x", {"a": "A"}), make_ctx())

    assert outcome.score is None
    assert outcome.passed is None
    assert outcome.skipped_reason == "no expected context ids"
