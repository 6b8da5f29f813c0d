"""Simulated audits: a synthetic judge with a known bias and noise over 2,000 items whose true mean is known.

Each of 1,000 audits draws 150 items with the service's own sampler (`audits.sample_positions`, seeds
0..999) and estimates with the run page's own function (`audit_estimates.estimate`). The calibrated 95%
interval must cover the true mean in at least 93% of the audits, and be narrower than the people-only
interval when the judge tracks people; when it does not, PPI++ must cost (almost) nothing.
No database: a second or two in all.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluations.audit_estimates import FAITHFULNESS, FAITHFULNESS_PASS_RATE, Target, estimate
from evaluations.services.audits import sample_positions

N_ITEMS, AUDIT_SIZE, AUDITS = 2000, 150, 1000


def simulate(target: Target, judge: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per audit: covered?, the calibrated interval's width, the people-only interval's width."""
    true_mean = truth.mean()
    covered, width, human_width = (np.empty(AUDITS) for _ in range(3))
    for seed in range(AUDITS):
        drawn = sample_positions(N_ITEMS, AUDIT_SIZE, seed)
        figures = estimate(target, judge, judge[drawn], truth[drawn])
        calibrated, human = figures["calibrated"], figures["human"]
        covered[seed] = calibrated["ci_low"] <= true_mean <= calibrated["ci_high"]
        width[seed] = calibrated["ci_high"] - calibrated["ci_low"]
        human_width[seed] = human["ci_high"] - human["ci_low"]
    return covered, width, human_width


def test_a_biased_noisy_judge_of_faithfulness_is_corrected_with_honest_intervals() -> None:
    # given: people's faithfulness on quarter steps (true mean ≈ 0.65); the judge says 0.12 more, ± 0.1
    rng = np.random.default_rng(2023)
    truth = np.round(rng.beta(4, 2, N_ITEMS) * 4) / 4
    judge = np.clip(truth + 0.12 + rng.normal(0, 0.1, N_ITEMS), 0, 1)
    assert judge.mean() - truth.mean() > 0.08  # the judge alone is off by far more than any interval

    covered, width, human_width = simulate(FAITHFULNESS, judge, truth)

    assert covered.mean() >= 0.93
    assert (width < human_width).mean() >= 0.99
    assert width.mean() < 0.7 * human_width.mean()


def test_a_lenient_judge_of_pass_fail_is_corrected() -> None:
    # given: 70% of items truly pass; the judge passes 40% of the failures and fails 5% of the passes
    rng = np.random.default_rng(17)
    truth = (rng.random(N_ITEMS) < 0.7).astype(float)
    flips = rng.random(N_ITEMS)
    judge = np.where(truth == 1, flips >= 0.05, flips < 0.4).astype(float)
    assert judge.mean() - truth.mean() > 0.05

    covered, width, human_width = simulate(FAITHFULNESS_PASS_RATE, judge, truth)

    assert covered.mean() >= 0.93
    assert width.mean() < human_width.mean()


def test_a_judge_that_ignores_people_costs_almost_nothing() -> None:
    # given: the judge's scores are noise, unrelated to people's
    rng = np.random.default_rng(5)
    truth = np.round(rng.beta(4, 2, N_ITEMS) * 4) / 4
    judge = rng.random(N_ITEMS)

    covered, width, human_width = simulate(FAITHFULNESS, judge, truth)

    assert covered.mean() >= 0.93
    assert width.mean() == pytest.approx(human_width.mean(), rel=0.05)  # PPI++'s λ goes to 0: the people's mean
