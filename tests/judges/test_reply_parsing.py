from __future__ import annotations

import pytest

from judges.prompts import PROMPT_NAMES
from judges.reply_parsing import (
    normalize_verdict,
    parse_claims,
    parse_correctness,
    parse_json_object,
    parse_relevancy,
    parse_reply,
    parse_rubric,
    parse_verdicts,
)
from judges.types import (
    CONTRADICTED,
    NOT_ENOUGH_INFO,
    PARTIALLY_SUPPORTED,
    SUPPORTED,
    ClaimVerdict,
    Correctness,
    JudgeResponseError,
    Relevancy,
    RubricScores,
)

FENCE = "```"

# --- parse_json_object -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  {"a": [1, 2], "b": {"c": null}}  ', {"a": [1, 2], "b": {"c": None}}),
        (f'{FENCE}json\n{{"a": 1}}\n{FENCE}', {"a": 1}),
        (f'{FENCE}JSON\n{{"a": 1}}\n{FENCE}', {"a": 1}),
        (f'{FENCE}\n{{"a": 1}}\n{FENCE}', {"a": 1}),
        (f'Here you go:\n{FENCE}json\n{{"a": 1}}\n{FENCE}\nHope this helps {{:)}}', {"a": 1}),
        (f'{FENCE}json\n{{"a": 1}}', {"a": 1}),  # unclosed fence
        ('Sure! Here is the JSON: {"a": 1} Let me know.', {"a": 1}),
        ('Sure!\n\n{"a": 1}\n\nThe answer {mentions} braces.', {"a": 1}),
        ('I considered {the options} first. {"a": 1}', {"a": 1}),
        ("{'a': 'x', 'b': ['y', 'z']}", {"a": "x", "b": ["y", "z"]}),
        ("{'claims': ['The city's budget grew.']}", {"claims": ["The city's budget grew."]}),
        ("{'q': 'He said \"hi\"'}", {"q": 'He said "hi"'}),
        ('{"a": 1,}', {"a": 1}),
        ('{"a": [1, 2, ],\n}', {"a": [1, 2]}),
        ('{"a": [{"b": 1,},],}', {"a": [{"b": 1}]}),
        ('{"a": 1', {"a": 1}),
        ('{"a": [1, 2]', {"a": [1, 2]}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"a": {"b": "c"', {"a": {"b": "c"}}),
        ('{"a": True, "b": False, "c": None}', {"a": True, "b": False, "c": None}),
        ("{a: 1, b_c: 'x'}", {"a": 1, "b_c": "x"}),
        ('{"a": "the "Council" voted"}', {"a": 'the "Council" voted'}),
        ('{"a": "line\nbreak"}', {"a": "line\nbreak"}),
        ("{'a': 'caf\\u00e9\\n'}", {"a": "café\n"}),
        ('{"a": "{not a brace}"} trailing } ]', {"a": "{not a brace}"}),
        ('{"a": "x"}\n{"b": "y"}', {"a": "x"}),
    ],
)
def test_parse_json_object_reads_lenient_json(text, expected):
    assert parse_json_object(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no json here",
        "[1, 2, 3]",
        "{",
        '{"a": "cut off in the midd',
        '{"a": }',
        '{"a": 1 "b": 2}',
        f"{FENCE}json\n{FENCE}",
    ],
)
def test_parse_json_object_rejects_what_cannot_be_read(text):
    with pytest.raises(JudgeResponseError, match="no readable JSON object"):
        parse_json_object(text)


def test_parse_json_object_error_quotes_the_start_of_the_reply():
    with pytest.raises(JudgeResponseError, match="'I cannot help with that."):
        parse_json_object("I cannot help with that.\nSorry.")


