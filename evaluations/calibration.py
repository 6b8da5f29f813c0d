"""Human-calibrated means: prediction-powered inference (PPI) for a mean. Pure functions, numpy.

The judge scores all N items of a run; people label a uniformly random audit of n of them.
The judge's mean alone is biased in ways nobody sees; the human mean alone is unbiased but
wide. PPI (Angelopoulos et al., Science 2023) keeps the judge's precision and the people's
lack of bias:

    rectified mean θ = mean(judge over all N) − mean(judge − human over the n audited)
    standard error   = sqrt(var(judge over N) / N + var(human − judge over n) / n)

PPI++ (Angelopoulos, Duchi, Zrnic 2023) scales the judge by λ:
θ_λ = λ·mean(judge over N) + mean(human − λ·judge over n), with λ chosen to minimise the
variance, λ = cov(human, judge) / ((1 + n/N)·var(judge)), clipped to [0, 1]: λ = 1 is PPI,
λ = 0 the human-only mean, so a judge uncorrelated with people costs nothing.

The formulas (population variances, the λ estimate, a normal interval) are those of the
reference package `ppi-python` (`ppi_mean_ci`, `ppi_mean_pointestimate`), so the figures agree
with it to rounding. With identical labels (zero variance) the interval has width 0: nothing
is divided by a variance except λ's estimate, which falls back to 1 then (every λ gives the
same estimate and interval when the judge is constant).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

CONFIDENCE = 0.95


@dataclass(frozen=True)
class MeanEstimate:
    mean: float
    ci_low: float
    ci_high: float
    std_error: float


@dataclass(frozen=True)
class CalibratedMean:
    """The judge's mean over every item, the people's over the audit, and the two PPI estimates."""

    n_items: int  # N: items the judge scored
    n_audited: int  # n: items people labelled
    judge_mean: float
    human: MeanEstimate  # classical interval from the audit alone
    ppi: MeanEstimate  # λ = 1
    ppi_plus: MeanEstimate  # power-tuned λ
    lam: float  # PPI++'s λ


def calibrated_mean(
    judge_all: Sequence[float] | np.ndarray,
    judge_audited: Sequence[float] | np.ndarray,
    human_audited: Sequence[float] | np.ndarray,
    *,
    confidence: float = CONFIDENCE,
) -> CalibratedMean:
    """All the estimates at once. `judge_audited[i]` and `human_audited[i]` are the same item.

    Raises ValueError naming the argument that is empty or of the wrong length.
    """
    judge = _vector("judge_all", judge_all)
    judge_labelled = _vector("judge_audited", judge_audited)
    human = _vector("human_audited", human_audited)
    if len(judge_labelled) != len(human):
        raise ValueError(
            f"human_audited: {len(human)} labels for {len(judge_labelled)} judge scores (one per audited item)"
        )
    z = z_value(confidence)
    lam = ppi_lambda(judge, judge_labelled, human)
    return CalibratedMean(
        n_items=len(judge),
        n_audited=len(human),
        judge_mean=float(judge.mean()),
        human=_interval(float(human.mean()), float(human.std() / math.sqrt(len(human))), z),
        ppi=ppi_mean(judge, judge_labelled, human, lam=1.0, confidence=confidence),
        ppi_plus=ppi_mean(judge, judge_labelled, human, lam=lam, confidence=confidence),
        lam=lam,
    )


def ppi_mean(
    judge_all: np.ndarray,
    judge_audited: np.ndarray,
    human_audited: np.ndarray,
    *,
    lam: float = 1.0,
    confidence: float = CONFIDENCE,
) -> MeanEstimate:
    """θ_λ = λ·mean(judge_all) + mean(human − λ·judge) over the audit, with its normal interval."""
    n_items, n_audited = len(judge_all), len(human_audited)
    rectifier = human_audited - lam * judge_audited
    estimate = float(lam * judge_all.mean() + rectifier.mean())
    variance = (lam * judge_all).var() / n_items + rectifier.var() / n_audited
    return _interval(estimate, math.sqrt(variance), z_value(confidence))


def ppi_lambda(judge_all: np.ndarray, judge_audited: np.ndarray, human_audited: np.ndarray) -> float:
    """PPI++'s variance-minimising λ for a mean, clipped to [0, 1]; 1 when the judge's scores do not vary."""
    n_items, n_audited = len(judge_all), len(human_audited)
    covariance = float(np.mean((human_audited - human_audited.mean()) * (judge_audited - judge_audited.mean())))
    pooled = np.concatenate([judge_audited, judge_all])
    judge_variance = float(pooled.var(ddof=1)) if len(pooled) > 1 else 0.0
    if judge_variance <= 0:
        return 1.0
    return float(np.clip(covariance / ((1 + n_audited / n_items) * judge_variance), 0.0, 1.0))


def _interval(mean: float, std_error: float, z: float) -> MeanEstimate:
    return MeanEstimate(mean=mean, ci_low=mean - z * std_error, ci_high=mean + z * std_error, std_error=std_error)


def z_value(confidence: float) -> float:
    """The normal quantile of a two-sided interval at this confidence (1.96 at 0.95)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _vector(name: str, values: Sequence[float] | np.ndarray) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or len(array) == 0:
        raise ValueError(f"{name}: give at least one score (a flat list of numbers)")
    if not np.isfinite(array).all():
        raise ValueError(f"{name}: every score must be a finite number")
    return array
