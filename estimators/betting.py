"""Betting confidence interval for the mean of a bounded contrast (Waudby-Smith & Ramdas, 2024).

Valid for *any* distribution inside a declared range ``bounds = (lo, hi)`` (analysis scale), at a
fixed n and at every look: it is a confidence sequence, so looks need no alpha spending.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._common import IntervalResult, build_result, check_confidence, check_contrasts, check_scale, tail_alpha, two_sided
from .vocabulary import SCALES

#: truncation of the bets: |lambda| <= TRUNCATION / m (K+) or / (1 - m) (K-)
TRUNCATION = 0.5
#: bisection steps on [0, 1]: 2^-56 is below a quarter ulp of 1 (ends to ~1e-17 of the range)
BISECTION_STEPS = 56
#: contrasts this far outside the bounds (relative to the bounds' magnitude) are rounding, clipped
ROUNDING_SLACK = 1e-12

CROSSED_WARNING = (
    "the betting test rejects every mean (lower > upper): the contrasts, in the plan's order, are not "
    "consistent with one mean inside the range (early and late units disagree beyond chance)"
)


class BettingPValues(NamedTuple):
    """Per-row anytime p-values of :func:`betting_pass_rates` (rows are data sets).

    ``p_greater`` / ``p_less``: shape ``(reps,)``, over the whole row (H0: theta <= mu / theta >= mu).
    ``looks``: the look sizes; ``p_greater_at`` / ``p_less_at``: shape ``(reps, len(looks))``, the
    anytime p-value using the first ``k`` units of the row for each look ``k``.
    """

    p_greater: NDArray[np.float64]
    p_less: NDArray[np.float64]
    looks: tuple[int, ...]
    p_greater_at: NDArray[np.float64]
    p_less_at: NDArray[np.float64]


def check_bounds(bounds: tuple[float, float]) -> tuple[float, float]:
    """``(lo, hi)`` finite with ``lo < hi`` (analysis scale)."""
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be two numbers (lo, hi), got {bounds!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"bounds must be finite, got ({lo!r}, {hi!r})")
    if not lo < hi:
        raise ValueError(f"bounds need lo < hi, got ({lo!r}, {hi!r})")
    return lo, hi


def check_horizon(horizon: int | None, n: int) -> int:
    """The planned number of units the bets are tuned for (default: ``n``)."""
    if horizon is None:
        return n
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise ValueError(f"horizon must be a positive integer (planned units), got {horizon!r}")
    return int(horizon)


def rescale(d: NDArray[np.float64], lo: float, hi: float) -> NDArray[np.float64]:
    """``(d - lo) / (hi - lo)`` in [0, 1]; a value outside the bounds (beyond rounding) is refused,
    naming the first one (``d`` may be 1-D or 2-D: rows are data sets)."""
    slack = ROUNDING_SLACK * max(abs(lo), abs(hi), hi - lo)
    outside = (d < lo - slack) | (d > hi + slack)
    if np.any(outside):
        idx = tuple(int(i) for i in np.argwhere(outside)[0])
        where = f"contrast {idx[0] + 1}" if len(idx) == 1 else f"row {idx[0]}, contrast {idx[1] + 1}"
        raise ValueError(
            f"{where} = {float(d[idx])!r} lies outside the declared bounds [{lo!r}, {hi!r}] "
            "(the betting interval is valid only for contrasts inside their range)"
        )
    return np.clip((d - lo) / (hi - lo), 0.0, 1.0)


def bets(x: NDArray[np.float64], alpha: float, horizon: int) -> NDArray[np.float64]:
    """Predictable plug-in bets ``lambda_i`` for rows of rescaled data ``x`` (shape ``(reps, n)``)."""
    i = np.arange(1, x.shape[1] + 1, dtype=np.float64)
    mu_hat = (0.5 + np.cumsum(x, axis=1)) / (i + 1.0)
    var_hat = (0.25 + np.cumsum((x - mu_hat) ** 2, axis=1)) / (i + 1.0)
    var_prev = np.concatenate([np.full((x.shape[0], 1), 0.25), var_hat[:, :-1]], axis=1)
    return np.sqrt(2.0 * math.log(1.0 / alpha) / (horizon * var_prev))


def log_capital(
    x: NDArray[np.float64], lam: NDArray[np.float64], m: NDArray[np.float64], above: bool
) -> NDArray[np.float64]:
    """``log K_t(m)`` for every row and t (shape ``(reps, n)``); ``m`` has one value per row in
    [0, 1]; ``above``: K+ (bets the mean exceeds m), else K-."""
    m = m[:, None]
    with np.errstate(divide="ignore"):
        cap = TRUNCATION / (m if above else 1.0 - m)
    step = np.minimum(lam, cap) * (x - m)
    return np.cumsum(np.log1p(step if above else -step), axis=1)


def _max_log_capital(
    x: NDArray[np.float64], lam: NDArray[np.float64], m: NDArray[np.float64], above: bool
) -> NDArray[np.float64]:
    """``max_{t<=n} log K_t(m)`` per row."""
    return np.max(log_capital(x, lam, m, above), axis=1)


def _p_from_log(max_log: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.minimum(1.0, np.exp(-np.maximum(max_log, 0.0)))


def _one_sided(
    x: NDArray[np.float64], lam: NDArray[np.float64], m: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(p_greater, p_less)`` per row at rescaled mean ``m`` (any real; see the module doc)."""
    reps = x.shape[0]
    ones, zeros = np.ones(reps), np.zeros(reps)
    if m < 0.0:
        return zeros, ones
    if m > 1.0:
        return ones, zeros
    mm = np.full(reps, m)
    p_greater = ones if m >= 1.0 else _p_from_log(_max_log_capital(x, lam, mm, True))
    p_less = ones if m <= 0.0 else _p_from_log(_max_log_capital(x, lam, mm, False))
    return p_greater, p_less