# --- normalize_verdict -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("SUPPORTED", SUPPORTED),
        ("supported", SUPPORTED),
        ("Supported.", SUPPORTED),
        ("**SUPPORTED**", SUPPORTED),
        (" yes ", SUPPORTED),
        ("TRUE", SUPPORTED),
        ("entailed", SUPPORTED),
        ("Entailment", SUPPORTED),
        ("PARTIALLY_SUPPORTED", PARTIALLY_SUPPORTED),
        ("partially supported", PARTIALLY_SUPPORTED),
        ("Partially-Supported", PARTIALLY_SUPPORTED),
        ("partial", PARTIALLY_SUPPORTED),
        ("Partially", PARTIALLY_SUPPORTED),
        ("CONTRADICTED", CONTRADICTED),
        ("no", CONTRADICTED),
        ("No.", CONTRADICTED),
        ("unsupported", CONTRADICTED),
        ("Refuted", CONTRADICTED),
        ("false", CONTRADICTED),
        ("NOT_ENOUGH_INFO", NOT_ENOUGH_INFO),
        ("not enough info", NOT_ENOUGH_INFO),
        ("Not Enough Information", NOT_ENOUGH_INFO),
        ("not_enough_information", NOT_ENOUGH_INFO),
        ("idk", NOT_ENOUGH_INFO),
        ("unknown", NOT_ENOUGH_INFO),
        ("insufficient", NOT_ENOUGH_INFO),
        ("NEI", NOT_ENOUGH_INFO),
        ('"nei"', NOT_ENOUGH_INFO),
    ],
)
def test_normalize_verdict(label, expected):
    assert normalize_verdict(label) == expected


@pytest.mark.parametrize("label", ["maybe", "", "SUPPORTED BY c1", "probably true", "not supported at all"])
def test_normalize_verdict_rejects_unknown_labels(label):
    with pytest.raises(JudgeResponseError, match="unknown verdict label"):
        normalize_verdict(label)


@pytest.mark.parametrize("label", [None, 1, True, ["SUPPORTED"]])
def test_normalize_verdict_rejects_non_strings(label):
    with pytest.raises(JudgeResponseError, match="must be a string"):
        normalize_verdict(label)


# --- parse_claims ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"claims": ["A is B.", "C is D."]}', ["A is B.", "C is D."]),
        (f'{FENCE}json\n{{"claims": ["A is B."]}}\n{FENCE}', ["A is B."]),
        ('The claims are:\n{"claims": ["A is B.",]}', ["A is B."]),
        ('{"claims": ["  A is B.  ", "", "   ", "C."]}', ["A is B.", "C."]),
        ('{"claims": []}', []),
        ('["A is B.", "C is D."]', ["A is B.", "C is D."]),
        ('Claims from [c1]: {"claims": ["A."]}', ["A."]),
        ('{"Claims": ["A."]}', ["A."]),
        ('{"statements": ["A."]}', ["A."]),
        ("{'claims': ['The Foundation's proposal passed.']}", ["The Foundation's proposal passed."]),
        ('{"claims": ["A.", "B."]', ["A.", "B."]),
    ],
)
def test_parse_claims(text, expected):
    assert parse_claims(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"claims": "A is B."}', "'claims' must be a list, got str"),
        ('{"claims": {"1": "A"}}', "'claims' must be a list, got dict"),
        ('{"claims": null}', "'claims' must be a list, got NoneType"),
        ('{"claims": ["A.", 2]}', "claim 2 is not a string"),
        ('{"claims": [["A."]]}', "claim 1 is not a string"),
        ('{"answer": "A.", "count": 1}', "found a JSON object without it"),
        ("There are no claims.", "found no readable JSON"),
    ],
)
def test_parse_claims_errors(text, message):
    with pytest.raises(JudgeResponseError, match=message):
        parse_claims(text)


# --- parse_verdicts ----------------------------------------------------------------------------


def verdicts_json(*items: str) -> str:
    return '{"verdicts": [' + ", ".join(items) + "]}"


