"""The exact two-sided Poisson test of an observed failure count against a planned rate, the exact
(Garwood 1936) interval for the rate, and the test's exact power.

The construction is R's ``poisson.test(x, T, r)``: under H0 the total count ``x`` of independent
Poisson counts is Poisson with mean ``m = sum(rate_i * exposure_i)``; the two-sided p-value sums the
probabilities of every count no more probable than ``x`` (with R's relative tolerance ``1 + 1e-7``),
and the interval inverts the two one-sided tests through gamma quantiles. Units: the rate is events
per unit of exposure (per second, per step, per worker-second: whatever the exposure is in).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._common import special

REL_ERR = 1 + 1e-7  # R's tolerance: probabilities within this factor of the observed one count as "as probable"


@dataclass(frozen=True)
class PoissonTestResult:
    """The exact test of ``count`` events over ``exposure`` against ``expected`` = planned rate x exposure.

    ``estimate`` and ``low``/``high`` are the rate (events per unit of exposure) and its exact
    two-sided interval at ``confidence``; ``ratio`` and ``ratio_low``/``ratio_high`` the same as a
    multiple of the planned rate (observed / expected; meaningful when runs planned different rates).
    """

    count: int
    exposure: float
    expected: float
    estimate: float
    low: float
    high: float
    ratio: float
    ratio_low: float
    ratio_high: float
    p_value: float
    confidence: float


def poisson_pmf(k: ArrayLike, mean: float) -> NDArray[np.float64]:
    """P(X = k) for X ~ Poisson(``mean``), elementwise (0 for negative k)."""
    k = np.asarray(k, dtype=np.float64)
    sp = special()
    with np.errstate(invalid="ignore"):
        log_p = sp.xlogy(k, mean) - mean - sp.gammaln(k + 1.0)
    return np.where(k >= 0, np.exp(log_p), 0.0)


def _cdf(k: float, mean: float) -> float:
    """P(X <= k); 0 for k < 0."""
    return 0.0 if k < 0 else float(special().pdtr(k, mean))


def poisson_sf(k: float, mean: float) -> float:
    """P(X > k) for X ~ Poisson(``mean``) (1 for k < 0)."""
    return 1.0 if k < 0 else float(special().pdtrc(k, mean))


def poisson_two_sided_p(count: int, expected: float) -> float:
    """The exact two-sided p-value of ``count`` under Poisson(``expected``), as R's ``poisson.test``:
    the probability of every count whose probability is at most the observed one's (x 1 + 1e-7)."""
    x, m = int(count), float(expected)
    if x < 0 or not (math.isfinite(m) and m >= 0):
        raise ValueError(f"need count >= 0 and a finite expected count >= 0 (got {count!r}, {expected!r})")
    if m == 0:
        return 1.0 if x == 0 else 0.0
    if x == m:
        return 1.0
    d = float(poisson_pmf(x, m))
    if x < m:
        n = math.ceil(2 * m - x)
        while float(poisson_pmf(n, m)) > d:
            n *= 2
        y = int(np.count_nonzero(poisson_pmf(np.arange(math.ceil(m), n + 1), m) <= d * REL_ERR))
        p = _cdf(x, m) + poisson_sf(n - y, m)
    else:
        y = int(np.count_nonzero(poisson_pmf(np.arange(0, math.floor(m) + 1), m) <= d * REL_ERR))
        p = _cdf(y - 1, m) + poisson_sf(x - 1, m)
    return min(1.0, p)


def garwood_interval(count: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact (Garwood 1936) two-sided interval for a Poisson mean given one ``count``: gamma
    quantiles ``qgamma(a/2, x)`` and ``qgamma(1 - a/2, x + 1)``; the low end is 0 at count 0."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    alpha = 1.0 - confidence
    sp = special()
    low = 0.0 if count == 0 else float(sp.gammaincinv(count, alpha / 2))
    return low, float(sp.gammaincinv(count + 1, 1.0 - alpha / 2))


def _counts(counts: ArrayLike) -> NDArray[np.float64]:
    c = np.atleast_1d(np.asarray(counts, dtype=np.float64))
    if c.ndim != 1 or c.size == 0:
        raise ValueError("counts must be a non-empty 1-d array of event counts")
    if not np.all(np.isfinite(c)) or np.any(c < 0) or np.any(c != np.round(c)):
        raise ValueError("counts must be whole numbers >= 0")
    return c


def poisson_test(
    counts: ArrayLike, exposures: ArrayLike, rate: ArrayLike, confidence: float = 0.95
) -> PoissonTestResult:
    """Exact two-sided test of the total of ``counts`` (one per run) against the planned ``rate``
    (events per unit of exposure: one number, or one per run) times ``exposures`` (one per run, or
    one number for every run), and the Garwood interval for the rate.

    Assumes the runs' counts are independent Poisson counts with means rate_i x exposure_i (runs
    that share random draws, such as arms under common random numbers, are not independent). With
    one run and one rate this is R's ``poisson.test(x, T, r, conf.level = confidence)``.
    """
    c = _counts(counts)
    e = np.broadcast_to(np.asarray(exposures, dtype=np.float64), c.shape)
    r = np.broadcast_to(np.asarray(rate, dtype=np.float64), c.shape)
    if not np.all(np.isfinite(e)) or np.any(e < 0):
        raise ValueError("exposures must be finite and >= 0")
    if not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise ValueError("the planned rate must be finite and > 0")
    exposure, expected, x = float(e.sum()), float(np.sum(r * e)), int(c.sum())
    if exposure <= 0:
        raise ValueError("the total exposure must be > 0")
    low, high = garwood_interval(x, confidence)
    return PoissonTestResult(
        count=x,
        exposure=exposure,
        expected=expected,
        estimate=x / exposure,
        low=low / exposure,
        high=high / exposure,
        ratio=x / expected,
        ratio_low=low / expected,
        ratio_high=high / expected,
        p_value=poisson_two_sided_p(x, expected),
        confidence=confidence,
    )


def _region_top(expected: float) -> int:
    """The largest count :func:`rejection_region` looks at: far past 10x ``expected`` in Poisson tails."""
    return int(math.ceil(10 * expected + 20 * math.sqrt(10 * expected + 1) + 20))


def rejection_region(expected: float, level: float) -> NDArray[np.int64]:
    """The counts the exact two-sided test rejects at ``level`` under Poisson(``expected``), over
    the counts whose probability under the null or up to 10x it is not negligible (0 .. a bound)."""
    top = _region_top(expected)
    return np.array([k for k in range(top + 1) if poisson_two_sided_p(k, expected) <= level], dtype=np.int64)


def poisson_test_power(expected: float, true_expected: float, level: float) -> float:
    """Exact power of the two-sided test at ``level`` when the planned mean is ``expected`` and the
    true mean ``true_expected`` (at most 10x ``expected``): the true Poisson probability of the
    rejection region (the region's counts summed; the tail above its bound added)."""
    if not 0 < level < 1 or not expected > 0 or not 0 <= true_expected <= 10 * expected:
        raise ValueError("need 0 < level < 1, expected > 0 and 0 <= true_expected <= 10 x expected")
    region = rejection_region(expected, level)
    top = _region_top(expected)
    inside = float(np.sum(poisson_pmf(region[region <= top], true_expected))) if region.size else 0.0
    tail = poisson_sf(top, true_expected) if poisson_two_sided_p(top + 1, expected) <= level else 0.0
    return min(1.0, inside + tail)