def _ends(
    x: NDArray[np.float64], lam: NDArray[np.float64], alpha: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Rescaled interval ends per row by bisection: ``lower`` the largest m rejected by K+ (0 when
    none is), ``upper`` the smallest m rejected by K- (1 when none is); both sides of a row's
    bisection bracket are kept on the rejected side, so the interval is never too narrow."""
    level = math.log(1.0 / alpha)
    reps = x.shape[0]
    ends = []
    for above in (True, False):
        # K+: rejected set is [0, a]; K-: rejected set is [b, 1]. `rej` is a rejected point, `ok` not.
        edge = np.zeros(reps) if above else np.ones(reps)
        far = np.ones(reps) if above else np.zeros(reps)
        rejected_at_edge = _max_log_capital(x, lam, edge, above) >= level
        rej, ok = edge.copy(), far.copy()
        for _ in range(BISECTION_STEPS):
            mid = 0.5 * (rej + ok)
            r = _max_log_capital(x, lam, mid, above) >= level
            rej = np.where(r, mid, rej)
            ok = np.where(r, ok, mid)
        ends.append(np.where(rejected_at_edge, rej, edge))
    return ends[0], ends[1]


def betting_one_sided(
    d: ArrayLike, mu: float, *, bounds: tuple[float, float], confidence: float, horizon: int | None = None
) -> tuple[float, float]:
    """``(p_greater, p_less)`` of the betting test at null centre ``mu`` (analysis scale).

    ``p_greater`` tests H0: theta <= mu, ``p_less`` H0: theta >= mu; both anytime-valid (the
    smallest p over every prefix of ``d``, in its order). The bets are tuned to
    ``alpha = (1 - confidence) / 2`` and ``horizon`` planned units (default ``len(d)``).
    """
    d = check_contrasts(d, min_n=1)
    alpha = tail_alpha(check_confidence(confidence))
    lo, hi = check_bounds(bounds)
    x = rescale(d, lo, hi)[None, :]
    lam = bets(x, alpha, check_horizon(horizon, d.size))
    pg, pl = _one_sided(x, lam, (float(mu) - lo) / (hi - lo))
    return float(pg[0]), float(pl[0])


def betting_interval(
    d: ArrayLike,
    confidence: float = 0.95,
    scale: str = "difference",
    *,
    bounds: tuple[float, float],
    horizon: int | None = None,
) -> IntervalResult:
    """Betting interval for the mean contrast, valid for any distribution inside ``bounds``.

    ``d``: contrasts on the analysis scale in the plan's order (log ratios for ``scale="ratio"``);
    ``bounds``: their range on the analysis scale (:func:`contrast_bounds`); ``horizon``: planned
    units the bets are tuned for (default n; the interval stays valid at any n). Estimate: the
    sample mean. ``pvalue``: two-sided test of 0 (ratio 1), ``min(1, 2 min(p_greater, p_less))``.
    Constant contrasts are not degenerate here: the interval still covers what n units could miss.
    """
    d = check_contrasts(d, min_n=1)
    confidence = check_confidence(confidence)
    check_scale(scale, d)
    lo, hi = check_bounds(bounds)
    alpha = tail_alpha(confidence)
    x = rescale(d, lo, hi)[None, :]
    planned = check_horizon(horizon, d.size)
    lam = bets(x, alpha, planned)
    low, high = _ends(x, lam, alpha)
    p_greater, p_less = _one_sided(x, lam, (0.0 - lo) / (hi - lo))
    lower, upper = lo + float(low[0]) * (hi - lo), lo + float(high[0]) * (hi - lo)
    return build_result(
        contrasts=d,
        estimate=float(np.mean(d)),
        lower=lower,
        upper=upper,
        confidence=confidence,
        method="betting",
        n=int(d.size),
        scale=scale,
        pvalue=two_sided(float(p_greater[0]), float(p_less[0])),
        warnings=(CROSSED_WARNING,) if lower > upper else (),
        bounds=(lo, hi),
        horizon=planned,
    )


def betting_pass_rates(
    x: ArrayLike,
    mu: float,
    *,
    bounds: tuple[float, float],
    confidence: float,
    horizon: int | None = None,
    looks: Sequence[int] | None = None,
) -> BettingPValues:
    """Vectorised :func:`betting_one_sided` for benchmarks: each row of ``x`` (shape ``(reps, n)``,
    analysis scale) is one data set; also each look's anytime p-value (first ``k`` units, bets tuned
    to ``horizon``, default n). ``looks`` default: ``(n,)``. Compare with alpha for pass rates."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] < 1 or not np.all(np.isfinite(arr)):
        raise ValueError(f"x must be a finite 2-D array (reps, n), got shape {arr.shape}")
    n = arr.shape[1]
    ks = (n,) if looks is None else tuple(int(k) for k in looks)
    if not ks or any(not 1 <= k <= n for k in ks):
        raise ValueError(f"looks must be unit counts in [1, {n}], got {looks!r}")
    alpha = tail_alpha(check_confidence(confidence))
    lo, hi = check_bounds(bounds)
    xs = rescale(arr, lo, hi)
    lam = bets(xs, alpha, check_horizon(horizon, n))
    m = (float(mu) - lo) / (hi - lo)
    reps = arr.shape[0]
    at = {True: np.ones((reps, n)), False: np.ones((reps, n))}  # running p over prefixes
    if m < 0.0 or m > 1.0:
        at[m < 0.0][:] = 0.0
    for above in (True, False):
        if (0.0 <= m < 1.0) if above else (0.0 < m <= 1.0):
            logk = log_capital(xs, lam, np.full(reps, m), above)
            at[above] = _p_from_log(np.maximum.accumulate(logk, axis=1))
    cols = [k - 1 for k in ks]
    return BettingPValues(at[True][:, -1].copy(), at[False][:, -1].copy(), ks, at[True][:, cols], at[False][:, cols])