def test_parse_verdicts_returns_0_based_claims_in_claim_order():
    text = verdicts_json(
        '{"claim": 2, "verdict": "CONTRADICTED", "evidence": "Author: Arbitrum Foundation", "context_ids": ["stip-tally"]}',
        '{"claim": 1, "verdict": "SUPPORTED", "evidence": "50 million ARB", "context_ids": ["stip-forum"]}',
    )

    assert parse_verdicts(text, 2) == [
        ClaimVerdict(claim=0, verdict=SUPPORTED, evidence="50 million ARB", context_ids=("stip-forum",)),
        ClaimVerdict(
            claim=1, verdict=CONTRADICTED, evidence="Author: Arbitrum Foundation", context_ids=("stip-tally",)
        ),
    ]


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ('{"claim": 1, "verdict": "yes"}', ClaimVerdict(0, SUPPORTED)),
        ('{"claim": "1", "verdict": "Partially Supported"}', ClaimVerdict(0, PARTIALLY_SUPPORTED)),
        ('{"claim": 1.0, "verdict": "nei", "evidence": null, "context_ids": null}', ClaimVerdict(0, NOT_ENOUGH_INFO)),
        ('{"claim": 1, "verdict": "no", "evidence": "  x  "}', ClaimVerdict(0, CONTRADICTED, "x")),
        ('{"claim": 1, "verdict": "yes", "evidence": ["a", "b"]}', ClaimVerdict(0, SUPPORTED, "a … b")),
        ('{"claim": 1, "verdict": "yes", "context_ids": "c1"}', ClaimVerdict(0, SUPPORTED, context_ids=("c1",))),
        ('{"claim": 1, "verdict": "yes", "context_ids": [1, "2"]}', ClaimVerdict(0, SUPPORTED, context_ids=("1", "2"))),
        (
            '{"claim": 1, "verdict": "yes", "context_ids": ["[c1]", " "]}',
            ClaimVerdict(0, SUPPORTED, context_ids=("c1",)),
        ),
        ('{"Claim": 1, "Verdict": "yes", "Context IDs": ["c1"]}', ClaimVerdict(0, SUPPORTED, context_ids=("c1",))),
    ],
)
def test_parse_verdicts_reads_each_field_leniently(item, expected):
    assert parse_verdicts(verdicts_json(item), 1) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        f'{FENCE}json\n{{"verdicts": [{{"claim": 1, "verdict": "SUPPORTED"}}]}}\n{FENCE}',
        'Here are my verdicts:\n{"verdicts": [{"claim": 1, "verdict": "SUPPORTED",},],}\nDone.',
        '[{"claim": 1, "verdict": "SUPPORTED"}]',
        "{'verdicts': [{'claim': 1, 'verdict': 'SUPPORTED'}]}",
        '{"verdicts": [{"claim": 1, "verdict": "SUPPORTED"}]',
        '{"results": [{"claim": 1, "verdict": "SUPPORTED"}]}',
    ],
)
def test_parse_verdicts_reads_lenient_json(text):
    assert parse_verdicts(text, 1) == [ClaimVerdict(0, SUPPORTED)]


def test_parse_verdicts_with_no_claims():
    assert parse_verdicts('{"verdicts": []}', 0) == []


