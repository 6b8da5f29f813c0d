"""Paired bootstrap, McNemar's exact test and Cohen's κ against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from evaluations.statistics import (
    binomial_two_sided_p,
    cohen_kappa,
    confusion_matrix,
    mcnemar_exact,
    paired_bootstrap,
    paired_bootstraps,
)

# --- paired bootstrap ------------------------------------------------------------------------


def test_identical_runs_have_delta_0_and_are_not_significant() -> None:
    scores = [0.2, 0.9, 0.5, 1.0, 0.0, 0.7]

    estimate = paired_bootstrap(scores, list(scores))

    assert estimate.n == 6 and estimate.delta == 0.0
    assert estimate.ci_low == 0.0 and estimate.ci_high == 0.0
    assert not estimate.significant


def test_means_and_delta_are_the_plain_paired_means() -> None:
    estimate = paired_bootstrap([0.0, 0.5, 1.0, 0.5], [0.5, 0.5, 0.5, 1.0])

    assert estimate.base_mean == pytest.approx(0.5)
    assert estimate.candidate_mean == pytest.approx(0.625)
    assert estimate.delta == pytest.approx(0.125)
    # a resample's mean delta lies between the smallest and the largest single delta
    assert -0.5 <= estimate.ci_low <= estimate.delta <= estimate.ci_high <= 0.5


def test_a_planted_regression_is_flagged_and_noise_is_not() -> None:
    rng = np.random.default_rng(7)
    base = rng.uniform(0.3, 1.0, 400)
    noise = rng.normal(0, 0.05, 400)

    regressed = paired_bootstrap(base, base - 0.05 + noise)
    unchanged = paired_bootstrap(base, base + noise - noise.mean())

    assert regressed.significant and regressed.ci_high < 0
    assert regressed.ci_low < regressed.delta < regressed.ci_high
    assert not unchanged.significant and unchanged.ci_low < 0 < unchanged.ci_high


def test_the_interval_is_reproducible_from_its_seed() -> None:
    rng = np.random.default_rng(1)
    base, candidate = rng.random(50), rng.random(50)

    assert paired_bootstrap(base, candidate) == paired_bootstrap(base, candidate)
    assert paired_bootstrap(base, candidate, seed=1) != paired_bootstrap(base, candidate, seed=2)


def test_no_pairs_gives_no_figures() -> None:
    estimate = paired_bootstrap([], [])

    assert estimate.n == 0 and estimate.delta is None and estimate.ci_low is None and not estimate.significant


def test_unequal_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="equally long"):
        paired_bootstrap([1.0, 0.5], [1.0])


# --- McNemar ---------------------------------------------------------------------------------


def test_mcnemar_counts_flips_each_way_and_gives_the_exact_binomial_p() -> None:
    # 3 pass→fail, 1 fail→pass, 2 unchanged: p = 2·P(X ≤ 1 | 4, ½) = 2·5/16
    result = mcnemar_exact([True, True, True, False, True, False], [False, False, False, True, True, False])

    assert (result.n, result.pass_to_fail, result.fail_to_pass) == (6, 3, 1)
    assert result.p_value == pytest.approx(0.625)


def test_mcnemar_without_flips_has_p_1() -> None:
    result = mcnemar_exact([True, False, True], [True, False, True])

    assert (result.pass_to_fail, result.fail_to_pass, result.p_value) == (0, 0, 1.0)


def test_ten_flips_one_way_are_significant() -> None:
    result = mcnemar_exact([True] * 10, [False] * 10)

    assert result.p_value == pytest.approx(2 / 1024)


@pytest.mark.parametrize(
    ("successes", "trials", "expected"),
    [
        (0, 1, 1.0),
        (3, 20, 2 * (1 + 20 + 190 + 1140) / 2**20),
        (17, 20, 2 * (1 + 20 + 190 + 1140) / 2**20),
        (5, 10, 1.0),
    ],
)
def test_binomial_two_sided_p(successes: int, trials: int, expected: float) -> None:
    assert binomial_two_sided_p(successes, trials) == pytest.approx(expected, rel=1e-9)


def test_binomial_p_of_many_trials_does_not_overflow() -> None:
    assert 0 < binomial_two_sided_p(4000, 10_000) < 1e-80


# --- Cohen's kappa ---------------------------------------------------------------------------


def test_kappa_when_all_agree_over_two_labels_is_1() -> None:
    estimate = cohen_kappa(["a", "b", "a", "b"], ["a", "b", "a", "b"])

    assert estimate.kappa == pytest.approx(1.0)
    assert estimate.observed_agreement == 1.0 and estimate.expected_agreement == pytest.approx(0.5)


def test_kappa_when_all_disagree_is_minus_1() -> None:
    # p_o = 0, p_e = ½·½ + ½·½ = ½ → κ = −1
    estimate = cohen_kappa(["a", "b", "a", "b"], ["b", "a", "b", "a"])

    assert estimate.kappa == pytest.approx(-1.0)


def test_kappa_of_one_label_only_is_undefined_not_a_division_by_zero() -> None:
    estimate = cohen_kappa(["SUPPORTED"] * 5, ["SUPPORTED"] * 5)

    assert estimate.kappa is None and estimate.ci_low is None and estimate.ci_high is None
    assert estimate.observed_agreement == 1.0 and estimate.expected_agreement == 1.0


def test_kappa_hand_computed_three_labels() -> None:
    # judge: a a a b b c ; person: a a b b c c
    # p_o = 4/6; p_e = (3/6·2/6) + (2/6·2/6) + (1/6·2/6) = 12/36 = 1/3; κ = (2/3 − 1/3) / (2/3) = 0.5
    estimate = cohen_kappa(list("aaabbc"), list("aabbcc"))

    assert estimate.kappa == pytest.approx(0.5)
    assert estimate.ci_low <= 0.5 <= estimate.ci_high
    assert estimate.ci_low >= -1 and estimate.ci_high <= 1


def test_kappa_with_no_items_is_undefined() -> None:
    assert cohen_kappa([], []).kappa is None


def test_confusion_matrix_counts_rows_by_the_first_rater() -> None:
    assert confusion_matrix(list("aab"), list("abb"), ["a", "b", "c"]) == [[1, 1, 0], [0, 1, 0], [0, 0, 0]]


def test_several_pairs_at_once_give_the_figures_each_gets_alone() -> None:
    rng = np.random.default_rng(11)
    pairs = [
        (rng.random(40), rng.random(40)),
        (rng.random(40), rng.random(40)),
        (rng.random(7), rng.random(7)),
        ([], []),
    ]

    together = paired_bootstraps(pairs)

    assert together == [paired_bootstrap(base, candidate) for base, candidate in pairs]
    assert together[0] != together[1]  # shared draws, different data


def test_a_constant_delta_has_a_zero_width_interval_at_its_value() -> None:
    estimate = paired_bootstrap([0.5, 0.2, 0.9, 0.0, 0.5], [0.75, 0.45, 1.15, 0.25, 0.75])

    assert estimate.delta == pytest.approx(0.25)
    assert estimate.ci_low == pytest.approx(0.25) and estimate.ci_high == pytest.approx(0.25) and estimate.significant


def test_fewer_than_five_pairs_are_never_significant() -> None:
    estimate = paired_bootstrap([0.5, 0.2, 0.9, 0.0], [0.75, 0.45, 1.15, 0.25])

    assert estimate.ci_low == pytest.approx(0.25) and not estimate.significant
