"""Human-calibrated scores from a run's audit: hand-computed cases, ppi-python's figures, progress, comparison."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from datasets.services import dataset_import
from evaluations import audit_estimates
from evaluations.audit_estimates import FAITHFULNESS, calibrated_comparison, estimate, run_calibration
from evaluations.models import AuditItem, Claim, Run, RunItem
from evaluations.reports import run_report
from evaluations.services import audits
from judges.services import judge_config_create
from tests.evaluations.helpers import example
from tests.evaluations.scored_runs import scored_run

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]
Z95 = 1.959963984540054


def one_claim_run(judge_verdicts: list[str], *, name: str = "audit") -> Run:
    """A finished faithfulness run whose item n has one claim with the n-th judge verdict."""
    content = "".join(json.dumps(example(n)) + "\n" for n in range(1, len(judge_verdicts) + 1)).encode()
    version = dataset_import(name=name, file=io.BytesIO(content), filename="d.jsonl", fmt="jsonl").version
    judge = judge_config_create(name=f"{name}-judge", provider="offline", model="heuristic-v1")
    items = {
        f"q-{n}": {"faithfulness": 1.0 if verdict == "SUPPORTED" else 0.0, "claims": [("A claim.", verdict, verdict)]}
        for n, verdict in enumerate(judge_verdicts, start=1)
    }
    return scored_run(version, judge, items, metrics=["faithfulness"], name=name)


def people_say(run: Run, verdicts: dict[int, str]) -> None:
    """People's final verdicts on the claims of items q-<n> (reviewed now), and those items audited if drawn."""
    for number, verdict in verdicts.items():
        item = RunItem.objects.get(run=run, example__external_id=f"q-{number}")
        Claim.objects.filter(item=item).update(current_verdict=verdict, reviewed_at=item.finished_at)
        RunItem.objects.filter(pk=item.pk).update(reviewed_at=item.finished_at)
        AuditItem.objects.filter(item=item).update(audited_at=item.finished_at)


def test_no_audit_no_calibration(django_assert_num_queries) -> None:
    run = one_claim_run(["SUPPORTED"] * 5)
    with django_assert_num_queries(1):
        assert run_calibration(run.pk) is None
    assert run_calibration(10**9) is None


def test_below_30_audited_items_there_is_progress_not_a_figure(django_assert_num_queries) -> None:
    run = one_claim_run(["SUPPORTED"] * 60)
    audits.audit_start(run=run, size=40, seed=3, user=None)
    drawn = AuditItem.objects.filter(audit__run=run).order_by("position")
    people_say(run, {int(entry.item.example.external_id[2:]): "SUPPORTED" for entry in drawn[:29]})

    with django_assert_num_queries(1):
        calibration = run_calibration(run.pk)

    assert calibration["status"] == "in_progress" and calibration["estimates"] == {}
    assert calibration["audit"] | {"created_at": None} == {
        "id": run.audit.pk,
        "size": 40,
        "drawn": 40,
        "audited": 29,
        "seed": 3,
        "population": 60,
        "created_at": None,
        "created_by": None,
    }
    assert calibration["min_audited"] == 30
    json.dumps(calibration)  # JSON-ready


def test_a_fully_audited_run_hand_computed(django_assert_num_queries) -> None:
    # given: 60 items, one claim each; the judge supports 48 (mean 0.8); people overturn 6 of those (mean 0.7)
    run = one_claim_run(["SUPPORTED"] * 48 + ["CONTRADICTED"] * 12)
    audits.audit_start(run=run, size=60, seed=1, user=None)
    people_say(run, {n: "CONTRADICTED" if n <= 6 else "SUPPORTED" for n in range(1, 49)})
    people_say(run, {n: "CONTRADICTED" for n in range(49, 61)})

    # when
    with django_assert_num_queries(3):
        calibration = run_calibration(run.pk)

    # then: judge 0.8 over all; people 0.7; rectifier −1 on 6 items → mean −0.1, variance 0.09
    assert calibration["status"] == "calibrated"
    faithfulness = calibration["estimates"]["faithfulness"]
    assert (faithfulness["n_items"], faithfulness["n_audited"]) == (60, 60)
    assert faithfulness["judge"]["mean"] == pytest.approx(0.8)
    assert faithfulness["bias"] == pytest.approx(0.1)
    human_se = np.sqrt(0.21 / 60)  # people's variance 0.7 × 0.3
    assert faithfulness["human"]["std_error"] == pytest.approx(human_se)
    assert faithfulness["human"]["ci_low"] == pytest.approx(0.7 - Z95 * human_se)
    ppi_se = np.sqrt(0.16 / 60 + 0.09 / 60)
    assert faithfulness["ppi"]["mean"] == pytest.approx(0.7)
    assert faithfulness["ppi"]["std_error"] == pytest.approx(ppi_se)
    # ppi-python 0.2.3 on these labels: ppi_mean_ci(lam=1) (0.57348487, 0.82651513); PPI++ (0.60240959, 0.79759041)
    assert (faithfulness["ppi"]["ci_low"], faithfulness["ppi"]["ci_high"]) == pytest.approx((0.57348487, 0.82651513))
    calibrated = faithfulness["calibrated"]
    assert calibrated["method"] == "ppi++" and calibrated["mean"] == pytest.approx(0.7)
    assert (calibrated["ci_low"], calibrated["ci_high"]) == pytest.approx((0.60240959, 0.79759041))
    assert calibrated["lambda"] == pytest.approx(0.14 / (2 * 0.16 * 120 / 119))  # cov / ((1 + n/N)·var, ddof 1)
    # the pass rate (threshold 0.8) is the same 0/1 labels here
    assert calibration["estimates"]["faithfulness_pass_rate"]["calibrated"]["mean"] == pytest.approx(0.7)