@pytest.mark.parametrize(
    ("text", "n_claims", "message"),
    [
        (verdicts_json('{"claim": 1, "verdict": "SUPPORTED"}'), 2, r"no verdict for claim\(s\) 2 of 2"),
        (verdicts_json(), 3, r"no verdict for claim\(s\) 1, 2, 3 of 3"),
        (
            verdicts_json('{"claim": 1, "verdict": "SUPPORTED"}', '{"claim": 1, "verdict": "NO"}'),
            2,
            "claim 1 has more than one verdict",
        ),
        (verdicts_json('{"claim": 0, "verdict": "SUPPORTED"}'), 1, r"names claim 0, out of range 1\.\.1"),
        (verdicts_json('{"claim": 3, "verdict": "SUPPORTED"}'), 2, r"names claim 3, out of range 1\.\.2"),
        (verdicts_json('{"claim": 1, "verdict": "SUPPORTED"}'), 0, r"out of range 1\.\.0"),
        (verdicts_json('{"claim": 1, "verdict": "plausible"}'), 1, "unknown verdict label 'plausible'"),
        (verdicts_json('{"claim": 1, "label": "SUPPORTED"}'), 1, r"verdict 1 \(claim 1\) has no 'verdict' label"),
        (verdicts_json('{"verdict": "SUPPORTED"}'), 1, "verdict 1 has no 'claim' number"),
        (verdicts_json('{"claim": 1.5, "verdict": "SUPPORTED"}'), 2, "not a whole number: 1.5"),
        (verdicts_json('{"claim": "first", "verdict": "SUPPORTED"}'), 1, "not a whole number: 'first'"),
        (verdicts_json('{"claim": true, "verdict": "SUPPORTED"}'), 1, "not a whole number: True"),
        (verdicts_json('"SUPPORTED"'), 1, "verdict 1 is not a JSON object"),
        ('{"verdicts": "all SUPPORTED"}', 1, "'verdicts' must be a list, got str"),
        (verdicts_json('{"claim": 1, "verdict": "yes", "evidence": {"a": 1}}'), 1, "evidence of claim 1 must be text"),
        (
            verdicts_json('{"claim": 1, "verdict": "yes", "context_ids": {"c1": 1}}'),
            1,
            "context_ids of claim 1 must be a list of ids",
        ),
        ("All claims are supported.", 1, "should hold a JSON object with 'verdicts'"),
    ],
)
def test_parse_verdicts_errors(text, n_claims, message):
    with pytest.raises(JudgeResponseError, match=message):
        parse_verdicts(text, n_claims)


# --- parse_relevancy ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("YES\nThe answer is in line.", Relevancy(True, "The answer is in line.")),
        ("NO\nIt names the wrong author.", Relevancy(False, "It names the wrong author.")),
        ("yes", Relevancy(True, "")),
        ("No.", Relevancy(False, "")),
        ("Yes.\n\nGood answer.\nSecond line.", Relevancy(True, "Good answer.\nSecond line.")),
        ("**NO**\nbad", Relevancy(False, "bad")),
        ("\n\n  YES  \n  fine  ", Relevancy(True, "fine")),
        ("Yes, the response matches the contexts.", Relevancy(True, "the response matches the contexts.")),
        ("NO - wrong year\nmore", Relevancy(False, "wrong year\nmore")),
        ("Answer: YES\nok", Relevancy(True, "ok")),
        ("**Answer:** no\nok", Relevancy(False, "ok")),
        ("`YES`", Relevancy(True, "")),
        ("YES\r\nwindows line ends\r\n", Relevancy(True, "windows line ends")),
    ],
)
def test_parse_relevancy(text, expected):
    assert parse_relevancy(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "reply is empty"),
        ("  \n \n", "reply is empty"),
        ("Maybe\nYES", "must start with YES or NO, got 'Maybe'"),
        ("Yesterday it was fine.", "must start with YES or NO"),
        ("The answer is YES.", "must start with YES or NO"),
        ("YES/NO", "must start with YES or NO"),
    ],
)
def test_parse_relevancy_errors(text, message):
    with pytest.raises(JudgeResponseError, match=message):
        parse_relevancy(text)


# --- parse_rubric ------------------------------------------------------------------------------


