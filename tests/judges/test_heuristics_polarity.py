"""The offline judge's polarity checks (judges.heuristics): a claim asserting what the context denies (or the reverse) is CONTRADICTED."""

from __future__ import annotations

import pytest

from judges.heuristics import extract_claims, verify_claims
from judges.heuristics.negation import drop_answer_particle, stances
from judges.heuristics.text import tokenize
from judges.types import CONTRADICTED, NOT_ENOUGH_INFO, PARTIALLY_SUPPORTED, SUPPORTED, Context


def verdict_of(claim: str, context: str) -> str:
    return verify_claims([claim], [Context(id="c1", text=context)])[0].verdict


def test_a_yes_answer_to_what_the_context_forbids_scores_zero_not_half():
    # given: the newcomer's case, an answer "Yes, X is allowed as part of Y" and a context "X is not allowed"
    answer = "Yes, retroactive funding is allowed as part of the STIP grant."
    context = Context(id="rules", text="# STIP rules\nRetroactive funding is not allowed.")

    # when
    claims = extract_claims(answer)
    verdicts = verify_claims(claims, [context])

    # then
    assert claims == ["Retroactive funding is allowed as part of the STIP grant."]
    assert [verdict.verdict for verdict in verdicts] == [CONTRADICTED]
    assert verdicts[0].context_ids == ("rules",)
    assert "Retroactive funding is not allowed." in verdicts[0].evidence


@pytest.mark.parametrize(
    ("claim", "context"),
    [
        # yes / no answers
        ("Yes, retroactive funding is allowed as part of the STIP grant.", "Retroactive funding is not allowed."),
        ("No, retroactive funding is not allowed.", "Retroactive funding is allowed as part of the STIP grant."),
        # not, no, never, no longer, isn't / aren't / cannot
        ("The proposal was approved by the DAO.", "The proposal was not approved by the DAO."),
        ("There are no fees for the grant application.", "There are fees for the grant application."),
        ("Delegates have never voted on the proposal.", "Delegates voted on the proposal in March."),
        ("The incentive program is still active.", "The incentive program is no longer active."),
        ("The council isn't elected by token holders.", "The council is elected by token holders."),
        ("Grantees aren't required to publish reports.", "Grantees are required to publish reports monthly."),
        ("Delegates can vote on the treasury proposal.", "Delegates cannot vote on the treasury proposal."),
        ("Delegates can vote on the treasury proposal.", "Delegates can't vote on the treasury proposal."),
        # antonym pairs, either way round
        ("Token transfers are prohibited during the vote.", "Token transfers are allowed during the vote."),
        ("Token transfers are permitted during the vote.", "Token transfers are forbidden during the vote."),
        ("Audits are required for every grantee.", "Audits are optional for every grantee."),
        ("Audits are optional for every grantee.", "Audits are mandatory for every grantee."),
        ("Staking rewards are included in the budget.", "Staking rewards are excluded from the budget."),
        ("Staking rewards are excluded from the budget.", "Staking rewards are included in the budget."),
        # a denied antonym asserts: "not prohibited" = allowed
        ("Token transfers are not allowed during the vote.", "Token transfers are not prohibited during the vote."),
    ],
)
def test_a_flipped_polarity_is_contradicted(claim, context):
    assert verdict_of(claim, context) == CONTRADICTED


@pytest.mark.parametrize(
    ("claim", "context", "expected"),
    [
        # the same polarity on both sides, however it is written
        (
            "Token transfers are not allowed during the vote.",
            "Token transfers are prohibited during the vote.",
            SUPPORTED,
        ),
        ("Audits are not required for grantees.", "Audits are optional for grantees.", SUPPORTED),
        (
            "Token transfers are allowed during the vote.",
            "Token transfers are not prohibited during the vote.",
            SUPPORTED,
        ),
        ("No, retroactive funding is not allowed.", "Retroactive funding is not allowed.", SUPPORTED),
        # a negation about something else in the sentence
        (
            "The proposal was approved by the DAO.",
            "The proposal was approved by the DAO, not by the council.",
            SUPPORTED,
        ),
        ("Delegates voted on the proposal.", "Delegates voted on the proposal but not on the budget.", SUPPORTED),
        # "not only" negates nothing
        ("The grant covers audits and marketing.", "The grant covers not only audits but also marketing.", SUPPORTED),
        # "options" is not "optional"
        ("The vote offers three options.", "Options: For, Against, Abstain. The vote offers three options.", SUPPORTED),
        # a denial about another subject does not contradict
        ("Retroactive funding is allowed for audits.", "Marketing spend is not allowed.", NOT_ENOUGH_INFO),
    ],
)
def test_agreeing_or_unrelated_polarity_is_not_a_contradiction(claim, context, expected):
    assert verdict_of(claim, context) == expected


def test_a_word_denied_elsewhere_in_a_quote_is_not_a_contradiction():
    # "hasn't done X" in the claim, "all he's done" in the context: the same verb, about different things
    claim = 'He said that "he hasn\'t done anything" and he is "taking care of the people he should get rid of".'
    context = '"All he\'s done," Ojeda said, "is shown that he\'s taking care of the people he should get rid of."'

    assert verdict_of(claim, context) in (SUPPORTED, PARTIALLY_SUPPORTED)


@pytest.mark.parametrize(
    ("text", "denied", "asserted"),
    [
        ("Retroactive funding is not allowed.", {"allow"}, {"retroactiv"}),
        ("The program is no longer active.", {"activ"}, {"program"}),
        ("Audits are optional.", {"requir"}, {"audit"}),
        ("It is not prohibited.", set(), {"allow"}),
        ("Delegates cannot vote.", {"vot"}, {"delegate"}),
        ("The grant covers not only audits.", set(), {"audit"}),
    ],
)
def test_stances(text, denied, asserted):
    found = stances(tokenize(text))
    assert {word for word, sign in found.items() if sign < 0} == denied
    assert asserted <= {word for word, sign in found.items() if sign > 0}


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Yes, X is allowed.", "X is allowed."),
        ("No. X is not allowed.", "X is not allowed."),
        ("No fees are charged.", "No fees are charged."),  # "No" as a determiner stays
        ("Yesterday it rained.", "Yesterday it rained."),
    ],
)
def test_drop_answer_particle(text, statement):
    assert drop_answer_particle(text) == statement
