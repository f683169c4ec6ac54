"""The paired contrast's linear trend over a covariate, fitted at the covariate's two ends.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._common import check_confidence, check_scale, special, tail_alpha, to_reported


@dataclass(frozen=True)
class FittedEnd:
    """The fitted mean contrast at ``at`` (reported scale) and its two-sided interval."""

    at: float
    estimate: float
    lower: float
    upper: float


@dataclass(frozen=True)
class TrendEnds:
    """The fitted contrast at the lowest and highest covariate value; ``df = n - 2``."""

    low: FittedEnd
    high: FittedEnd
    slope: float  # analysis scale per unit of x
    n: int
    df: int
    confidence: float


@dataclass(frozen=True)
class LineFit:
    """``d_i = intercept + slope (x_i - x_mean)`` by ordinary least squares (analysis scale); ``s`` the
    residual SD on ``df = n - 2``; ``sxx`` the sum of squares of ``x`` about its mean."""

    intercept: float
    slope: float
    x_mean: float
    sxx: float
    s: float
    n: int
    df: int
    x_min: float
    x_max: float

    def at(self, x0: float) -> float:
        """The fitted mean contrast at ``x0``."""
        return self.intercept + self.slope * (x0 - self.x_mean)

    def se(self, x0: float) -> float:
        """The standard error of the fitted mean at ``x0``: ``s sqrt(1/n + (x0 - x_mean)^2 / Sxx)``."""
        return self.s * math.sqrt(1.0 / self.n + (x0 - self.x_mean) ** 2 / self.sxx)


def fit_line(d: ArrayLike, x: ArrayLike) -> LineFit | None:
    """The straight-line fit of ``d`` on ``x``; None when there is none (fewer than 3 pairs, a constant
    ``x``, non-finite values, shapes that differ)."""
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
    s = math.sqrt(float(np.sum(resid**2)) / (n - 2))
    return LineFit(intercept, slope, xbar, sxx, s, n, n - 2, float(np.min(xv)), float(np.max(xv)))


def trend_ends(d: ArrayLike, x: ArrayLike, confidence: float = 0.90, scale: str = "difference") -> TrendEnds | None:
    """Fit ``d`` on ``x`` and return the two ends; None when there is no trend to fit (fewer than
    3 pairs, a constant ``x``, or non-finite values). A perfect fit gives zero-width intervals."""
    confidence = check_confidence(confidence)
    check_scale(scale)
    line = fit_line(d, x)
    if line is None:
        return None
    q = float(special().stdtrit(line.df, 1.0 - tail_alpha(confidence)))

    def end(x0: float) -> FittedEnd:
        fit, half = line.at(x0), q * line.se(x0)
        return FittedEnd(
            float(x0), to_reported(fit, scale), to_reported(fit - half, scale), to_reported(fit + half, scale)
        )

    return TrendEnds(end(line.x_min), end(line.x_max), line.slope, line.n, line.df, confidence)


__all__ = ["FittedEnd", "LineFit", "TrendEnds", "fit_line", "trend_ends"]