def rubric_json(f: object, r: object, c: object, q: object, extra: str = "") -> str:
    values = [f'"faithfulness": {f}', f'"relevance": {r}', f'"completeness": {c}', f'"reasoning_quality": {q}']
    return "{" + ", ".join(values + ([extra] if extra else [])) + "}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (rubric_json(0.4, 1, 0.5, 0), (0.4, 1.0, 0.5, 0.0)),
        (rubric_json('"0.4"', '"1"', '" 0.5 "', '"0"'), (0.4, 1.0, 0.5, 0.0)),
        (rubric_json(40, 100, 50, 0), (0.4, 1.0, 0.5, 0.0)),
        (rubric_json(0.4, 1, 0.5, 80), (0.004, 0.01, 0.005, 0.8)),  # one value above 1: the whole reply is 0..100
        (rubric_json('"40%"', '"100%"', "50", "0"), (0.4, 1.0, 0.5, 0.0)),
        (rubric_json(1, 1, 1, 1), (1.0, 1.0, 1.0, 1.0)),
        (rubric_json(0, 0, 0, 0), (0.0, 0.0, 0.0, 0.0)),
        (f"{FENCE}json\n{rubric_json(0.4, 1, 0.5, 0)}\n{FENCE}", (0.4, 1.0, 0.5, 0.0)),
        (
            "Scores:\n{'faithfulness': 0.4, 'relevance': 1, 'completeness': 0.5, 'reasoning_quality': 0,}",
            (0.4, 1.0, 0.5, 0.0),
        ),
        ('{"Faithfulness": 0.4, "Relevance": 1, "Completeness": 0.5, "Reasoning Quality": 0', (0.4, 1.0, 0.5, 0.0)),
    ],
)
def test_parse_rubric_scores(text, expected):
    scores = parse_rubric(text)

    assert (scores.faithfulness, scores.relevance, scores.completeness, scores.reasoning_quality) == pytest.approx(
        expected
    )


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("", []),
        ('"improvement_suggestions": null', []),
        ('"improvement_suggestions": []', []),
        (
            '"improvement_suggestions": ["Cite the Tally vote.", " ", "Drop the veto claim. "]',
            ["Cite the Tally vote.", "Drop the veto claim."],
        ),
        ('"improvement_suggestions": "Cite the Tally vote."', ["Cite the Tally vote."]),
        ('"improvement_suggestions": "- Cite the vote.\\n- Drop the veto.\\n"', ["Cite the vote.", "Drop the veto."]),
        ('"improvement_suggestions": "1. Cite the vote.\\n2) Drop the veto."', ["Cite the vote.", "Drop the veto."]),
        ('"improvement_suggestions": ""', []),
    ],
)
def test_parse_rubric_suggestions(extra, expected):
    assert parse_rubric(rubric_json(0.4, 1, 0.5, 0, extra)).improvement_suggestions == expected


def test_parse_rubric_returns_rubric_scores():
    assert parse_rubric(rubric_json(0.4, 1, 0.5, 0, '"improvement_suggestions": ["x"]')) == RubricScores(
        faithfulness=0.4, relevance=1.0, completeness=0.5, reasoning_quality=0.0, improvement_suggestions=["x"]
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"faithfulness": 0.4, "relevance": 1, "completeness": 0.5}', "no 'reasoning_quality' score"),
        ("{}", "no 'faithfulness' score"),
        (rubric_json('"high"', 1, 0.5, 0), "'faithfulness' is not a number: 'high'"),
        (rubric_json(0.4, "null", 0.5, 0), "'relevance' is not a number: None"),
        (rubric_json(0.4, 1, "true", 0), "'completeness' is not a number: True"),
        (rubric_json(0.4, 1, 0.5, "[0.5]"), r"'reasoning_quality' is not a number: \[0.5\]"),
        (rubric_json(0.4, 1, 0.5, '"NaN"'), "'reasoning_quality' is not a number: 'NaN'"),
        (rubric_json(-0.1, 1, 0.5, 0), r"'faithfulness' is -0.1, outside 0..1"),
        (rubric_json(50, -10, 0.5, 0), r"'relevance' is -0.1, outside 0..1"),
        (rubric_json(150, 100, 50, 0), r"'faithfulness' is 1.5, outside 0..1 \(or 0..100\)"),
        (rubric_json(0.4, 1, 0.5, 0, '"improvement_suggestions": {"a": 1}'), "improvement_suggestions must be a list"),
        (rubric_json(0.4, 1, 0.5, 0, '"improvement_suggestions": [["a"]]'), "improvement_suggestions must be a list"),
        ("The answer is good: 4/5.", "no readable JSON object"),
    ],
)
def test_parse_rubric_errors(text, message):
    with pytest.raises(JudgeResponseError, match=message):
        parse_rubric(text)


