"""Paired statistics for comparing runs and judges: pure functions (numpy), no database.

- `paired_bootstrap`: the mean of candidate − base over paired items, with a percentile
  bootstrap 95% interval (resampling the pairs, fixed seed so a page and the CLI agree);
  significant when the interval excludes 0 and there are at least MIN_PAIRS_FOR_SIGNIFICANCE (5) pairs.
- `mcnemar_exact`: pass/fail flips between two runs on the same items; the exact two-sided
  binomial test on the discordant pairs (p = 1 when nothing flipped).
- `cohen_kappa`: chance-corrected agreement of two raters over any label set, with a bootstrap
  interval. Undefined (None) when chance agreement is 1 (both raters used one and the same
  label only): then κ is 0/0, and it is reported as undefined, never as a number.

Resampling is vectorised in chunks of about RESAMPLE_CHUNK_VALUES indices (2 MB, they stay in
the CPU cache; 32 MB chunks took twice as long): 2,000 resamples of 10,000 pairs take about
0.15 s to draw and 0.06 s per compared column on one core.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
SEED = 20231
CONFIDENCE = 0.95
# Below this many pairs a bootstrap interval says little (one pair resamples to itself: a zero-width
# interval), so no delta is called significant.
MIN_PAIRS_FOR_SIGNIFICANCE = 5
RESAMPLE_CHUNK_VALUES = 250_000


@dataclass(frozen=True)
class DeltaEstimate:
    """candidate − base over n pairs; the interval is None when there is no pair."""

    n: int
    base_mean: float | None
    candidate_mean: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    significant: bool  # the interval excludes 0 (and there are MIN_PAIRS_FOR_SIGNIFICANCE pairs)


@dataclass(frozen=True)
class McNemarResult:
    """Pass/fail flips: pass→fail (regressed) and fail→pass (improved) over n paired verdicts."""

    n: int
    pass_to_fail: int
    fail_to_pass: int
    p_value: float


@dataclass(frozen=True)
class KappaEstimate:
    """Cohen's κ of two raters over n items; kappa None = undefined (chance agreement is 1 or no items)."""

    n: int
    kappa: float | None
    ci_low: float | None
    ci_high: float | None
    observed_agreement: float | None
    expected_agreement: float | None


