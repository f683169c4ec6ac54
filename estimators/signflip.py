"""Exact sign-flip randomisation interval for the mean contrast, by test inversion.

Construction (derived here and checked against brute-force inversion in the tests).
Under H0 the contrasts are symmetric about ``mu``; the statistic is the sum
``T(s) = sum_i s_i (d_i - mu)`` over the ``2^n`` sign patterns ``s``, and the observed value is
the all-plus pattern. Write a pattern by the set ``S`` of flipped blocks (``s_i = -1``). Then
``T(s) = T_obs - 2 sum_{i in S} (d_i - mu)``, so ``T(s) >= T_obs`` iff ``sum_{i in S}(d_i - mu)
<= 0`` iff (for ``S`` non-empty) ``mean_S(d) <= mu``. The empty set always counts. Hence

    p_greater(mu) = P(T >= T_obs) = (1 + #{non-empty S : mean_S(d) <= mu}) / 2^n
    p_less(mu)    = P(T <= T_obs) = (1 + #{non-empty S : mean_S(d) >= mu}) / 2^n

-- Hartigan's "typical values" are the ``2^n - 1`` subset means. With ``alpha`` per tail and
``k = floor(alpha 2^n)``, ``mu`` is rejected by the lower-tail test iff fewer than ``k``
subset means lie at or below it, so the interval is

    [ k-th smallest subset mean , k-th largest subset mean ]   (closed)

and it covers with probability exactly ``1 - 2k / 2^n`` for continuous contrasts symmetric
about their mean (ties only make it conservative); that is ``attained_confidence``. If
``k = 0`` (n too small for the level) the interval is unbounded and a warning says so.

Exact enumeration is used for n <= 20: the 2^n subset sums are built by doubling (20 array
additions, no Python loop over patterns) and the two order statistics are found by
``np.partition``. Beyond n = 20 a seeded Monte Carlo over ``resamples`` random patterns is used
(the observed pattern counted once, so the randomisation test stays valid; result flagged
``monte_carlo``, with a warning); its attained confidence is ``1 - 2 floor(alpha N) / N`` with
``N = resamples + 1``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from . import _reference_cache as cache
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

EXACT_MAX_N = SIGNFLIP_EXACT_MAX_N
_CHUNK_ELEMENTS = 4_000_000


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


def _chunk_sums(
    state: Mapping[str, Any],
    d: NDArray[np.float64],
    first: int,
    out: NDArray[np.float64],
    sizes: NDArray[np.float64],
) -> None:
    """Subset sums and sizes of patterns ``first .. first + len(out) - 1`` into ``out``/``sizes``.

    Pattern ``j`` is words ``j n .. j n + n - 1`` of the PCG64 stream of ``state``: the stream is
    advanced past the earlier patterns, so chunks can be drawn independently (and in parallel)
    with the draws unchanged.
    """
    n = d.size
    bg = np.random.PCG64()
    bg.state = state  # type: ignore[assignment]  # numpy's stub wants its TypedDict
    bg.advance(first * n)
    # ``rng.random() < 0.5`` exactly: a double is ``(raw >> 11) * 2**-53``, below 0.5 iff ``raw < 2**63``;
    # the same draws without making the doubles (about 2x faster at n = 5000)
    flipped = (bg.random_raw((out.size, n)) < np.uint64(1 << 63)).astype(np.float64)  # BLAS; bool @ float is slow
    out[:] = flipped @ d
    sizes[:] = flipped @ np.ones(n, dtype=np.float64)  # integer counts: exact in float64


def _sampled_means(
    d: NDArray[np.float64], resamples: int, seed: int | None, workers: int | None = None
) -> tuple[NDArray[np.float64], int]:
    """Means of ``resamples`` random subsets (each block flipped w.p. 1/2) and the count of
    empty subsets drawn (those equal the observed pattern and count in both tails).

    Pattern ``j`` is words ``j n .. j n + n - 1`` of ``default_rng(seed)``'s stream. Chunks of
    fixed size (so the BLAS products are the same whatever the threads) are drawn and reduced by
    ``workers`` threads (numpy releases the GIL there), each holding one chunk in memory, with
    BLAS itself on one thread: OpenBLAS's own threads would take the cores the workers need, and
    its products are *not* the same bits whatever its thread count (a few of 949 means differed in
    the last bit between one and two OpenBLAS threads), so pinning it makes the draws' sums the
    same on every machine. Against the first implementation they are equal bit for bit when that
    one also runs on one BLAS thread (tested).
    """
    state = np.random.default_rng(seed).bit_generator.state
    n = d.size
    out = np.empty(resamples, dtype=np.float64)
    sizes = np.empty(resamples, dtype=np.float64)
    step = max(1, _CHUNK_ELEMENTS // n)  # rows per chunk
    if workers is None:
        workers = min(4, len(os.sched_getaffinity(0))) if resamples * n >= 2 * _CHUNK_ELEMENTS else 1

    def chunk(first: int) -> None:
        last = min(first + step, resamples)
        _chunk_sums(state, d, first, out[first:last], sizes[first:last])

    with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(chunk, range(0, resamples, step)))
    empty = sizes == 0
    return out[~empty] / sizes[~empty], int(np.count_nonzero(empty))


class _Reference:
    """The reference set of subset means (exact or sampled) for one contrast vector."""

    def __init__(self, d: NDArray[np.float64], resamples: int, seed: int | None) -> None:
        self.n = d.size
        self.exact = self.n <= EXACT_MAX_N
        if self.exact:
            self.means = cache.frozen(subset_means(d))
            self.total = 1 << self.n
            self.extra = 0
        else:
            means, self.extra = _sampled_means(d, resamples, seed)
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


def signflip_one_sided(
    d: NDArray[np.float64], mu: float, resamples: int = 9999, seed: int | None = 0
) -> tuple[float, float]:
    """``(p_greater, p_less)`` of the sign-flip test at null centre ``mu`` (analysis scale)."""
    return reference(d, resamples, seed).p_values(mu)


def signflip_interval(
    d: ArrayLike,
    confidence: float = 0.95,
    scale: str = "difference",
    resamples: int = 9999,
    seed: int | None = 0,
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
