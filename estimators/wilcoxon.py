"""Hodges–Lehmann estimate with the Wilcoxon signed-rank interval (exact where feasible).

Test at a null centre ``mu``: ``e = d - mu``; zero differences are dropped (Wilcoxon's
convention); ``|e|`` is ranked with midranks for ties; ``T = sum of ranks of positive e``. The
reference distribution is the exact permutation (sign-flip) distribution of the signed
(mid)ranks *given* the observed ranks, computed by dynamic programming on doubled midranks
(integers). Without ties or zeros this is the classical signed-rank distribution.

Interval. By Tukey's identity ``T(mu) = #{i <= j : (d_i + d_j) / 2 > mu}`` for ``mu`` not
equal to a Walsh average (ties among equal contrasts keep the identity, because tied
contrasts share a sign). Hence, with ``M = n(n+1)/2`` Walsh averages ``w_(1) <= ... <= w_(M)``:

* No ties in ``d`` (n <= 400): the null distribution does not depend on ``mu``; with ``k`` the
  largest integer such that ``P(T <= k - 1) <= alpha`` the interval is ``[w_(k), w_(M+1-k)]``
  (R's ``wilcox.test`` construction) and ``attained_confidence = 1 - 2 P(T <= k - 1)``.
  If ``k = 0`` the interval is unbounded (R silently uses ``k = 1`` and a lower level).
* Ties in ``d`` (n <= 50): the midrank pattern, hence the null distribution, changes with
  ``mu``. The test is inverted directly: every distinct Walsh average and every gap between
  two consecutive ones is tested, scanning inwards from each end until the first non-rejected
  candidate; the reported interval is the closure of the hull of the accepted set.
  ``attained_confidence`` is ``1 - size_lo - size_hi``, where each size is the largest
  attainable tail probability <= alpha of the null distribution at that end.
* Larger n (no ties: n > 400; ties: n > 50): normal approximation to ``T`` with continuity
  correction and the tie-corrected variance ``n(n+1)(2n+1)/24 - sum(t^3 - t)/48`` (exact=False).

Estimate: the Hodges–Lehmann median of the Walsh averages (found with ``np.partition``).
p-value: the two-sided test of 0 (ratio 1) with the same reference distribution.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ._common import (
    IntervalResult,
    build_result,
    check_confidence,
    check_contrasts,
    check_scale,
    degenerate_result,
    is_constant,
    tail_alpha,
    two_sided,
)

EXACT_MAX_N = 400
EXACT_TIES_MAX_N = 50
_TOL = 1.0 + 1e-12


@lru_cache(maxsize=1024)
def _distribution(weights: tuple[int, ...]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(cdf, sf)`` of ``sum_i w_i B_i``, ``B_i`` iid Bernoulli(1/2), on ``0..sum(w)``."""
    total = sum(weights)
    p = np.zeros(total + 1, dtype=np.float64)
    p[0] = 1.0
    top = 0
    for w in weights:
        shifted = p[: top + 1].copy()
        p[w : top + w + 1] += shifted
        top += w
        p[: top + 1] *= 0.5
    cdf = np.cumsum(p)
    sf = np.cumsum(p[::-1])[::-1]
    return cdf, sf


def _walsh(d: NDArray[np.float64]) -> NDArray[np.float64]:
    """All ``n(n+1)/2`` Walsh averages ``(d_i + d_j) / 2, i <= j`` (unordered)."""
    i, j = np.triu_indices(d.size)
    return (d[i] + d[j]) * 0.5


