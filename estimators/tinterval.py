"""Student t interval on the block contrasts (the paired t interval)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._common import (
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


def t_moments(d: NDArray[np.float64]) -> tuple[float, float, int]:
    n = d.size
    return float(np.mean(d)), float(np.std(d, ddof=1) / math.sqrt(n)), n - 1


def t_one_sided(d: NDArray[np.float64], mu: float) -> tuple[float, float]:
    """One-sided p-values at the null centre ``mu`` (analysis scale).

    Returns ``(p_greater, p_less)``: ``p_greater`` tests H0: theta <= mu against theta > mu,
    ``p_less`` tests H0: theta >= mu against theta < mu. Assumes non-constant ``d``.
    """
    m, se, df = t_moments(d)
    t = (m - mu) / se
    return float(special().stdtr(df, -t)), float(special().stdtr(df, t))


def t_interval(d: ArrayLike, confidence: float = 0.95, scale: str = "difference") -> IntervalResult:
    """Student t interval ``mean +- t_{n-1, (1+c)/2} * sd / sqrt(n)`` for the mean contrast.

    Assumes block contrasts independent with a roughly normal mean (exact for normal
    contrasts). ``d`` is on the analysis scale (log ratios for ``scale="ratio"``; the result
    is then the geometric-mean ratio and its exponentiated interval). The p-value is the
    two-sided t-test of mean 0 (ratio 1). Constant contrasts give the marked degenerate
    interval instead of t = inf.
    """
    d = check_contrasts(d)
    confidence = check_confidence(confidence)
    check_scale(scale, d)
    n = int(d.size)
    if is_constant(d):
        return degenerate_result(d, confidence, "t", scale, df=float(n - 1))
    m, se, df = t_moments(d)
    q = float(special().stdtrit(df, 1.0 - tail_alpha(confidence)))
    p_greater, p_less = t_one_sided(d, 0.0)
    return build_result(
        contrasts=d,
        estimate=m,
        lower=m - q * se,
        upper=m + q * se,
        confidence=confidence,
        method="t",
        n=n,
        scale=scale,
        df=float(df),
        pvalue=two_sided(p_greater, p_less),
        exact=False,
    )
