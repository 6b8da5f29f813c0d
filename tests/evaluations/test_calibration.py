"""Prediction-powered means: hand-computed cases, the reference package's figures, and coverage by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from evaluations.calibration import calibrated_mean, ppi_lambda

# A 12-item run, 6 audited. Judge mean 8/12; judge − human on the audit: 0, 1, 0, 0, ½, 0 → mean ¼.
JUDGE_ALL = [1, 1, 0, 1, 0.5, 1, 0, 1, 1, 0.5, 1, 0]
JUDGE_AUDITED = [1, 1, 0, 1, 0.5, 1]
HUMAN_AUDITED = [1, 0, 0, 1, 0, 1]


def test_rectified_mean_is_the_judge_mean_minus_the_audited_bias() -> None:
    result = calibrated_mean(JUDGE_ALL, JUDGE_AUDITED, HUMAN_AUDITED)

    assert result.n_items == 12 and result.n_audited == 6
    assert result.judge_mean == pytest.approx(8 / 12)
    assert result.ppi.mean == pytest.approx(8 / 12 - 1 / 4)
    assert result.human.mean == pytest.approx(0.5)


def test_ppi_interval_comes_from_the_two_variances() -> None:
    result = calibrated_mean(JUDGE_ALL, JUDGE_AUDITED, HUMAN_AUDITED)

    judge_variance = np.var(JUDGE_ALL)  # population variances, as ppi-python
    rectifier_variance = np.var(np.subtract(HUMAN_AUDITED, JUDGE_AUDITED))
    std_error = np.sqrt(judge_variance / 12 + rectifier_variance / 6)
    assert result.ppi.std_error == pytest.approx(std_error)
    assert result.ppi.ci_low == pytest.approx(result.ppi.mean - 1.959964 * std_error)
    assert result.ppi.ci_high == pytest.approx(result.ppi.mean + 1.959964 * std_error)


def test_figures_match_the_reference_package_ppi_python() -> None:
    # ppi-python 0.2.3: ppi_mean_pointestimate / ppi_mean_ci(Y=human, Yhat=judge_audited,
    # Yhat_unlabeled=judge_all, alpha=0.05, lam=None | 1) on these inputs printed these figures.
    result = calibrated_mean(JUDGE_ALL, JUDGE_AUDITED, HUMAN_AUDITED)

    assert result.ppi.mean == pytest.approx(0.41666666666666663)
    assert (result.ppi.ci_low, result.ppi.ci_high) == pytest.approx((0.027862707830153766, 0.8054706255031795))
    assert result.ppi_plus.mean == pytest.approx(0.46153846153846156)
    assert (result.ppi_plus.ci_low, result.ppi_plus.ci_high) == pytest.approx((0.1174626646697775, 0.8056142584071456))


def test_against_the_reference_package_ppi_python() -> None:
    import ppi_py  # the reference package (requirements-dev.txt)

    rng = np.random.default_rng(5)
    truth = (rng.random(500) < 0.6).astype(float)
    judge = np.clip(truth + rng.normal(0.1, 0.3, 500), 0, 1)
    audited = rng.choice(500, 60, replace=False)

    result = calibrated_mean(judge, judge[audited], truth[audited])

    low, high = ppi_py.ppi_mean_ci(truth[audited], judge[audited], judge, alpha=0.05)
    assert (result.ppi_plus.ci_low, result.ppi_plus.ci_high) == pytest.approx((float(low[0]), float(high[0])))


def test_power_tuning_lambda_is_clipped_to_0_1() -> None:
    judge = np.array([0.0, 1.0, 0.0, 1.0])
    assert ppi_lambda(judge, judge, 1 - judge) == 0.0  # anti-correlated judge: ignore it
    assert 0 < ppi_lambda(judge, judge, judge) <= 1


def test_identical_labels_give_a_zero_width_interval_without_dividing_by_zero() -> None:
    result = calibrated_mean([1.0] * 10, [1.0] * 4, [1.0] * 4)

    for estimate in (result.human, result.ppi, result.ppi_plus):
        assert (estimate.mean, estimate.ci_low, estimate.ci_high, estimate.std_error) == (1.0, 1.0, 1.0, 0.0)
    assert result.lam == 1.0


def test_a_constant_judge_leaves_the_human_mean() -> None:
    result = calibrated_mean([0.9] * 10, [0.9] * 4, [1.0, 0.0, 1.0, 1.0])

    assert result.ppi_plus.mean == pytest.approx(0.75) and result.ppi.mean == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (([], [1.0], [1.0]), "judge_all"),
        (([1.0], [1.0, 0.0], [1.0]), "human_audited"),
        (([1.0], [float("nan")], [1.0]), "judge_audited"),
    ],
)
def test_bad_input_names_the_argument(arguments, message) -> None:
    with pytest.raises(ValueError, match=message):
        calibrated_mean(*arguments)


def test_simulated_audits_cover_the_true_mean_and_beat_the_human_only_interval() -> None:
    # given: 2,000 items with a true pass/fail; a noisy judge that half-passes the failures
    rng = np.random.default_rng(2023)
    truth = (rng.random(2000) < 0.7).astype(float)
    judge = np.clip(0.45 + 0.5 * truth + rng.normal(0, 0.15, 2000), 0, 1)
    true_mean = truth.mean()
    assert abs(judge.mean() - true_mean) > 0.05  # the judge alone is biased

    # when: 1,000 random audits of 150 items
    covered = narrower = 0
    for _ in range(1000):
        audit = rng.choice(2000, 150, replace=False)
        result = calibrated_mean(judge, judge[audit], truth[audit])
        covered += result.ppi_plus.ci_low <= true_mean <= result.ppi_plus.ci_high
        narrower += (result.ppi_plus.ci_high - result.ppi_plus.ci_low) < (result.human.ci_high - result.human.ci_low)

    # then
    assert covered >= 930
    assert narrower >= 990
