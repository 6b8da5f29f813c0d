from __future__ import annotations

import pytest

from evaluations.metrics.citation_audit import CITATION_AUDIT, audit_citations
from tests.metrics.conftest import make_ctx, make_item

IDS = ["stip-tally", "stip-snapshot", "stip-forum"]


def test_every_sentence_cited_with_valid_ids():
    audit = audit_citations(
        "The proposal was authored by the Arbitrum Foundation [stip-tally]. "
        "It passed the Snapshot check [stip-snapshot] and the Tally vote [stip-tally]. "
        "It allocated 50 million ARB tokens [stip-forum].",
        IDS,
    )

    assert [s.cited_ids for s in audit.sentences] == [("stip-tally",), ("stip-snapshot", "stip-tally"), ("stip-forum",)]
    assert audit.cited_ids == ["stip-tally", "stip-snapshot", "stip-forum"]
    assert audit.invalid_ids == []
    assert audit.uncited_sentences == 0
    assert audit.hallucination_detected is False
    assert audit.score == 1.0


def test_invalid_id_is_a_hallucination():
    audit = audit_citations(
        "The STIP proposal was authored by Offchain Labs [stip-tally] and requested 100 million ARB tokens "
        "[stip-forum]. It was vetoed by the Security Council [stip-council].",
        IDS,
    )

    assert audit.invalid_ids == ["stip-council"]
    assert audit.hallucination_detected is True
    assert audit.score == 0.0  # a made-up source outweighs the sentence that cites well


def test_multiple_ids_in_one_marker_and_numeric_positions():
    audit = audit_citations("The vote passed on chain [1]. Funding was fifty million tokens [2, stip-forum; 3].", IDS)

    assert audit.sentences[0].cited_ids == ("stip-tally",)
    assert audit.sentences[1].cited_ids == ("stip-snapshot", "stip-forum")
    assert audit.invalid_ids == []


def test_numeric_id_out_of_range_is_invalid():
    audit = audit_citations("The vote passed on chain [4].", IDS)

    assert audit.invalid_ids == ["4"]
    assert audit.hallucination_detected is True


def test_a_context_literally_named_1_wins_over_the_position():
    audit = audit_citations("The vote passed on chain [1]. The money was spent [2].", ["x", "1"])

    assert audit.sentences[0].cited_ids == ("1",)  # the context named "1", not the first one
    assert audit.sentences[1].cited_ids == ("1",)  # "2" is not an id: the second context, named "1"


def test_uncited_sentences_are_counted_and_short_ones_ignored():
    audit = audit_citations(
        "Yes. The proposal passed in November 2023. It was funded generously [stip-forum]. In short: done. "
        "The council never voted on it at all.",
        IDS,
    )

    assert [s.trivial for s in audit.sentences] == [True, False, False, True, False]
    assert audit.uncited_sentences == 2
    assert audit.considered_sentences == 3
    assert audit.score == pytest.approx(1 / 3)
    assert audit.hallucination_detected is False


def test_min_sentence_words_is_configurable():
    response = "Passed in November. Funded with fifty million."

    assert audit_citations(response, IDS, min_sentence_words=4).uncited_sentences == 1
    assert audit_citations(response, IDS, min_sentence_words=3).uncited_sentences == 2
    assert audit_citations(response, IDS, min_sentence_words=10).uncited_sentences == 0


def test_citation_after_the_full_stop_belongs_to_the_sentence_before():
    audit = audit_citations(
        "The proposal passed the Tally vote. [stip-tally] It allocated fifty million tokens. [stip-forum]", IDS
    )

    assert [s.text for s in audit.sentences] == [
        "The proposal passed the Tally vote. [stip-tally]",
        "It allocated fifty million tokens. [stip-forum]",
    ]
    assert audit.uncited_sentences == 0


def test_lines_and_bullets_are_sentences():
    audit = audit_citations(
        "Key facts:\n- authored by the Arbitrum Foundation [stip-tally]\n- vetoed by the Security Council", IDS
    )

    assert [s.text for s in audit.sentences] == [
        "Key facts:",
        "- authored by the Arbitrum Foundation [stip-tally]",
        "- vetoed by the Security Council",
    ]
    assert audit.uncited_sentences == 1


def test_markdown_links_code_and_prose_brackets_are_not_citations():
    audit = audit_citations(
        "See [the Tally page](https://tally.xyz) for the full vote record. "
        "Call `votes[a]` to read the raw tallies [stip-tally].\n"
        "```python\nprint(results[b])\n```\n"
        "The forum thread [see below] discusses the concerns at length [stip-forum].",
        IDS,
    )

    assert audit.invalid_ids == []
    assert audit.cited_ids == ["stip-tally", "stip-forum"]
    assert audit.uncited_sentences == 1
    assert all("print" not in s.text for s in audit.sentences)


def test_empty_response_has_nothing_to_audit():
    audit = audit_citations("", IDS)

    assert audit.sentences == ()
    assert audit.score == 1.0
    assert audit.hallucination_detected is False


def test_custom_pattern_from_the_settings():
    item = make_item(
        "The vote passed on chain (source: stip-tally). It cost a lot (source: nope).", dict.fromkeys(IDS, "text")
    )

    outcome = CITATION_AUDIT.evaluate(item, make_ctx(citation_pattern=r"\(source: ([^)]+)\)"))

    assert outcome.details["cited_ids"] == ["stip-tally"]
    assert outcome.details["invalid_ids"] == ["nope"]
    assert outcome.passed is False


def test_metric_score_says_how_well_the_answer_cites_and_passes_by_the_common_rule():
    cited = make_item("The proposal was authored by the Arbitrum Foundation [stip-tally].", dict.fromkeys(IDS, "text"))
    uncited = make_item("The proposal was authored by the Arbitrum Foundation.", dict.fromkeys(IDS, "text"))
    invalid = make_item("The proposal was vetoed by the Security Council [stip-council].", dict.fromkeys(IDS, "text"))

    outcomes = [CITATION_AUDIT.evaluate(item, make_ctx()) for item in (cited, uncited, invalid)]

    # higher is better: citing well 1.0, citing nothing 0.0, citing a source that does not exist 0.0
    assert [(o.score, o.passed, o.threshold) for o in outcomes] == [
        (1.0, True, 0.5),
        (0.0, False, 0.5),
        (0.0, False, 0.5),
    ]
    assert outcomes[2].details["hallucination_detected"] is True
    assert outcomes[2].details["invalid_ids"] == ["stip-council"]
    assert "stip-council" in outcomes[2].feedback
    assert outcomes[1].details["uncited_sentences"] == 1
    assert outcomes[0].details["sentences"][0]["cited_ids"] == ["stip-tally"]