# --- parse_correctness -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4\nSame figures as the reference.", Correctness(4.0, "Same figures as the reference.")),
        ("4.5", Correctness(4.5, "")),
        ("4.0\nok", Correctness(4.0, "ok")),
        ("\n\n  3  \n\n  Misses the date.  ", Correctness(3.0, "Misses the date.")),
        ("4.5/5\nok", Correctness(4.5, "ok")),
        ("4.5 / 5\nok", Correctness(4.5, "ok")),
        ("4 out of 5\nok", Correctness(4.0, "ok")),
        ("Score: 4\nok", Correctness(4.0, "ok")),
        ("score = 2\nok", Correctness(2.0, "ok")),
        ("**4**\nok", Correctness(4.0, "ok")),
        ("**Score:** 5\nok", Correctness(5.0, "ok")),
        ("**Score**: 1.5/5\nok", Correctness(1.5, "ok")),
        ("## Score: 3", Correctness(3.0, "")),
        ("Rating: 2", Correctness(2.0, "")),
        ("4.", Correctness(4.0, "")),
        ("4 - minor omissions\nmore", Correctness(4.0, "minor omissions\nmore")),
        ("3.5 (mostly right)", Correctness(3.5, "mostly right")),
        ("1", Correctness(1.0, "")),
        ("5", Correctness(5.0, "")),
        ("4\r\nwindows\r\n", Correctness(4.0, "windows")),
    ],
)
def test_parse_correctness(text, expected):
    assert parse_correctness(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "reply is empty"),
        ("\n  \n", "reply is empty"),
        ("The answer is correct.\n4", "must start with a score alone on its line, got 'The answer is correct.'"),
        ("4 reasons make it good", "must start with a score"),
        ("8/10", "must start with a score"),
        ("four", "must start with a score"),
        ("0\nNot relevant.", r"correctness score 0 is outside 1\.\.5"),
        ("0.5", r"correctness score 0.5 is outside 1\.\.5"),
        ("5.5", r"correctness score 5.5 is outside 1\.\.5"),
        ("10", r"correctness score 10 is outside 1\.\.5"),
        ("-3", r"correctness score -3 is outside 1\.\.5"),
    ],
)
def test_parse_correctness_errors(text, message):
    with pytest.raises(JudgeResponseError, match=message):
        parse_correctness(text)


# --- parse_reply -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "fields", "expected"),
    [
        ("claim_extraction", '{"claims": ["A."]}', {"query": "q", "response": "r"}, ["A."]),
        (
            "claim_verification",
            '{"verdicts": [{"claim": 1, "verdict": "SUPPORTED"}, {"claim": 2, "verdict": "NO"}]}',
            {"claims": ["A.", "B."], "contexts": []},
            [ClaimVerdict(0, SUPPORTED), ClaimVerdict(1, CONTRADICTED)],
        ),
        ("relevancy", "YES\nfine", {}, Relevancy(True, "fine")),
        ("rubric", rubric_json(1, 1, 1, 1), {}, RubricScores(1.0, 1.0, 1.0, 1.0)),
        ("correctness", "4\nok", {}, Correctness(4.0, "ok")),
    ],
)
def test_parse_reply_dispatches_by_prompt_name(name, text, fields, expected):
    assert parse_reply(name, text, fields) == expected


def test_parse_reply_counts_claims_from_the_fields():
    text = '{"verdicts": [{"claim": 1, "verdict": "SUPPORTED"}]}'

    with pytest.raises(JudgeResponseError, match=r"no verdict for claim\(s\) 2, 3 of 3"):
        parse_reply("claim_verification", text, {"claims": ["A.", "B.", "C."], "contexts": []})


@pytest.mark.parametrize("name", PROMPT_NAMES)
def test_parse_reply_knows_every_prompt(name):
    with pytest.raises(JudgeResponseError):
        parse_reply(name, "", {"claims": []})


def test_parse_reply_rejects_unknown_prompts():
    with pytest.raises(KeyError, match="faithfulness"):
        parse_reply("faithfulness", "{}", {})
