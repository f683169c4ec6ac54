"""The t tests dual to :func:`estimators.trend.trend_ends`: is the fitted mean contrast at an end zero?

The fit is the one ``trend_ends`` makes (``d_i = a + b (x_i - mean(x))`` by ordinary least squares,
normal errors with constant variance); the statistic at ``x0`` is ``fit(x0) / se(x0)`` with
``se(x0) = s sqrt(1/n + (x0 - mean(x))^2 / Sxx)`` on ``df = n - 2``, so the p-value is below
``1 - confidence`` exactly when ``trend_ends``' interval at ``confidence`` excludes the null.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._common import special, two_sided
from .trend import fit_line


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
    line = fit_line(d, x)
    if line is None or line.s == 0.0:
        return None
    stdtr = special().stdtr

    def test(x0: float) -> tuple[float, int]:
        fit = line.at(x0)
        t = fit / line.se(x0)
        return two_sided(float(stdtr(line.df, -t)), float(stdtr(line.df, t))), int(np.sign(fit))

    (p_low, s_low), (p_high, s_high) = test(line.x_min), test(line.x_max)
    return TrendEndTests(p_low, p_high, s_low, s_high, line.df)


def flip_pvalue(tests: TrendEndTests | None) -> float:
    """The p-value of the claim that the order changes between the ends (intersection-union, Berger 1982):
    the larger end p-value when the fitted ends lie on opposite sides of the null, else 1 (no flip to
    claim). Under a contrast that is null at both ends, ``P(flip_pvalue <= u) <= u`` for every u, since
    the claim needs each end's own level-u test to reject. 1 without a test."""
    if tests is None or tests.low_sign * tests.high_sign != -1:
        return 1.0
    return max(tests.low_pvalue, tests.high_pvalue)


__all__ = ["TrendEndTests", "flip_pvalue", "trend_end_pvalues"]
