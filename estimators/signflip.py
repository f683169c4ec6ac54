"""Exact sign-flip randomisation interval for the mean contrast, by test inversion.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _reference_cache as cache
from . import mc_stop
from ._common import (
    SIGNFLIP_EXACT_MAX_N,
    IntervalResult,
    build_result,
    check_confidence,
    check_contrasts,
    check_resamples,
    check_scale,
    degenerate_result,
    floor_count,
    is_constant,
    tail_alpha,
    two_sided,
)
from ._signs import SignSums, sampled_means

EXACT_MAX_N = SIGNFLIP_EXACT_MAX_N


def subset_means(d: NDArray[np.float64]) -> NDArray[np.float64]:
    """All ``2^n - 1`` non-empty subset means of ``d`` (exact enumeration; n <= 20 or so)."""
    n = d.size
    total = 1 << n
    sums = np.empty(total, dtype=np.float64)
    sizes = np.empty(total, dtype=np.float64)
    sums[0] = 0.0
    sizes[0] = 0.0
    for i in range(n):  # doubling: subsets not containing i, then the same plus d_i
        h = 1 << i
        np.add(sums[:h], d[i], out=sums[h : 2 * h])
        np.add(sizes[:h], 1.0, out=sizes[h : 2 * h])
    return np.divide(sums[1:], sizes[1:])


class _Reference:
    """The reference set of subset means (exact or sampled) for one contrast vector."""

    def __init__(
        self,
        d: NDArray[np.float64],
        resamples: int,
        seed: int | None,
        drawn: tuple[NDArray[np.float64], int] | None = None,
    ) -> None:
        self.n = d.size
        self.exact = self.n <= EXACT_MAX_N
        if self.exact:
            self.means = cache.frozen(subset_means(d))
            self.total = 1 << self.n
            self.extra = 0
        else:
            means, self.extra = drawn if drawn is not None else sampled_means(d, resamples, seed)
            self.means = cache.frozen(means)
            self.total = resamples + 1

    def p_values(self, mu: float) -> tuple[float, float]:
        """``(p_greater, p_less)`` at ``mu``: exact counts of subset means on each side."""
        le = int(np.count_nonzero(self.means <= mu))
        ge = int(np.count_nonzero(self.means >= mu))
        base = 1 + self.extra
        return (base + le) / self.total, (base + ge) / self.total

    def bounds(self, alpha: float) -> tuple[float, float, int]:
        """Interval ends (k-th smallest / k-th largest subset mean) and ``k``."""
        k = max(0, floor_count(alpha * self.total) - self.extra)
        m = self.means.size
        if k == 0:
            return -np.inf, np.inf, 0
        k = min(k, m)
        part = np.partition(self.means, [k - 1, m - k])
        return float(part[k - 1]), float(part[m - k]), k


def reference(d: NDArray[np.float64], resamples: int, seed: int | None) -> _Reference:
    """The reference set for ``d``, built once per (contrasts, resamples, seed) and shared by the
    interval and the rule p-values (``_reference_cache``; exact enumeration ignores the seed)."""
    exact = d.size <= EXACT_MAX_N
    k = cache.key("signflip-exact", d, None, None) if exact else cache.key("signflip-mc", d, resamples, seed)
    return cache.cached(k, lambda: _Reference(d, resamples, seed), lambda r: r.means.nbytes)


def _keep(ref: _Reference, d: NDArray[np.float64], resamples: int, seed: int | None) -> None:
    """Cache ``ref`` as the reference of ``(d, resamples, seed)`` (what :func:`reference` would build)."""
    cache.cached(cache.key("signflip-mc", d, resamples, seed), lambda: ref, lambda r: r.means.nbytes)


def sequential_reference(
    d: NDArray[np.float64],
    tails: Sequence[tuple[float, bool]],
    resamples: int,
    seed: int | None,
    levels: Sequence[float],
    risk: float = mc_stop.RISK,
) -> mc_stop.Stop:
    """Draw the Monte Carlo reference of ``d`` only until the rule is settled (:mod:`estimators.mc_stop`).

    ``tails``: the rule's one-sided tests, ``(mu, greater)`` each on the analysis scale (``greater``:
    ``p_greater(mu)``, else ``p_less(mu)``); ``levels``: the p-value thresholds the verdict depends on.
    The reference of the first ``patterns`` patterns is left in the cache, so the interval and p-values
    asked with ``resamples = patterns`` (the same seed) are computed from exactly those draws.
    """
    marks = mc_stop.looks(resamples, levels)
    if d.size <= EXACT_MAX_N or not marks or seed is None:
        return mc_stop.Stop(resamples, resamples, 0.0, "full draw")
    counters = [mc_stop.Tail(mu, greater) for mu, greater in tails]
    eps = risk / (2 * len(marks) * len(counters))
    grid = mc_stop.p_grid(levels)
    signs = SignSums(d, seed)
    parts: list[NDArray[np.float64]] = []
    extra, drawn = 0, 0
    for m in marks:
        sums, sizes = signs.draw(drawn, m)
        empty = sizes == 0
        means = sums[~empty] / sizes[~empty]
        n_empty = int(np.count_nonzero(empty))
        for counter in counters:
            counter.add(means, n_empty)
        parts.append(means)
        extra, drawn = extra + n_empty, m
        settled = mc_stop.settle(counters, m, resamples, levels, eps, grid)
        if settled is not None:
            _keep(_Reference(d, m, seed, drawn=(np.concatenate(parts), extra)), d, m, seed)
            return mc_stop.Stop(m, resamples, risk, settled)
    sums, sizes = signs.draw(drawn, resamples)  # the rest: the full draw decides
    empty = sizes == 0
    parts.append(sums[~empty] / sizes[~empty])
    _keep(
        _Reference(d, resamples, seed, drawn=(np.concatenate(parts), extra + int(np.count_nonzero(empty)))),
        d,
        resamples,
        seed,
    )
    return mc_stop.Stop(resamples, resamples, 0.0, "full draw")


def signflip_one_sided(
    d: NDArray[np.float64], mu: float, resamples: int = 9999, seed: int | None = 0
) -> tuple[float, float]:
    """``(p_greater, p_less)`` of the sign-flip test at null centre ``mu`` (analysis scale)."""
    return reference(d, resamples, seed).p_values(mu)


def signflip_interval(
    d: ArrayLike, confidence: float = 0.95, scale: str = "difference", resamples: int = 9999, seed: int | None = 0
) -> IntervalResult:
    """Exact sign-flip (randomisation) interval for the mean contrast; see the module doc.

    Assumes contrasts independent and symmetric about their centre under the null (no
    normality). Estimate: the mean. p-value: two-sided randomisation test of 0 (ratio 1).
    ``resamples``/``seed`` are used only for the Monte Carlo beyond n = 20.
    """
    d = check_contrasts(d)
    confidence = check_confidence(confidence)
    check_scale(scale, d)
    n = int(d.size)
    if n > EXACT_MAX_N:
        resamples = check_resamples(resamples)
    if is_constant(d):
        return degenerate_result(d, confidence, "signflip", scale, exact=n <= EXACT_MAX_N)
    ref = reference(d, resamples, seed)
    alpha = tail_alpha(confidence)
    lower, upper, k = ref.bounds(alpha)
    warnings: list[str] = []
    if not ref.exact:
        warnings.append(
            f"n = {n} > {EXACT_MAX_N}: sign-flip reference distribution sampled by seeded Monte "
            f"Carlo ({resamples} patterns, seed {seed}), not enumerated"
        )
    if k == 0:
        warnings.append(
            f"n = {n} is too small for a {confidence:.4g} sign-flip interval (smallest attainable "
            f"one-sided p-value {1 / ref.total:.4g} > {alpha:.4g}); the interval is unbounded"
        )
    attained = 1.0 - 2.0 * floor_count(alpha * ref.total) / ref.total
    return build_result(
        contrasts=d,
        estimate=float(np.mean(d)),
        lower=lower,
        upper=upper,
        confidence=confidence,
        method="signflip",
        n=n,
        scale=scale,
        attained_confidence=attained,
        pvalue=two_sided(*ref.p_values(0.0)),
        exact=ref.exact,
        monte_carlo=not ref.exact,
        warnings=tuple(warnings),
        resamples=None if ref.exact else resamples,
        seed=None if ref.exact else seed,
    )