def paired_bootstrap(
    base: Sequence[float] | np.ndarray,
    candidate: Sequence[float] | np.ndarray,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> DeltaEstimate:
    """Mean delta (candidate − base) of paired scores with a percentile bootstrap interval."""
    return paired_bootstraps([(base, candidate)], resamples=resamples, seed=seed, confidence=confidence)[0]


def paired_bootstraps(
    pairs: Sequence[tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> list[DeltaEstimate]:
    """`paired_bootstrap` of several (base, candidate) pairs at once (e.g. every metric of a comparison).

    Pairs of the same length share one set of resampled indices, drawn once: the random draws
    cost as much as the gathers, and each pair's figures stay those it gets alone.
    """
    arrays = [
        (_flat(f"pairs[{i}]", base), _flat(f"pairs[{i}]", candidate)) for i, (base, candidate) in enumerate(pairs)
    ]
    for i, (base, candidate) in enumerate(arrays):
        if base.shape != candidate.shape:
            raise ValueError(
                f"pairs[{i}]: base and candidate must be equally long, got {len(base)} and {len(candidate)}"
            )
    deltas = [candidate - base for base, candidate in arrays]
    means = bootstrap_means(deltas, resamples=resamples, seed=seed)
    estimates = []
    for (base, candidate), delta, resampled in zip(arrays, deltas, means, strict=True):
        if len(delta) == 0:
            estimates.append(
                DeltaEstimate(
                    n=0, base_mean=None, candidate_mean=None, delta=None, ci_low=None, ci_high=None, significant=False
                )
            )
            continue
        low, high = _percentile_interval(resampled, confidence)
        estimates.append(
            DeltaEstimate(
                n=len(delta),
                base_mean=float(base.mean()),
                candidate_mean=float(candidate.mean()),
                delta=float(delta.mean()),
                ci_low=low,
                ci_high=high,
                significant=len(delta) >= MIN_PAIRS_FOR_SIGNIFICANCE and (low > 0 or high < 0),
            )
        )
    return estimates


def bootstrap_means(columns: Sequence[np.ndarray], *, resamples: int = RESAMPLES, seed: int = SEED) -> list[np.ndarray]:
    """The means of `resamples` bootstrap resamples of each column (empty columns: an empty array)."""
    means: list[np.ndarray] = [np.empty(0) for _ in columns]
    by_length: dict[int, list[int]] = {}
    for position, column in enumerate(columns):
        if len(column) and np.all(column == column[0]):
            # Every resample of a constant column has its mean (e.g. a metric the two runs agree
            # on item by item, like the citation audit of the same answers): no draws needed.
            means[position] = np.full(resamples, float(column[0]))
        elif len(column):
            by_length.setdefault(len(column), []).append(position)
    for n, positions in by_length.items():
        chunks: dict[int, list[np.ndarray]] = {position: [] for position in positions}
        for indices in resample_indices(n, resamples, seed):
            for position in positions:
                chunks[position].append(np.take(columns[position], indices).mean(axis=1))
        for position in positions:
            means[position] = np.concatenate(chunks[position])
    return means


def mcnemar_exact(base_passed: Sequence[bool], candidate_passed: Sequence[bool]) -> McNemarResult:
    """Exact McNemar test: two-sided binomial(b + c, ½) on the discordant pairs b (pass→fail) and c (fail→pass)."""
    if len(base_passed) != len(candidate_passed):
        raise ValueError("base_passed and candidate_passed must be equally long")
    base_array = np.asarray(base_passed, dtype=bool)
    candidate_array = np.asarray(candidate_passed, dtype=bool)
    regressed = int(np.count_nonzero(base_array & ~candidate_array))
    improved = int(np.count_nonzero(~base_array & candidate_array))
    return McNemarResult(
        n=len(base_array),
        pass_to_fail=regressed,
        fail_to_pass=improved,
        p_value=binomial_two_sided_p(regressed, regressed + improved),
    )


def binomial_two_sided_p(successes: int, trials: int) -> float:
    """P(a result at least as far from trials/2) under binomial(trials, ½); 1.0 when trials is 0."""
    if trials == 0:
        return 1.0
    tail = min(successes, trials - successes)
    # In log space: C(10000, k) / 2**10000 overflows a float long before the sum is small.
    ks = np.arange(tail + 1)
    log_terms = _log_comb(trials, ks) - trials * math.log(2)
    peak = log_terms.max()
    p = 2 * math.exp(peak) * float(np.exp(log_terms - peak).sum())
    return min(1.0, p)


def _log_comb(n: int, ks: np.ndarray) -> np.ndarray:
    log_factorials = np.array([math.lgamma(value + 1) for value in range(n + 1)])
    return log_factorials[n] - log_factorials[ks] - log_factorials[n - ks]


def cohen_kappa(
    rater_a: Sequence[Hashable],
    rater_b: Sequence[Hashable],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> KappaEstimate:
    """Cohen's κ = (p_o − p_e) / (1 − p_e) with a percentile bootstrap interval over the items.

    Resamples whose κ is undefined (a resample with one label only) are left out of the
    interval; when every resample is undefined the interval is None.
    """
    if len(rater_a) != len(rater_b):
        raise ValueError("rater_a and rater_b must be equally long")
    n = len(rater_a)
    if n == 0:
        return KappaEstimate(
            n=0, kappa=None, ci_low=None, ci_high=None, observed_agreement=None, expected_agreement=None
        )
    labels = {label: code for code, label in enumerate(dict.fromkeys([*rater_a, *rater_b]))}
    codes_a = np.fromiter((labels[label] for label in rater_a), dtype=np.int64, count=n)
    codes_b = np.fromiter((labels[label] for label in rater_b), dtype=np.int64, count=n)
    observed, expected = _agreements(codes_a[None, :], codes_b[None, :], len(labels))
    kappa = _kappa(observed, expected)[0]
    kappas = np.concatenate(
        [
            _kappa(*_agreements(codes_a[indices], codes_b[indices], len(labels)))
            for indices in resample_indices(n, resamples, seed)
        ]
    )
    defined = kappas[~np.isnan(kappas)]
    low, high = _percentile_interval(defined, confidence) if len(defined) else (None, None)
    return KappaEstimate(
        n=n,
        kappa=None if np.isnan(kappa) else float(kappa),
        ci_low=low,
        ci_high=high,
        observed_agreement=float(observed[0]),
        expected_agreement=float(expected[0]),
    )


def confusion_matrix(
    rows: Sequence[Hashable], columns: Sequence[Hashable], labels: Sequence[Hashable]
) -> list[list[int]]:
    """counts[i][j] = items labelled labels[i] by the first rater and labels[j] by the second."""
    index = {label: position for position, label in enumerate(labels)}
    counts = [[0] * len(labels) for _ in labels]
    for row, column in zip(rows, columns, strict=True):
        counts[index[row]][index[column]] += 1
    return counts


def resample_indices(n: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """`resamples` rows of n indices drawn with replacement, in chunks of rows (same draws for the same seed)."""
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    rng = np.random.default_rng(seed)
    rows_per_chunk = max(1, RESAMPLE_CHUNK_VALUES // n)
    for start in range(0, resamples, rows_per_chunk):
        rows = min(rows_per_chunk, resamples - start)
        yield rng.integers(0, n, size=(rows, n), dtype=np.int64)  # int64: numpy's fastest draw


def _flat(name: str, values: Sequence[float] | np.ndarray) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name}: give a flat list of numbers")
    return array


def _agreements(codes_a: np.ndarray, codes_b: np.ndarray, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
    """Observed and chance agreement of each row of paired label codes."""
    rows, n = codes_a.shape
    observed = (codes_a == codes_b).mean(axis=1)
    offsets = (np.arange(rows) * n_labels)[:, None]
    share_a = np.bincount((codes_a + offsets).ravel(), minlength=rows * n_labels).reshape(rows, n_labels) / n
    share_b = np.bincount((codes_b + offsets).ravel(), minlength=rows * n_labels).reshape(rows, n_labels) / n
    return observed, (share_a * share_b).sum(axis=1)


def _kappa(observed: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """κ per row; NaN where chance agreement is 1 (κ undefined), without dividing by zero."""
    undefined = np.isclose(expected, 1.0)
    denominator = np.where(undefined, 1.0, 1.0 - expected)
    return np.where(undefined, np.nan, (observed - expected) / denominator)


def _percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)
