"""The offline judge (judges.heuristics): claims, verification, relevancy, rubric, correctness, reply texts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judges.heuristics import (
    extract_claims,
    judge_correctness,
    judge_relevancy,
    judge_rubric,
    reply,
    verify_claims,
)
from judges.types import (
    CONTRADICTED,
    NOT_ENOUGH_INFO,
    PARTIALLY_SUPPORTED,
    SUPPORTED,
    VERDICTS,
    ClaimVerdict,
    Context,
)

REPO = Path(__file__).resolve().parents[2]
SAMPLE_DATASET = REPO / "datasets" / "demo" / "stip-governance.jsonl"


def load_sample() -> dict[str, dict]:
    rows = [json.loads(line) for line in SAMPLE_DATASET.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        row["contexts"] = [Context(id=context["id"], text=context["text"]) for context in row["contexts"]]
    return {row["id"]: row for row in rows}


SAMPLE = load_sample()


def claim_verdicts(item_id: str) -> list[tuple[str, ClaimVerdict]]:
    item = SAMPLE[item_id]
    claims = extract_claims(item["response"])
    return list(zip(claims, verify_claims(claims, item["contexts"]), strict=True))


def faithfulness_score(verdicts: list[ClaimVerdict]) -> float:
    credit = {SUPPORTED: 1.0, PARTIALLY_SUPPORTED: 0.5}
    return sum(credit.get(verdict.verdict, 0.0) for verdict in verdicts) / len(verdicts)


def verdict_of(claim: str, *contexts: str | Context) -> ClaimVerdict:
    given = [c if isinstance(c, Context) else Context(id=f"c{n}", text=c) for n, c in enumerate(contexts, start=1)]
    return verify_claims([claim], given)[0]


# --- the sample dataset ------------------------------------------------------------------------


def test_faithful_stip_answer_is_fully_supported():
    pairs = claim_verdicts("query-004")

    assert len(pairs) >= 3
    assert [verdict.verdict for _, verdict in pairs] == [SUPPORTED] * len(pairs)
    assert faithfulness_score([verdict for _, verdict in pairs]) == 1.0
    text = " ".join(claim for claim, _ in pairs)
    assert "Arbitrum Foundation" in text and "executed" in text and "50 million ARB" in text
    assert all(verdict.evidence and verdict.context_ids for _, verdict in pairs)


def test_hallucinated_stip_answer_is_caught():
    pairs = claim_verdicts("query-004-hallucinated")
    by_topic = {
        topic: verdict for claim, verdict in pairs for topic in ("Offchain", "100 million", "vetoed") if topic in claim
    }

    assert by_topic["Offchain"].verdict == CONTRADICTED
    assert "Arbitrum Foundation" in by_topic["Offchain"].evidence
    assert by_topic["Offchain"].context_ids == ("stip-tally",)
    assert by_topic["100 million"].verdict == CONTRADICTED
    assert "50 million" in by_topic["100 million"].evidence
    assert by_topic["vetoed"].verdict in (CONTRADICTED, NOT_ENOUGH_INFO)
    assert faithfulness_score([verdict for _, verdict in pairs]) <= 0.34


def test_scenario_a_wrong_deadline_is_contradicted_and_supermajority_unknown():
    pairs = claim_verdicts("scenario-a-deadline")

    assert len(pairs) == 2
    (deadline, deadline_verdict), (supermajority, supermajority_verdict) = pairs
    assert "March 30, 2024" in deadline
    assert deadline_verdict.verdict == CONTRADICTED
    assert "2024-03-15" in deadline_verdict.evidence
    assert "60% supermajority" in supermajority
    assert supermajority_verdict.verdict == NOT_ENOUGH_INFO


@pytest.mark.parametrize("item_id", ["scenario-b-off-topic", "gcp-faithful-irrelevant"])
def test_faithful_but_off_topic_answers_are_supported_and_not_relevant(item_id):
    item = SAMPLE[item_id]
    pairs = claim_verdicts(item_id)

    assert [verdict.verdict for _, verdict in pairs] == [SUPPORTED] * len(pairs)
    relevancy = judge_relevancy(item["query"], item["response"], item["contexts"])
    assert relevancy.passing is False
    assert "asks about" in relevancy.feedback


def test_scenario_b_dates_and_status_match_the_metadata():
    pairs = claim_verdicts("scenario-b-off-topic")

    created, phase = (verdict for _, verdict in pairs)
    assert "Created: 2024-01-10" in created.evidence
    assert "Status: active" in phase.evidence


def test_retrieval_miss_answer_is_not_relevant():
    item = SAMPLE["scenario-c-retrieval-miss"]

    relevancy = judge_relevancy(item["query"], item["response"], item["contexts"])

    assert relevancy.passing is False
    assert "Arbitrum Orbit" in relevancy.feedback


@pytest.mark.parametrize(
    "item_id", ["query-004", "query-004-hallucinated", "scenario-a-deadline", "scenario-d-partial"]
)
def test_on_topic_answers_are_relevant(item_id):
    item = SAMPLE[item_id]

    relevancy = judge_relevancy(item["query"], item["response"], item["contexts"])

    assert relevancy.passing is True
    assert "Addressed:" in relevancy.feedback


def test_correctness_of_the_sample_answers():
    def score(item_id: str) -> float:
        item = SAMPLE[item_id]
        return judge_correctness(item["query"], item["response"], item["reference_answer"]).score

    assert score("query-004") >= 4
    assert score("scenario-d-partial") <= 3
    assert score("query-004-hallucinated") <= 2
    assert score("scenario-a-deadline") <= 2
    assert score("gcp-faithful-irrelevant") == 1
    assert score("scenario-b-off-topic") == 1


def test_correctness_justification_says_what_matched_and_what_is_missing():
    item = SAMPLE["scenario-d-partial"]

    result = judge_correctness(item["query"], item["response"], item["reference_answer"])

    assert "Matched: Snapshot" in result.justification
    assert "Missing from the response:" in result.justification and "temperature" in result.justification


def test_rubric_of_the_sample_answers():
    def rubric(item_id: str, rules: list[str] | None = None):
        item = SAMPLE[item_id]
        return judge_rubric(item["query"], item["response"], item["contexts"], rules or [])

    good = rubric("query-004")
    assert good.faithfulness == 1.0 and good.relevance >= 0.8 and good.completeness >= 0.7
    assert good.reasoning_quality >= 0.8

    rule = "The citation audit found citation ids that match no retrieved context: stip-council. Faithfulness must be at most 0.4."
    bad = rubric("query-004-hallucinated", [rule])
    assert bad.faithfulness <= 0.34
    assert any("Offchain Labs" in suggestion for suggestion in bad.improvement_suggestions)
    assert any("stip-council" in suggestion for suggestion in bad.improvement_suggestions)

    partial = rubric("scenario-d-partial")
    assert partial.faithfulness == 1.0 and partial.completeness < 0.5

    off_topic = rubric("gcp-faithful-irrelevant")
    assert off_topic.faithfulness == 1.0 and off_topic.relevance <= 0.3


# --- claim extraction ------------------------------------------------------------------------------


def test_claims_drop_citation_markers_and_split_coordinated_clauses():
    claims = extract_claims(
        "The STIP proposal was authored by Offchain Labs [stip-tally] and requested 100 million ARB tokens [stip-forum]."
    )

    assert claims == [
        "The STIP proposal was authored by Offchain Labs.",
        "The STIP proposal requested 100 million ARB tokens.",
    ]


def test_claims_resolve_a_leading_it_and_the_program():
    claims = extract_claims(
        "The STIP (Short-Term Incentive Program) proposal was authored by the Arbitrum Foundation [stip-tally]. "
        "It has been executed. The program allocated 50 million ARB tokens [1, 2]."
    )

    assert claims == [
        "The STIP (Short-Term Incentive Program) proposal was authored by the Arbitrum Foundation.",
        "The STIP proposal has been executed.",
        "The STIP proposal allocated 50 million ARB tokens.",
    ]


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (
            "The voting deadline is March 30, 2024, and the proposal needs a 60% supermajority to pass.",
            ["The voting deadline is March 30, 2024.", "The proposal needs a 60% supermajority to pass."],
        ),
        (
            "The fund was created in 2010; it holds 5 billion dollars.",
            ["The fund was created in 2010.", "The fund holds 5 billion dollars."],
        ),
        ("He won the race but lost the final.", ["He won the race.", "He lost the final."]),
        (
            "Alice founded the company and Bob joined it in 2012.",
            ["Alice founded the company.", "Bob joined it in 2012."],
        ),
        (
            "It passed both the Snapshot temperature check and the Tally on-chain vote.",
            ["It passed both the Snapshot temperature check and the Tally on-chain vote."],
        ),
        ("Apples, oranges, and bananas are sold here.", ["Apples, oranges, and bananas are sold here."]),
        (
            "Mr. Smith moved to the U.S. in 2004. He works at Acme Inc.",
            ["Mr. Smith moved to the U.S. in 2004.", "Mr. Smith works at Acme Inc."],
        ),
        ("- Voting ends on 2024-03-15\n- Turnout was 12%", ["Voting ends on 2024-03-15.", "Turnout was 12%."]),
    ],
)
def test_claim_splitting(response, expected):
    assert extract_claims(response) == expected


@pytest.mark.parametrize("response", ["", "   \n\t ", "[stip-tally]"])
def test_no_claims_from_an_empty_answer(response):
    assert extract_claims(response) == []


def test_statements_about_the_answerer_or_the_sources_are_not_claims():
    response = (
        "I could not find this in the provided context. The retrieved governance data does not describe concerns "
        "about the Orbit proposal. However, the STIP passed."
    )

    assert extract_claims(response) == ["The STIP passed."]


# --- contradictions and support --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "context", "expected"),
    [
        # dates, whatever their format
        ("Voting ended on March 30, 2024.", "Voting End: 2024-03-15", CONTRADICTED),
        ("Voting ended on March 15, 2024.", "Voting End: 2024-03-15", SUPPORTED),
        ("The proposal was created on January 10, 2024.", "Created: 2024-01-10", SUPPORTED),
        ("The proposal was created on 10 January 2024.", "The proposal was created on 2024-01-11.", CONTRADICTED),
        ("The couple married in December 2012.", "The couple married on 27 December 2012 in New York.", SUPPORTED),
        # amounts and percentages
        ("The program requested 100 million ARB tokens.", "The program allocated 50 million ARB tokens.", CONTRADICTED),
        ("The fund is worth $1.2 billion.", "The fund is worth 1,200 million dollars.", SUPPORTED),
        ("The GCP passed with 78% approval.", "The GCP passed with 65% approval.", CONTRADICTED),
        # names in the same slot
        ("The proposal was authored by Offchain Labs.", "# STIP proposal\nAuthor: Arbitrum Foundation", CONTRADICTED),
        ("The proposal was written by Alice Smith.", "The proposal was written by Bob Jones in May.", CONTRADICTED),
        ("The proposal was proposed by Treasure DAO.", "# Gaming proposal\nAuthor: Treasure DAO", SUPPORTED),
        # outcome words and negation
        (
            "The Treasury Management proposal was rejected.",
            "# Treasury Management Proposal\nStatus: passed",
            CONTRADICTED,
        ),
        (
            "The Treasury Management proposal was executed.",
            "# Treasury Management Proposal\nStatus: executed",
            SUPPORTED,
        ),
        ("The proposal was not approved by the DAO.", "The proposal was approved by the DAO.", CONTRADICTED),
        ("The proposal was approved by the DAO.", "The proposal was not approved by the DAO.", CONTRADICTED),
        # unrelated or half-stated
        ("The proposal needs a 60% supermajority to pass.", "Voting End: 2024-03-15", NOT_ENOUGH_INFO),
        (
            "The Treasury Management proposal was created by the Arbitrum Foundation and reviewed by auditors in Berlin.",
            "# Treasury Management Proposal\nAuthor: Arbitrum Foundation",
            PARTIALLY_SUPPORTED,
        ),
    ],
)
def test_verification_cases(claim, context, expected):
    verdict = verdict_of(claim, context)

    assert verdict.verdict == expected, verdict
    if expected != NOT_ENOUGH_INFO:
        assert verdict.evidence and verdict.context_ids == ("c1",)


def test_evidence_is_quoted_from_the_context_and_ids_name_every_context_used():
    contexts = [
        Context("a", "# Gaming Catalyst Program (GCP)\nAuthor: Treasure DAO"),
        Context("b", "The Gaming Catalyst Program allocates 200 million ARB."),
    ]

    verdict = verify_claims(["The Gaming Catalyst Program was proposed by Treasure DAO."], contexts)[0]

    assert verdict.verdict == SUPPORTED
    assert verdict.context_ids[0] == "a"
    assert "Author: Treasure DAO" in verdict.evidence
    assert all(piece in contexts[0].text + contexts[1].text for piece in verdict.evidence.split(" … "))


def test_no_contexts_means_not_enough_info_for_every_claim():
    claims = ["The STIP proposal was authored by the Arbitrum Foundation.", "It allocated 50 million ARB."]

    verdicts = verify_claims(claims, [])

    assert [(verdict.claim, verdict.verdict) for verdict in verdicts] == [(0, NOT_ENOUGH_INFO), (1, NOT_ENOUGH_INFO)]
    assert verify_claims([], SAMPLE["query-004"]["contexts"]) == []


def test_one_verdict_per_claim_in_order():
    item = SAMPLE["query-004"]
    claims = extract_claims(item["response"]) * 2

    verdicts = verify_claims(claims, item["contexts"])

    assert [verdict.claim for verdict in verdicts] == list(range(len(claims)))
    assert all(verdict.verdict in VERDICTS for verdict in verdicts)


# --- rubric audit rules ----------------------------------------------------------------------------


def test_rubric_respects_at_most_rules():
    item = SAMPLE["query-004"]
    rules = [
        "Faithfulness must be at most 0.4.",
        "Relevance at most 30%.",
        "Completeness should be high.",  # no number: no cap
    ]

    scores = judge_rubric(item["query"], item["response"], item["contexts"], rules)

    assert scores.faithfulness == 0.4
    assert scores.relevance == 0.3
    assert scores.completeness >= 0.7


# --- reply texts -------------------------------------------------------------------------------------


def sample_fields(item_id: str = "query-004-hallucinated") -> dict[str, dict]:
    item = SAMPLE[item_id]
    claims = extract_claims(item["response"])
    return {
        "claim_extraction": {"query": item["query"], "response": item["response"]},
        "claim_verification": {"claims": claims, "contexts": item["contexts"]},
        "relevancy": {"query": item["query"], "response": item["response"], "contexts": item["contexts"]},
        "rubric": {
            "query": item["query"],
            "response": item["response"],
            "contexts": item["contexts"],
            "audit_rules": [],
        },
        "correctness": {"query": item["query"], "response": item["response"], "reference": item["reference_answer"]},
    }


def test_reply_claim_extraction_is_json_with_claims():
    fields = sample_fields()["claim_extraction"]

    data = json.loads(reply("claim_extraction", fields))

    assert data == {"claims": extract_claims(fields["response"])}


def test_reply_claim_verification_numbers_claims_from_one():
    fields = sample_fields()["claim_verification"]

    data = json.loads(reply("claim_verification", fields))

    assert [item["claim"] for item in data["verdicts"]] == [1, 2, 3]
    assert all(set(item) == {"claim", "verdict", "evidence", "context_ids"} for item in data["verdicts"])
    assert data["verdicts"][0]["verdict"] == CONTRADICTED
    assert data["verdicts"][0]["context_ids"] == ["stip-tally"]


def test_reply_relevancy_starts_with_yes_or_no():
    on_topic = reply("relevancy", sample_fields("query-004")["relevancy"]).split("\n", 1)
    off_topic = reply("relevancy", sample_fields("gcp-faithful-irrelevant")["relevancy"]).split("\n", 1)

    assert on_topic[0] == "YES" and on_topic[1].strip()
    assert off_topic[0] == "NO" and "STIP" in off_topic[1]


def test_reply_rubric_is_json_with_the_four_dimensions():
    data = json.loads(reply("rubric", sample_fields()["rubric"]))

    assert set(data) == {"faithfulness", "relevance", "completeness", "reasoning_quality", "improvement_suggestions"}
    assert all(0 <= data[key] <= 1 for key in ("faithfulness", "relevance", "completeness", "reasoning_quality"))
    assert data["improvement_suggestions"] and all(isinstance(s, str) for s in data["improvement_suggestions"])


def test_reply_correctness_puts_the_score_alone_on_the_first_line():
    first, justification = reply("correctness", sample_fields("query-004")["correctness"]).split("\n", 1)

    assert 4 <= float(first) <= 5
    assert "reference" in justification


@pytest.mark.parametrize(
    "prompt_name", ["claim_extraction", "claim_verification", "relevancy", "rubric", "correctness"]
)
def test_reply_reads_back_through_the_shared_parser(prompt_name):
    from judges.reply_parsing import parse_reply

    fields = sample_fields()[prompt_name]

    parsed = parse_reply(prompt_name, reply(prompt_name, fields), fields)

    assert parsed is not None


def test_reply_accepts_contexts_as_dicts_and_strings():
    claims = ["The STIP program allocated 50 million ARB tokens."]
    as_dicts = [{"id": "forum", "text": SAMPLE["query-004"]["contexts"][2].text}]
    as_strings = [SAMPLE["query-004"]["contexts"][2].text]

    from_dicts = json.loads(reply("claim_verification", {"claims": claims, "contexts": as_dicts}))
    from_strings = json.loads(reply("claim_verification", {"claims": claims, "contexts": as_strings}))

    assert from_dicts["verdicts"][0]["context_ids"] == ["forum"]
    assert from_strings["verdicts"][0]["context_ids"] == ["1"]
    assert from_dicts["verdicts"][0]["verdict"] == from_strings["verdicts"][0]["verdict"] == SUPPORTED


def test_reply_rejects_an_unknown_prompt():
    with pytest.raises(ValueError, match="no reply for prompt 'summary'"):
        reply("summary", {})


# --- determinism and speed ---------------------------------------------------------------------------

_ALL_REPLIES_SCRIPT = """
import json
from pathlib import Path
from judges.heuristics import extract_claims, reply
from judges.types import Context
out = []
for line in Path("datasets/demo/stip-governance.jsonl").read_text().splitlines():
    row = json.loads(line)
    contexts = [Context(c["id"], c["text"]) for c in row["contexts"]]
    claims = extract_claims(row["response"])
    out.append(reply("claim_extraction", {"query": row["query"], "response": row["response"]}))
    out.append(reply("claim_verification", {"claims": claims, "contexts": contexts}))
    out.append(reply("relevancy", {"query": row["query"], "response": row["response"], "contexts": contexts}))
    out.append(reply("rubric", {"query": row["query"], "response": row["response"], "contexts": contexts, "audit_rules": []}))
    out.append(reply("correctness", {"query": row["query"], "response": row["response"], "reference": row["reference_answer"]}))
print(json.dumps(out))
"""


def test_replies_are_identical_across_processes_and_hash_seeds():
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _ALL_REPLIES_SCRIPT], cwd=REPO, env=env, capture_output=True, text=True, check=True
        )
        outputs.append(done.stdout)

    assert outputs[0] == outputs[1]
    assert len(json.loads(outputs[0])) == 5 * len(SAMPLE)