def _signed_ranks(d: NDArray[np.float64], mu: float) -> tuple[NDArray[np.int64], int]:
    """Doubled midranks of the non-zero ``|d - mu|`` and the doubled observed statistic.

    Values equal up to rounding (``16 eps`` of the magnitude) count as tied, and as zero when
    within that of 0, so that ``mu`` at a Walsh average computed in floating point still
    produces the exact ties and zeros it implies in exact arithmetic.
    """
    e = d - mu
    tol = 16.0 * np.finfo(np.float64).eps * max(float(np.max(np.abs(d))), abs(mu), 1e-300)
    e = e[np.abs(e) > tol]
    if e.size == 0:
        return np.zeros(0, dtype=np.int64), 0
    a = np.abs(e)
    order = np.argsort(a, kind="stable")
    sa = a[order]
    group = np.concatenate([[0], np.cumsum(np.diff(sa) > tol)])
    first = np.searchsorted(group, group, side="left")
    last = np.searchsorted(group, group, side="right")
    r2 = np.empty(e.size, dtype=np.int64)
    r2[order] = first + last + 1  # 2 x midrank of positions first+1 .. last
    return r2, int(r2[e > 0].sum())


def _test_at(d: NDArray[np.float64], mu: float) -> tuple[float, float, bool]:
    """``(p_greater, p_less, exact)`` of the signed-rank test at ``mu``."""
    r2, t2 = _signed_ranks(d, mu)
    n = r2.size
    if n == 0:
        return 1.0, 1.0, True
    tied = np.unique(r2).size < n
    if (not tied and n <= EXACT_MAX_N) or (tied and n <= EXACT_TIES_MAX_N):
        g = int(np.gcd.reduce(r2))
        cdf, sf = _distribution(tuple(sorted(int(x) for x in r2 // g)))
        t = t2 // g
        return float(sf[t]), float(cdf[t]), True
    r = r2 / 2.0
    mean = float(r.sum()) / 2.0
    sd = math.sqrt(float(np.sum(r * r)) / 4.0)
    t = t2 / 2.0
    p_greater = float(special.ndtr(-(t - 0.5 - mean) / sd))
    p_less = float(special.ndtr((t + 0.5 - mean) / sd))
    return p_greater, p_less, False


def wilcoxon_one_sided(d: NDArray[np.float64], mu: float) -> tuple[float, float]:
    """``(p_greater, p_less)`` of the signed-rank test at null centre ``mu`` (analysis scale)."""
    p_greater, p_less, _ = _test_at(d, mu)
    return p_greater, p_less


def _size(sf: NDArray[np.float64], alpha: float) -> float:
    ok = sf[sf <= alpha * _TOL]
    return float(ok.max()) if ok.size else 0.0


def _tail_size_at(d: NDArray[np.float64], mu: float, alpha: float) -> float:
    r2, _ = _signed_ranks(d, mu)
    if r2.size == 0:
        return 0.0
    g = int(np.gcd.reduce(r2))
    _, sf = _distribution(tuple(sorted(int(x) for x in r2 // g)))
    return _size(sf, alpha)


def _scan_ties(
    d: NDArray[np.float64], walsh: NDArray[np.float64], alpha: float
) -> tuple[float, float, float]:
    """Exact inversion with ties: ``(lower, upper, attained_confidence)``."""
    wu = np.unique(walsh)
    lim = alpha * _TOL

    def below(j: int) -> float:  # a point inside the gap just below wu[j]
        return float(wu[0] - 1.0 - abs(wu[0])) if j == 0 else 0.5 * (wu[j - 1] + wu[j])

    def above(j: int) -> float:  # a point inside the gap just above wu[j]
        last = len(wu) - 1
        return float(wu[last] + 1.0 + abs(wu[last])) if j == last else 0.5 * (wu[j] + wu[j + 1])

    lower, lo_mu = wu[-1], float(wu[-1])
    for j in range(len(wu)):
        mu = below(j)
        if _test_at(d, mu)[0] > lim:
            lower, lo_mu = (wu[j - 1] if j else -np.inf), mu
            break
        if _test_at(d, float(wu[j]))[0] > lim:
            lower, lo_mu = wu[j], float(wu[j])
            break
    upper, hi_mu = wu[0], float(wu[0])
    for j in range(len(wu) - 1, -1, -1):
        mu = above(j)
        if _test_at(d, mu)[1] > lim:
            upper, hi_mu = (wu[j + 1] if j < len(wu) - 1 else np.inf), mu
            break
        if _test_at(d, float(wu[j]))[1] > lim:
            upper, hi_mu = wu[j], float(wu[j])
            break
    attained = 1.0 - _tail_size_at(d, lo_mu, alpha) - _tail_size_at(d, hi_mu, alpha)
    return float(lower), float(upper), attained


def _order_stats(
    walsh: NDArray[np.float64], k: int
) -> tuple[float, float, float]:
    """``(w_(k), w_(M+1-k), median)`` with one partition; k = 0 gives infinite ends."""
    m = walsh.size
    mid = [(m - 1) // 2, m // 2]
    kth = sorted(set(mid + ([k - 1, m - k] if k > 0 else [])))
    part = np.partition(walsh, kth)
    median = 0.5 * (part[mid[0]] + part[mid[1]])
    if k == 0:
        return -np.inf, np.inf, float(median)
    return float(part[k - 1]), float(part[m - k]), float(median)


def hodges_lehmann(d: ArrayLike) -> float:
    """Hodges–Lehmann estimate: the median of the Walsh averages."""
    arr = check_contrasts(d, min_n=1)
    return _order_stats(_walsh(arr), 0)[2]


def wilcoxon_interval(
    d: ArrayLike, confidence: float = 0.95, scale: str = "difference"
) -> IntervalResult:
    """Hodges–Lehmann estimate with the signed-rank confidence interval (see module doc).

    Assumes independent contrasts symmetric about their centre (the pseudo-median). Exact
    for n <= 400 without ties and n <= 50 with ties; normal approximation beyond (flagged
    ``exact=False`` with a warning). Ratio scale: HL of the log ratios, exponentiated.
    """
    d = check_contrasts(d)
    confidence = check_confidence(confidence)
    check_scale(scale)
    n = int(d.size)
    if is_constant(d):
        return degenerate_result(d, confidence, "wilcoxon", scale, exact=True)
    alpha = tail_alpha(confidence)
    walsh = _walsh(d)
    m = walsh.size
    values, counts = np.unique(d, return_counts=True)
    tied = values.size < n
    warnings: list[str] = []
    exact = True
    if tied and n <= EXACT_TIES_MAX_N:
        lower, upper, attained = _scan_ties(d, walsh, alpha)
        estimate = _order_stats(walsh, 0)[2]
        warnings.append(
            "ties among the contrasts: exact permutation distribution of the signed midranks "
            f"used; attained confidence {attained:.4f} (not the nominal {confidence:.4g})"
        )
    else:
        if (not tied) and n <= EXACT_MAX_N:
            cdf, _ = _distribution(tuple(range(1, n + 1)))
            k = int(np.count_nonzero(cdf <= alpha * _TOL))
            attained = 1.0 - 2.0 * (float(cdf[k - 1]) if k > 0 else 0.0)
        else:
            exact = False
            var = n * (n + 1) * (2 * n + 1) / 24.0 - float(np.sum(counts**3 - counts)) / 48.0
            sd = math.sqrt(var)
            k = max(0, int(math.floor(m / 2.0 + 0.5 + sd * float(special.ndtri(alpha)))))
            attained = 1.0 - 2.0 * float(special.ndtr((k - 0.5 - m / 2.0) / sd))
            warnings.append(
                f"n = {n}: normal approximation to the signed-rank distribution"
                f"{' with tie correction' if tied else ''} (exact enumeration limit "
                f"{EXACT_TIES_MAX_N if tied else EXACT_MAX_N})"
            )
        lower, upper, estimate = _order_stats(walsh, k)
    if not np.isfinite(lower) or not np.isfinite(upper):
        warnings.append(
            f"n = {n} is too small for a {confidence:.4g} signed-rank interval; "
            "the interval is unbounded"
        )
    p_greater, p_less, _ = _test_at(d, 0.0)
    return build_result(
        estimate=estimate,
        lower=lower,
        upper=upper,
        confidence=confidence,
        method="wilcoxon",
        n=n,
        scale=scale,
        attained_confidence=attained,
        p_value=two_sided(p_greater, p_less),
        exact=exact,
        warnings=tuple(warnings),
    )