def betting_ends(
    x: ArrayLike, *, bounds: tuple[float, float], confidence: float, horizon: int | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Vectorised interval ends ``(lower, upper)`` (analysis scale) of :func:`betting_interval`
    for each row of ``x`` (shape ``(reps, n)``, analysis scale), for benchmarks."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] < 1 or not np.all(np.isfinite(arr)):
        raise ValueError(f"x must be a finite 2-D array (reps, n), got shape {arr.shape}")
    alpha = tail_alpha(check_confidence(confidence))
    lo, hi = check_bounds(bounds)
    xs = rescale(arr, lo, hi)
    low, high = _ends(xs, bets(xs, alpha, check_horizon(horizon, arr.shape[1])), alpha)
    return lo + low * (hi - lo), lo + high * (hi - lo)


def contrast_bounds(
    metric_range: tuple[float, float], coefficients: Sequence[float], scale: str
) -> tuple[float, float]:
    """A contrast's range on the analysis scale, by interval arithmetic over its arms.

    ``metric_range``: the metric's declared ``(lo, hi)`` (reported units). Difference: the sum over
    arms of ``c_j * [lo, hi]``. Ratio: the same on ``[log lo, log hi]`` (needs ``lo > 0``; a ratio
    contrast's coefficients are +1 / -1 on the log values). Averages of such contrasts (replicates
    of a stratum) stay inside the same range.
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    lo, hi = check_bounds(metric_range)
    coefs = [float(c) for c in coefficients]
    if not coefs or not all(math.isfinite(c) for c in coefs) or all(c == 0.0 for c in coefs):
        raise ValueError(f"coefficients must be finite and not all zero, got {list(coefficients)!r}")
    if scale == "ratio":
        if lo <= 0.0:
            raise ValueError(f"a ratio contrast needs a positive metric range, got [{lo!r}, {hi!r}]")
        lo, hi = math.log(lo), math.log(hi)
    low = sum(c * (lo if c > 0 else hi) for c in coefs)
    high = sum(c * (hi if c > 0 else lo) for c in coefs)
    return float(low), float(high)


__all__ = [
    "BettingPValues",
    "betting_ends",
    "betting_interval",
    "betting_one_sided",
    "betting_pass_rates",
    "contrast_bounds",
]
