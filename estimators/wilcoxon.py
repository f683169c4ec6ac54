"""Hodges–Lehmann estimate with the Wilcoxon signed-rank interval: one construction.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _reference_cache as cache
from ._common import (
    EXACT_TOL,
    WILCOXON_EXACT_MAX_N,
    IntervalResult,
    build_result,
    check_confidence,
    check_contrasts,
    check_scale,
    degenerate_result,
    is_constant,
    special,
    tail_alpha,
    two_sided,
)
from .walsh import WalshAverages
from .walsh import materialise as _walsh  # noqa: F401 - the direct path, used by tests

EXACT_MAX_N = WILCOXON_EXACT_MAX_N
_TOL = EXACT_TOL

TIES_WARNING = (
    "ties or zeros among the contrasts: Walsh averages equal to a tested value count on neither "
    "side, so the interval and p-values are conservative (coverage at least the attained level "
    "for contrasts symmetric about their centre)"
)


@lru_cache(maxsize=256)
def _distribution(n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(cdf, sf)`` of the untied signed-rank statistic ``V = sum_i i B_i`` on ``0..M``
    (``B_i`` iid Bernoulli(1/2)); ``sf[t] = P(V >= t)``."""
    total = n * (n + 1) // 2
    p = np.zeros(total + 1, dtype=np.float64)
    p[0] = 1.0
    top = 0
    for w in range(1, n + 1):
        shifted = p[: top + 1].copy()
        p[w : top + w + 1] += shifted
        top += w
        p[: top + 1] *= 0.5
    cdf = np.cumsum(p)
    sf = np.cumsum(p[::-1])[::-1]
    return cdf, sf


class _Reference:
    """The null distribution of ``V`` for ``n`` blocks: exact (n <= 400) or normal."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.m = n * (n + 1) // 2
        self.exact = n <= EXACT_MAX_N
        self.sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        if self.exact:
            self.cdf_table, self.sf_table = _distribution(n)

    def cdf(self, j: int) -> float:
        """``P(V <= j)``."""
        if j < 0:
            return 0.0
        if j >= self.m:
            return 1.0
        if self.exact:
            return float(self.cdf_table[j])
        return float(special().ndtr((j + 0.5 - self.m / 2.0) / self.sd))

    def sf(self, t: int) -> float:
        """``P(V >= t) = P(V <= M - t)`` (symmetry)."""
        return self.cdf(self.m - t)

    def k(self, alpha: float) -> int:
        """The largest ``k`` with ``P(V <= k - 1) <= alpha`` (0: unbounded interval)."""
        lim = alpha * _TOL
        if self.exact:
            return int(np.count_nonzero(self.cdf_table <= lim))
        k = max(0, int(math.floor(self.m / 2.0 - 0.5 + self.sd * float(special().ndtri(alpha)))) + 1)
        while k > 0 and self.cdf(k - 1) > lim:
            k -= 1
        while self.cdf(k) <= lim:
            k += 1
        return k


def _walsh_averages(d: NDArray[np.float64]) -> WalshAverages:
    """The Walsh averages of ``d``, built once per contrasts (``_reference_cache``)."""
    return cache.cached(cache.key("walsh", d, None, None), lambda: WalshAverages(d), _nbytes)


def _nbytes(w: WalshAverages) -> int:
    return sum(a.nbytes for a in (w.values, w.sorted) if a is not None)


def _p_values(walsh: WalshAverages, ref: _Reference, mu: float) -> tuple[float, float]:
    """``(p_greater, p_less)`` from the Walsh-average counts at ``mu``."""
    t_gt, t_lt = walsh.counts(mu)
    return ref.sf(t_gt), ref.sf(t_lt)


def wilcoxon_one_sided(d: NDArray[np.float64], mu: float) -> tuple[float, float]:
    """``(p_greater, p_less)`` of the signed-rank test at null centre ``mu`` (analysis scale)."""
    return _p_values(_walsh_averages(d), _Reference(int(d.size)), mu)


def hodges_lehmann(d: ArrayLike) -> float:
    """Hodges–Lehmann estimate: the median of the Walsh averages (a pseudo-median)."""
    arr = check_contrasts(d, min_n=1)
    return WalshAverages(arr).order_stats(0)[2]


def wilcoxon_interval(d: ArrayLike, confidence: float = 0.95, scale: str = "difference") -> IntervalResult:
    """Hodges–Lehmann estimate with the signed-rank confidence interval (see module doc).

    Assumes independent contrasts symmetric about their centre (the pseudo-median). Exact
    reference distribution for n <= 400, normal approximation beyond (flagged ``exact=False``
    with a warning); conservative with ties or zeros (warned). Ratio scale: HL of the log
    ratios, exponentiated.
    """
    d = check_contrasts(d)
    confidence = check_confidence(confidence)
    check_scale(scale, d)
    n = int(d.size)
    if is_constant(d):
        return degenerate_result(d, confidence, "wilcoxon", scale, exact=True)
    alpha = tail_alpha(confidence)
    walsh = _walsh_averages(d)
    ref = _Reference(n)
    k = ref.k(alpha)
    attained = 1.0 - 2.0 * ref.cdf(k - 1)
    warnings: list[str] = []
    if np.unique(d).size < n or np.any(d == 0.0):
        warnings.append(TIES_WARNING)
    if not ref.exact:
        warnings.append(
            f"n = {n}: normal approximation to the signed-rank distribution (exact enumeration limit {EXACT_MAX_N})"
        )
    lower, upper, estimate = walsh.order_stats(k)
    if k == 0:
        warnings.append(
            f"n = {n} is too small for a {confidence:.4g} signed-rank interval (smallest "
            f"attainable one-sided p-value {2.0**-n:.4g} > {alpha:.4g}); the interval is unbounded"
        )
    return build_result(
        contrasts=d,
        estimate=estimate,
        lower=lower,
        upper=upper,
        confidence=confidence,
        method="wilcoxon",
        n=n,
        scale=scale,
        attained_confidence=attained,
        pvalue=two_sided(*_p_values(walsh, ref, 0.0)),
        exact=ref.exact,
        warnings=tuple(warnings),
    )
