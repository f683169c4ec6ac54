"""The t tests dual to :func:`estimators.trend.trend_ends`: is the fitted mean contrast at an end zero?

The fit is the one ``trend_ends`` makes (``d_i = a + b (x_i - mean(x))`` by ordinary least squares,
normal errors with constant variance); the statistic at ``x0`` is ``fit(x0) / se(x0)`` with
``se(x0) = s sqrt(1/n + (x0 - mean(x))^2 / Sxx)`` on ``df = n - 2``, so the p-value is below
``1 - confidence`` exactly when ``trend_ends``' interval at ``confidence`` excludes the null.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._common import special, two_sided


@dataclass(frozen=True)
class TrendEndTests:
    """Two-sided p-values (null: the fitted mean contrast is 0 on the analysis scale, ratio 1) at the
    lowest and highest covariate value, and the signs of the fitted means there (+1, -1 or 0)."""

    low_pvalue: float
    high_pvalue: float
    low_sign: int
    high_sign: int
    df: int


def trend_end_pvalues(d: ArrayLike, x: ArrayLike) -> TrendEndTests | None:
    """The two ends' t tests of the straight-line fit of ``d`` (analysis scale) on ``x``.

    None where ``trend_ends`` returns None (fewer than 3 pairs, a constant ``x``, non-finite values) and
    where the line passes through every point (no residual spread: no sampling test)."""
    dv = np.asarray(d, dtype=np.float64)
    xv = np.asarray(x, dtype=np.float64)
    if dv.shape != xv.shape or dv.ndim != 1 or dv.size < 3:
        return None
    if not (np.all(np.isfinite(dv)) and np.all(np.isfinite(xv))):
        return None
    xbar = float(np.mean(xv))
    sxx = float(np.sum((xv - xbar) ** 2))
    if sxx <= 0 or not math.isfinite(sxx):
        return None
    n = int(dv.size)
    slope = float(np.sum((xv - xbar) * (dv - np.mean(dv))) / sxx)
    intercept = float(np.mean(dv))
    resid = dv - (intercept + slope * (xv - xbar))
    df = n - 2
    s = math.sqrt(float(np.sum(resid**2)) / df)
    if s == 0.0:
        return None

    def test(x0: float) -> tuple[float, int]:
        fit = intercept + slope * (x0 - xbar)
        t = fit / (s * math.sqrt(1.0 / n + (x0 - xbar) ** 2 / sxx))
        stdtr = special().stdtr
        return two_sided(float(stdtr(df, -t)), float(stdtr(df, t))), int(np.sign(fit))

    (p_low, s_low), (p_high, s_high) = test(float(np.min(xv))), test(float(np.max(xv)))
    return TrendEndTests(p_low, p_high, s_low, s_high, df)


def flip_pvalue(tests: TrendEndTests | None) -> float:
    """The p-value of the claim that the order changes between the ends (intersection-union, Berger 1982):
    the larger end p-value when the fitted ends lie on opposite sides of the null, else 1 (no flip to
    claim). Under a contrast that is null at both ends, ``P(flip_pvalue <= u) <= u`` for every u, since
    the claim needs each end's own level-u test to reject. 1 without a test."""
    if tests is None or tests.low_sign * tests.high_sign != -1:
        return 1.0
    return max(tests.low_pvalue, tests.high_pvalue)


__all__ = ["TrendEndTests", "flip_pvalue", "trend_end_pvalues"]