def test_judge_values_come_from_the_judges_verdicts_whatever_people_changed_outside_the_audit() -> None:
    run = one_claim_run(["SUPPORTED"] * 40)
    audit = audits.audit_start(run=run, size=30, seed=5, user=None)
    drawn = set(AuditItem.objects.filter(audit=audit).values_list("item__example__external_id", flat=True))
    outside = [n for n in range(1, 41) if f"q-{n}" not in drawn]
    people_say(run, {int(external[2:]): "SUPPORTED" for external in drawn})
    # people overturn every item they reviewed by need, outside the sample: neither figure moves
    Claim.objects.filter(item__run=run, item__example__external_id__in=[f"q-{n}" for n in outside]).update(
        current_verdict="CONTRADICTED"
    )

    faithfulness = run_calibration(run.pk)["estimates"]["faithfulness"]

    assert faithfulness["judge"]["mean"] == 1.0 and faithfulness["n_audited"] == 30
    assert faithfulness["calibrated"]["mean"] == 1.0


def test_identical_labels_give_a_zero_width_interval() -> None:
    run = one_claim_run(["SUPPORTED"] * 35)
    audits.audit_start(run=run, size=35, seed=1, user=None)
    people_say(run, dict.fromkeys(range(1, 36), "SUPPORTED"))

    estimates = run_calibration(run.pk)["estimates"]

    for key in ("faithfulness", "faithfulness_pass_rate"):
        for name in ("human", "ppi", "calibrated"):
            figure = estimates[key][name]
            assert (figure["mean"], figure["ci_low"], figure["ci_high"], figure["std_error"]) == (1.0, 1.0, 1.0, 0.0)


def test_partial_credit_and_claim_less_items_score_as_the_metric_does() -> None:
    # item 1: judge SUPPORTED + PARTIALLY_SUPPORTED = 0.75; people: PARTIALLY + CONTRADICTED = 0.25; item 2: no claim = 1.0
    content = "".join(json.dumps(example(n)) + "\n" for n in (1, 2)).encode()
    version = dataset_import(name="pw", file=io.BytesIO(content), filename="d.jsonl", fmt="jsonl").version
    judge = judge_config_create(name="pw-judge", provider="offline", model="heuristic-v1")
    claims = [("One.", "SUPPORTED", "PARTIALLY_SUPPORTED"), ("Two.", "PARTIALLY_SUPPORTED", "CONTRADICTED")]
    run = scored_run(
        version, judge, {"q-1": {"faithfulness": 0.75, "claims": claims}, "q-2": {"faithfulness": 1.0}}, name="pw"
    )

    values = audit_estimates.item_values(run.pk, partial_weight=0.5)

    assert values.judge.tolist() == [0.75, 1.0]
    assert values.human.tolist() == [0.25, 1.0]
    assert values.threshold == 0.8


def test_figures_match_ppi_python_on_a_partial_audit() -> None:
    # 200 items on quarter steps, a judge biased up; 40 of them drawn by the service's own sampler (seed 7)
    rng = np.random.default_rng(11)
    truth = np.round(rng.beta(4, 2, 200) * 4) / 4
    judge = np.clip(truth + np.round(rng.normal(0.1, 0.15, 200) * 4) / 4, 0, 1)
    drawn = audits.sample_positions(200, 40, 7)

    figures = estimate(FAITHFULNESS, judge, judge[drawn], truth[drawn])

    # ppi-python 0.2.3: ppi_mean_pointestimate / ppi_mean_ci(truth[drawn], judge[drawn], judge, alpha=0.05[, lam=1]),
    # classical_mean_ci(truth[drawn]); its dependencies are heavy (see README), so its figures are pinned here.
    assert figures["calibrated"]["mean"] == pytest.approx(0.64616315)
    assert (figures["calibrated"]["ci_low"], figures["calibrated"]["ci_high"]) == pytest.approx(
        (0.59803827, 0.69428803)
    )
    assert figures["ppi"]["mean"] == pytest.approx(0.63)
    assert (figures["ppi"]["ci_low"], figures["ppi"]["ci_high"]) == pytest.approx((0.57039405, 0.68960595))
    assert (figures["human"]["ci_low"], figures["human"]["ci_high"]) == pytest.approx(
        (0.5970251569975813, 0.7154748430024187)
    )


