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


def trend_ends(d: ArrayLike, x: ArrayLike, confidence: float = 0.90, scale: str = "difference") -> TrendEnds | None:
    """Fit ``d`` on ``x`` and return the two ends; None when there is no trend to fit (fewer than
    3 pairs, a constant ``x``, or non-finite values). A perfect fit gives zero-width intervals."""
    dv = np.asarray(d, dtype=np.float64)
    xv = np.asarray(x, dtype=np.float64)
    confidence = check_confidence(confidence)
    check_scale(scale)
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
    q = float(special().stdtrit(df, 1.0 - tail_alpha(confidence)))

    def end(x0: float) -> FittedEnd:
        fit = intercept + slope * (x0 - xbar)
        half = q * s * math.sqrt(1.0 / n + (x0 - xbar) ** 2 / sxx)
        return FittedEnd(
            float(x0), to_reported(fit, scale), to_reported(fit - half, scale), to_reported(fit + half, scale)
        )

    return TrendEnds(end(float(np.min(xv))), end(float(np.max(xv))), slope, n, df, confidence)


__all__ = ["FittedEnd", "TrendEnds", "trend_ends"]
