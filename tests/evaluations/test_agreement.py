"""judge_agreement: reviewed claims (overrides and confirmations), override rate, κ, confusion, reliability."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from evaluations.agreement import judge_agreement
from evaluations.models import Claim, VerdictOverride
from evaluations.services.overrides import claim_override, claim_undo
from judges.services import judge_config_create
from tests.evaluations.scored_runs import scored_run

S, P, C, N = "SUPPORTED", "PARTIALLY_SUPPORTED", "CONTRADICTED", "NOT_ENOUGH_INFO"


def claims_of(*judge_verdicts: str) -> list[tuple[str, str, str]]:
    return [(f"Claim {n}.", verdict, verdict) for n, verdict in enumerate(judge_verdicts, start=1)]


def run_with_claims(version, judge, *judge_verdicts: str, prompt: str = "claim_verification@1"):
    run = scored_run(
        version, judge, {"q-1": {"faithfulness": 1.0, "claims": claims_of(*judge_verdicts)}},
        prompt_versions={"faithfulness": prompt},
    )  # fmt: skip
    return run, list(Claim.objects.filter(item__run=run).order_by("position"))


@pytest.fixture
def version(make_dataset):
    return make_dataset(3, name="river")


def test_overrides_and_confirmations_count_as_reviewed(version, offline_judge, make_user) -> None:
    reviewer = make_user("rita", role="reviewer")
    run, (confirmed, overridden, undone, contradicted, unreviewed) = run_with_claims(
        version, offline_judge, S, S, S, C, S
    )
    claim_override(claim=confirmed, reviewer=reviewer, new_verdict=S)
    claim_override(claim=overridden, reviewer=reviewer, new_verdict=C, reason="the context says the opposite")
    claim_override(claim=undone, reviewer=reviewer, new_verdict=C, reason="looked wrong")
    claim_undo(claim=undone, reviewer=reviewer)  # undo: back to the judge's verdict
    claim_override(claim=contradicted, reviewer=reviewer, new_verdict=C)

    [agreement] = judge_agreement()

    assert (agreement.judge, agreement.prompt_version) == ("offline-test", "claim_verification@1")
    assert agreement.reviewed == 4 and agreement.overridden == 1 and agreement.override_rate == 0.25
    # judge S S S C, person S C S C: p_o = 3/4, p_e = 3/4·1/2 + 1/4·1/2 = 1/2 → κ = 1/2
    assert agreement.kappa.kappa == pytest.approx(0.5)
    assert agreement.kappa_supported.kappa == pytest.approx(0.5)
    assert agreement.labels == [S, P, C, N]
    assert agreement.confusion == [[2, 0, 1, 0], [0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]]
    assert [(claim.claim_id, claim.changes, claim.reviews) for claim in agreement.most_overridden] == [
        (undone.pk, 2, 2),
        (overridden.pk, 1, 1),
    ]
    top = agreement.most_overridden[1]
    assert (top.item_id, top.run_id, top.final_verdict) == (overridden.item_id, run.pk, C)
    assert not agreement.reliable
    assert json.loads(json.dumps(asdict(agreement)))["kappa"]["kappa"] == pytest.approx(0.5)


def test_supported_vs_not_supported_merges_the_three_other_verdicts(version, offline_judge) -> None:
    _, claims = run_with_claims(version, offline_judge, P, C, S, N)
    for claim, verdict in zip(claims, [C, N, S, P], strict=True):
        claim_override(claim=claim, reviewer=None, new_verdict=verdict, reason="human label")

    [agreement] = judge_agreement()

    assert agreement.kappa_supported.kappa == pytest.approx(1.0)  # not / not / supported / not on both sides
    assert agreement.kappa.kappa < 0.5


def test_one_label_only_gives_an_undefined_kappa(version, offline_judge) -> None:
    _, claims = run_with_claims(version, offline_judge, S, S)
    for claim in claims:
        claim_override(claim=claim, reviewer=None, new_verdict=S)

    [agreement] = judge_agreement()

    assert agreement.kappa.kappa is None and agreement.kappa_supported.kappa is None
    assert agreement.override_rate == 0.0 and agreement.most_overridden == []


def test_each_judge_and_prompt_version_is_its_own_entry(version, offline_judge) -> None:
    other = judge_config_create(name="gpt", provider="openai", model="gpt-x", api_key_env="OPENAI_API_KEY")
    for judge, prompt in [(offline_judge, "v1"), (offline_judge, "v2"), (other, "v1")]:
        _, [claim] = run_with_claims(version, judge, S, prompt=prompt)
        claim_override(claim=claim, reviewer=None, new_verdict=C, reason="human label")
    run_with_claims(version, other, S)  # not reviewed: not counted

    entries = judge_agreement()

    assert [(entry.judge, entry.prompt_version, entry.reviewed) for entry in entries] == [
        ("gpt", "v1", 1),
        ("offline-test", "v1", 1),
        ("offline-test", "v2", 1),
    ]
    assert [entry.judge for entry in judge_agreement(judge_config_id=other.pk)] == ["gpt"]


@pytest.mark.parametrize(("reviewed", "reliable"), [(29, False), (30, True)])
def test_reliable_from_30_reviewed_claims_in_one_query(
    version, offline_judge, django_assert_num_queries, reviewed, reliable
) -> None:
    _, claims = run_with_claims(version, offline_judge, *([S, C] * 20))
    VerdictOverride.objects.bulk_create(
        [VerdictOverride(claim=claim, old_verdict=claim.judge_verdict, new_verdict=S) for claim in claims[:reviewed]]
    )
    Claim.objects.filter(pk__in=[claim.pk for claim in claims[:reviewed]]).update(current_verdict=S)

    with django_assert_num_queries(1):
        [agreement] = judge_agreement()

    assert agreement.reviewed == reviewed and agreement.reliable is reliable
    assert agreement.overridden == reviewed // 2