def test_intervals_are_clipped_to_the_scores_range() -> None:
    figures = estimate(FAITHFULNESS, [1.0] * 50 + [0.0] * 2, [1.0, 1.0, 0.0], [1.0, 1.0, 1.0])
    assert figures["calibrated"]["ci_high"] <= 1.0 and figures["ppi"]["ci_high"] <= 1.0


def audited_run(name: str, judge_verdicts: list[str], people: dict[int, str]) -> Run:
    run = one_claim_run(judge_verdicts, name=name)
    audits.audit_start(run=run, size=len(judge_verdicts), seed=1, user=None)
    people_say(run, people)
    return run


def test_comparison_of_two_calibrated_runs() -> None:
    base = audited_run(
        "base", ["SUPPORTED"] * 40, {n: "SUPPORTED" if n <= 30 else "CONTRADICTED" for n in range(1, 41)}
    )
    candidate = audited_run(
        "cand", ["SUPPORTED"] * 40, {n: "SUPPORTED" if n <= 36 else "CONTRADICTED" for n in range(1, 41)}
    )

    comparison = calibrated_comparison(base.pk, candidate.pk)

    b = comparison["base"]["estimates"]["faithfulness"]["calibrated"]
    c = comparison["candidate"]["estimates"]["faithfulness"]["calibrated"]
    figure = comparison["metrics"]["faithfulness"]
    assert (b["mean"], c["mean"]) == pytest.approx((0.75, 0.9))
    assert figure["delta"] == pytest.approx(0.15)
    std_error = np.hypot(b["std_error"], c["std_error"])
    assert figure["std_error"] == pytest.approx(std_error)
    assert (figure["ci_low"], figure["ci_high"]) == pytest.approx((0.15 - Z95 * std_error, 0.15 + Z95 * std_error))
    assert figure["significant"] is (figure["ci_low"] > 0)
    json.dumps(comparison)


def test_no_comparison_unless_both_runs_are_calibrated() -> None:
    base = audited_run("base", ["SUPPORTED"] * 40, dict.fromkeys(range(1, 41), "SUPPORTED"))
    candidate = one_claim_run(["SUPPORTED"] * 40, name="cand")
    assert calibrated_comparison(base.pk, candidate.pk) is None
    audits.audit_start(run=candidate, size=40, seed=1, user=None)
    people_say(candidate, dict.fromkeys(range(1, 20), "SUPPORTED"))
    assert calibrated_comparison(base.pk, candidate.pk) is None  # 19 audited: in progress
    people_say(candidate, dict.fromkeys(range(20, 41), "SUPPORTED"))
    assert calibrated_comparison(base.pk, candidate.pk) is not None


def test_the_json_report_carries_the_calibration() -> None:
    run = audited_run("rep", ["SUPPORTED"] * 30, dict.fromkeys(range(1, 31), "SUPPORTED"))
    report = run_report(run, [])
    assert report["calibration"]["estimates"]["faithfulness"]["calibrated"]["mean"] == 1.0
    assert run_report(one_claim_run(["SUPPORTED"], name="plain"), [])["calibration"] is None


@pytest.mark.parametrize("seed", range(5))
def test_against_the_reference_package_ppi_python(seed) -> None:
    import ppi_py  # the reference package (requirements-dev.txt)

    rng = np.random.default_rng(seed)
    truth = (rng.random(1000) < 0.65).astype(float)
    judge = np.clip(truth * 0.6 + rng.normal(0.3, 0.2, 1000), 0, 1)
    drawn = audits.sample_positions(1000, 150, seed)

    figures = estimate(FAITHFULNESS, judge, judge[drawn], truth[drawn])

    low, high = ppi_py.ppi_mean_ci(truth[drawn], judge[drawn], judge, alpha=0.05)
    assert figures["calibrated"]["mean"] == pytest.approx(
        float(ppi_py.ppi_mean_pointestimate(truth[drawn], judge[drawn], judge)[0])
    )
    assert (figures["calibrated"]["ci_low"], figures["calibrated"]["ci_high"]) == pytest.approx(
        (float(low[0]), float(high[0]))
    )
