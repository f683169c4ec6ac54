"""Percentile and BCa bootstrap intervals for the mean contrast (seeded, vectorised).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _reference_cache as cache
from ._common import (
    IntervalResult,
    build_result,
    check_confidence,
    check_contrasts,
    check_resamples,
    check_scale,
    degenerate_result,
    is_constant,
    special,
    tail_alpha,
    two_sided,
)
from ._draws import ChunkSums, uniform_indices  # noqa: F401 - uniform_indices: the reference definition, used by tests
from .feasibility import BOOTSTRAP_WARN_N, MIN_BOOTSTRAP_N

BLOCK = 1024
_CHUNK_ELEMENTS = 65_536
SMALL_N = BOOTSTRAP_WARN_N

UNDERCOVER_WARNING = (
    f"n < {BOOTSTRAP_WARN_N}: bootstrap intervals under-cover at this size (they ignore the t quantile "
    "and the n/(n-1) variance factor; the coverage study measured one-sided misses of 6-12% per bound "
    f"instead of 5% below n = 30, and gates refuse to decide below n = {MIN_BOOTSTRAP_N}); "
    "prefer t, signflip or wilcoxon"
)
ALL_BUT_ONE_WARNING = (
    "all contrasts but one are equal: the bootstrap distribution is a scaled binomial and the "
    "interval's ends are a few lattice points"
)


def _block(
    d: NDArray[np.float64],
    seq: np.random.SeedSequence,
    b: int,
    sums: ChunkSums | None = None,
    out: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """The ``b`` bootstrap means of one block: chunks of ``_CHUNK_ELEMENTS // n`` resamples, each
    drawn by one :func:`estimators._draws.uniform_indices` call on the block's own PCG64 stream."""
    bg = np.random.PCG64(seq)
    n = d.size
    out = np.empty(b, dtype=np.float64) if out is None else out
    step = max(1, _CHUNK_ELEMENTS // n)
    sums = ChunkSums(d, min(step, b)) if sums is None else sums
    for s in range(0, b, step):
        c = min(step, b - s)
        sums(bg, c, out[s : s + c])
    out /= n
    return out


def bootstrap_means(
    d: NDArray[np.float64], resamples: int, seed: int | None, workers: int | None = None
) -> NDArray[np.float64]:
    """``resamples`` bootstrap means of ``d`` (deterministic given ``seed``; see module doc)."""
    n_blocks = -(-resamples // BLOCK)
    seqs = np.random.SeedSequence(seed).spawn(n_blocks)
    out = np.empty(resamples, dtype=np.float64)
    parts = [out[i * BLOCK : (i + 1) * BLOCK] for i in range(n_blocks)]
    rows = min(max(1, _CHUNK_ELEMENTS // d.size), BLOCK, resamples)
    if workers is None:
        workers = min(4, os.cpu_count() or 1) if resamples * d.size >= 2_000_000 else 1
    if workers <= 1 or n_blocks == 1:
        sums = ChunkSums(d, rows)
        for seq, part in zip(seqs, parts, strict=True):
            _block(d, seq, part.size, sums, part)
        return out
    local = threading.local()  # one ChunkSums (its buffers) per worker thread

    def run(job: tuple[np.random.SeedSequence, NDArray[np.float64]]) -> None:
        if not hasattr(local, "sums"):
            local.sums = ChunkSums(d, rows)
        _block(d, job[0], job[1].size, local.sums, job[1])

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(run, zip(seqs, parts, strict=True)))
    return out


def sorted_bootstrap_means(
    d: NDArray[np.float64], resamples: int, seed: int | None, workers: int | None = None
) -> NDArray[np.float64]:
    """The sorted bootstrap means, computed once per (contrasts, resamples, seed) and shared by
    the interval, its p-values and the BCa resolution bound (read-only; ``_reference_cache``)."""
    return cache.cached(
        cache.key("bootstrap", d, resamples, seed),
        lambda: cache.frozen(np.sort(bootstrap_means(d, resamples, seed, workers))),
        lambda a: a.nbytes,
    )


def _inverse_quantile(s: NDArray[np.float64], mu: float, side: str) -> float:
    """Inverse of numpy's linear quantile function of sorted ``s`` at ``mu``."""
    b = s.size
    j = int(np.searchsorted(s, mu, side=side))  # type: ignore[call-overload]
    if j == 0:
        return 0.0
    if j == b:
        return 1.0
    lo, hi = s[j - 1], s[j]
    frac = (mu - lo) / (hi - lo) if hi > lo else 0.0
    return float((j - 1 + frac) / (b - 1))


def _bca_params(d: NDArray[np.float64], boot: NDArray[np.float64]) -> tuple[float, float]:
    """``(z0, a)``: bias correction and jackknife acceleration for the mean."""
    theta = float(np.mean(d))
    b = boot.size
    # resample means equal to theta in exact arithmetic may differ from it by rounding (the
    # summation order differs); count those as ties so z0 is shift- and scale-equivariant
    tol = 4.0 * d.size * np.finfo(np.float64).eps * float(np.max(np.abs(d)))
    below = np.count_nonzero(boot < theta - tol)
    ties = np.count_nonzero(np.abs(boot - theta) <= tol)
    prop = (below + 0.5 * ties) / b
    z0 = float(special().ndtri(np.clip(prop, 0.5 / b, 1.0 - 0.5 / b)))
    n = d.size
    jack = (d.sum() - d) / (n - 1)
    u = jack.mean() - jack
    ss = float(np.sum(u * u))
    a = float(np.sum(u**3) / (6.0 * ss**1.5)) if ss > 0 else 0.0
    return z0, a


def _bca_level(alpha: float, z0: float, a: float) -> float:
    """BCa-adjusted quantile level for nominal level ``alpha`` (kept inside [0, 1])."""
    y = z0 + float(special().ndtri(alpha))
    den = 1.0 - a * y
    if den <= 0:
        return 1.0 if y > 0 else 0.0
    return float(special().ndtr(z0 + y / den))


def _bca_unlevel(q: float, z0: float, a: float) -> float:
    """Nominal level ``alpha`` whose BCa-adjusted level is ``q`` (inverse of ``_bca_level``)."""
    w = float(special().ndtri(q)) - z0
    if not np.isfinite(w):
        y = (1.0 / a) if (a != 0 and (a < 0) == (w < 0)) else w
    elif 1.0 + a * w <= 0:
        y = -np.inf if w < 0 else np.inf
    else:
        y = w / (1.0 + a * w)
    return float(special().ndtr(y - z0))


def _p_values(s: NDArray[np.float64], mu: float, bca: tuple[float, float] | None) -> tuple[float, float]:
    """``(p_greater, p_less)`` by inverting the (percentile or BCa) interval at ``mu``."""
    f_plus = _inverse_quantile(s, mu, "right")
    f_minus = _inverse_quantile(s, mu, "left")
    if bca is None:
        p_greater, p_less = f_plus, 1.0 - f_minus
    else:
        p_greater = _bca_unlevel(f_plus, *bca)
        p_less = 1.0 - _bca_unlevel(f_minus, *bca)
    floor = 1.0 / (s.size + 1)
    return max(p_greater, floor), max(p_less, floor)


def _acceleration_range(d: NDArray[np.float64], delta: float) -> tuple[float, float]:
    """Range of the jackknife acceleration ``a`` when every contrast moves by at most ``delta``.

    ``a = S3 / (6 S2^1.5)`` with ``S_k = sum c^k`` of the centred contrasts ``c``; each ``c_i``
    moves by at most ``2 delta`` (itself and the mean), so ``|S3' - S3| <= 3e S2 + 3e^2 sum|c| +
    n e^3`` and ``sqrt(S2')`` lies within ``sqrt(S2) +- e sqrt(n)`` (``e = 2 delta``). Clipped to
    the global range ``|a| <= (n - 2) / (6 sqrt(n (n - 1)))``.
    """
    n = d.size
    c = d - d.mean()
    amax = (n - 2) / (6.0 * np.sqrt(n * (n - 1)))
    e = 2.0 * delta
    s2, s3 = float(np.sum(c * c)), float(np.sum(c**3))
    err3 = 3 * e * s2 + 3 * e * e * float(np.sum(np.abs(c))) + n * e**3
    r_lo, r_hi = np.sqrt(s2) - e * np.sqrt(n), np.sqrt(s2) + e * np.sqrt(n)
    if r_lo <= 0:
        return -amax, amax
    lo_num, hi_num = s3 - err3, s3 + err3
    lo = lo_num / (6 * (r_hi if lo_num >= 0 else r_lo) ** 3)
    hi = hi_num / (6 * (r_lo if hi_num >= 0 else r_hi) ** 3)
    return float(max(lo, -amax)), float(min(hi, amax))


def bca_end_bound(
    d: NDArray[np.float64], b_max: float, confidence: float, resamples: int = 9999, seed: int | None = 0
) -> float:
    """How far a BCa interval end can move when every contrast moves by at most ``b_max``.

    With the resample indices fixed (same seed) each bootstrap mean, so each order statistic,
    moves by at most ``b_max``; the quantile level moves with ``z0`` and ``a``. Their ranges are
    bounded (``z0``: resample means within ``2 b_max`` of the estimate may change side;
    ``a``: :func:`_acceleration_range`), the BCa level is increasing in both, so the end moves
    by at most ``b_max + max |Q(L') - Q(L)|`` over the attainable levels ``L'``.
    """
    if not np.isfinite(b_max):
        return float("inf")
    if b_max <= 0:
        return 0.0
    boot = sorted_bootstrap_means(d, resamples, seed)
    z0, a = _bca_params(d, boot)
    b = boot.size
    tol = 4.0 * d.size * np.finfo(np.float64).eps * float(np.max(np.abs(d)) + b_max)
    w = 2.0 * b_max + 2.0 * tol
    theta = float(np.mean(d))
    clip = (0.5 / b, 1.0 - 0.5 / b)
    z_lo = float(special().ndtri(np.clip(np.count_nonzero(boot < theta - w) / b, *clip)))
    z_hi = float(special().ndtri(np.clip(np.count_nonzero(boot <= theta + w) / b, *clip)))
    a_lo, a_hi = _acceleration_range(d, b_max)
    alpha = tail_alpha(confidence)
    shift = 0.0
    for nominal in (alpha, 1.0 - alpha):
        levels = [_bca_level(nominal, z_lo, a_lo), _bca_level(nominal, z0, a), _bca_level(nominal, z_hi, a_hi)]
        q = np.quantile(boot, levels)
        shift = max(shift, float(q[1] - q[0]), float(q[2] - q[1]))
    return b_max + shift


def bootstrap_one_sided(
    d: NDArray[np.float64],
    mu: float,
    bca: bool,
    resamples: int = 9999,
    seed: int | None = 0,
    workers: int | None = None,
) -> tuple[float, float]:
    """``(p_greater, p_less)`` at null centre ``mu`` from the percentile or BCa bootstrap."""
    boot = sorted_bootstrap_means(d, resamples, seed, workers)
    return _p_values(boot, mu, _bca_params(d, boot) if bca else None)


def _interval(
    d: ArrayLike, confidence: float, scale: str, resamples: int, seed: int | None, workers: int | None, bca: bool
) -> IntervalResult:
    method = "bca" if bca else "bootstrap"
    d = check_contrasts(d)
    confidence = check_confidence(confidence)
    check_scale(scale, d)
    resamples = check_resamples(resamples)
    n = int(d.size)
    warnings: list[str] = [UNDERCOVER_WARNING] if n < SMALL_N else []
    if is_constant(d):
        return degenerate_result(
            d,
            confidence,
            method,
            scale,
            extra_warnings=tuple(warnings),
            monte_carlo=True,
            resamples=resamples,
            seed=seed,
        )
    _, counts = np.unique(d, return_counts=True)
    all_but_one = int(counts.max()) == n - 1
    if all_but_one:
        warnings.append(ALL_BUT_ONE_WARNING)
    boot = sorted_bootstrap_means(d, resamples, seed, workers)
    alpha = tail_alpha(confidence)
    params = _bca_params(d, boot) if bca else None
    levels = [alpha, 1.0 - alpha]
    if params is not None:
        levels = [_bca_level(alpha, *params), _bca_level(1.0 - alpha, *params)]
    lower, upper = (float(x) for x in np.quantile(boot, levels))
    return build_result(
        contrasts=d,
        estimate=float(np.mean(d)),
        lower=lower,
        upper=upper,
        confidence=confidence,
        method=method,
        n=n,
        scale=scale,
        pvalue=two_sided(*_p_values(boot, 0.0, params)),
        exact=False,
        monte_carlo=True,
        warnings=tuple(warnings),
        resamples=resamples,
        seed=seed,
    )


def bootstrap_interval(
    d: ArrayLike,
    confidence: float = 0.95,
    scale: str = "difference",
    resamples: int = 9999,
    seed: int | None = 0,
    workers: int | None = None,
) -> IntervalResult:
    """Percentile bootstrap interval for the mean contrast (quantiles alpha, 1 - alpha of the
    bootstrap means). Assumes independent blocks; under-covers at small n (warned below 10)."""
    return _interval(d, confidence, scale, resamples, seed, workers, bca=False)


def bca_interval(
    d: ArrayLike,
    confidence: float = 0.95,
    scale: str = "difference",
    resamples: int = 9999,
    seed: int | None = 0,
    workers: int | None = None,
) -> IntervalResult:
    """Bias-corrected and accelerated (BCa) bootstrap interval for the mean contrast, with
    jackknife acceleration (see module doc). Under-covers at small n (warned below 10)."""
    return _interval(d, confidence, scale, resamples, seed, workers, bca=True)
