from __future__ import annotations

import json

import pytest

from evaluations.metrics.run_settings import DEFAULT_SETTINGS, SettingsError, resolve_settings


def test_defaults_when_nothing_given():
    resolved = resolve_settings(None)

    assert resolved == DEFAULT_SETTINGS
    assert resolved["partial_weight"] == 0.5
    assert resolved["thresholds"] == {
        "faithfulness": 0.8,
        "relevancy": 1.0,
        "rubric": 0.7,
        "correctness": 4.0,
        "citation_audit": 0.5,
        "retrieval": 0.1,
    }
    assert resolved["weights"] == {
        "faithfulness": 0.35,
        "relevance": 0.25,
        "completeness": 0.25,
        "reasoning_quality": 0.15,
    }
    assert resolved["min_sentence_words"] == 4
    assert resolved["retrieval_k"] is None
    assert resolved["verify_per_claim"] is False
    assert resolved["repeats"] == 1


def test_settings_are_json_serialisable_and_resolving_twice_changes_nothing():
    resolved = resolve_settings({"weights": {"faithfulness": 1}, "retrieval_k": 3})

    assert json.loads(json.dumps(resolved)) == resolved
    assert resolve_settings(resolved) == resolved


def test_partial_groups_merge_over_defaults():
    resolved = resolve_settings({"thresholds": {"correctness": 3}, "weights": {"faithfulness": 1}})

    assert resolved["thresholds"]["correctness"] == 3.0
    assert resolved["thresholds"]["faithfulness"] == 0.8
    assert resolved["weights"] == {
        "faithfulness": 1.0,
        "relevance": 0.25,
        "completeness": 0.25,
        "reasoning_quality": 0.15,
    }


def test_defaults_are_not_mutated_by_resolving():
    resolved = resolve_settings({})
    resolved["thresholds"]["faithfulness"] = 0.1

    assert DEFAULT_SETTINGS["thresholds"]["faithfulness"] == 0.8


@pytest.mark.parametrize(
    ("user", "key"),
    [
        ({"colour": "blue"}, "colour"),
        ({"thresholds": {"bleu": 0.5}}, "thresholds.bleu"),
        ({"weights": {"style": 0.5}}, "weights.style"),
        ({"thresholds": 0.5}, "thresholds"),
        ({"partial_weight": "half"}, "partial_weight"),
        ({"partial_weight": True}, "partial_weight"),
        ({"partial_weight": 1.5}, "partial_weight"),
        ({"partial_weight": float("nan")}, "partial_weight"),
        ({"weights": {"relevance": -0.1}}, "weights.relevance"),
        ({"weights": {"completeness": "0.2"}}, "weights.completeness"),
        ({"weights": {"faithfulness": 0, "relevance": 0, "completeness": 0, "reasoning_quality": 0}}, "weights"),
        ({"weights": {"faithfulness": float("inf")}}, "weights.faithfulness"),
        ({"thresholds": {"faithfulness": 1.2}}, "thresholds.faithfulness"),
        ({"thresholds": {"relevancy": -0.5}}, "thresholds.relevancy"),
        ({"thresholds": {"correctness": 0.5}}, "thresholds.correctness"),
        ({"thresholds": {"correctness": 6}}, "thresholds.correctness"),
        ({"thresholds": {"retrieval": 2}}, "thresholds.retrieval"),
        ({"thresholds": {"citation_audit": 1.5}}, "thresholds.citation_audit"),
        ({"thresholds": {"citation_audit": "high"}}, "thresholds.citation_audit"),
        ({"citation_pattern": "[unclosed"}, "citation_pattern"),
        ({"citation_pattern": r"\[\w+\]"}, "citation_pattern"),
        ({"citation_pattern": 42}, "citation_pattern"),
        ({"min_sentence_words": 3.5}, "min_sentence_words"),
        ({"min_sentence_words": -1}, "min_sentence_words"),
        ({"retrieval_k": 0}, "retrieval_k"),
        ({"retrieval_k": "3"}, "retrieval_k"),
        ({"verify_per_claim": "yes"}, "verify_per_claim"),
        ({"repeats": 0}, "repeats"),
        ({"repeats": 1.0}, "repeats"),
    ],
)
def test_invalid_settings_raise_value_error_naming_the_key(user, key):
    with pytest.raises(ValueError, match=f"^{key.replace('.', '[.]')}: ") as error:
        resolve_settings(user)

    assert isinstance(error.value, SettingsError)
    assert error.value.key == key


def test_custom_citation_pattern_with_a_group_is_accepted():
    resolved = resolve_settings({"citation_pattern": r"\(source: ([^)]+)\)"})

    assert resolved["citation_pattern"] == r"\(source: ([^)]+)\)"


def test_a_threshold_set_to_null_means_no_bar():
    resolved = resolve_settings({"thresholds": {"citation_audit": None, "correctness": None}})

    assert resolved["thresholds"]["citation_audit"] is None
    assert resolved["thresholds"]["correctness"] is None
    assert resolved["thresholds"]["faithfulness"] == 0.8
