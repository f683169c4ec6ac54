"""Can a method decide anything with n blocks? Minimum block counts and data diagnostics.

Minimum blocks (refused at freeze time and at evaluation below them):

* ``t``: 2 (one degree of freedom).
* ``signflip`` and ``wilcoxon``: the smallest attainable one-sided p-value is ``2^-n`` (all
  signs agree), so a finite interval at per-tail level ``alpha`` needs ``2^-n <= alpha``:
  n >= 4 at 80%, 5 at 90% (alpha 0.05), 6 at 95%, 8 at 99%. Sign-flip beyond n = 20 is
  sampled: it also needs ``floor(alpha (resamples + 1)) >= 1``.
* ``bootstrap`` and ``bca``: :data:`MIN_BOOTSTRAP_N` = 20 blocks. The coverage study
  (``benchmarks/bench_coverage.py``, 2000 reps, nominal 90%, table in docs/estimators.md) measured
  the worse one-sided miss rate (nominal 0.05) of the percentile bootstrap at 0.103 / 0.073 /
  0.070 / 0.075 / 0.061 on normal contrasts at n = 6 / 10 / 15 / 20 / 30 and 0.114 / 0.103 /
  0.078 / 0.072 / 0.068 on t3 contrasts: 20 is the smallest n studied where both are at most
  1.5 x nominal. BCa is no better at these sizes (0.076 normal and 0.087 t3 at n = 20). Between
  20 and 30 blocks the intervals carry a warning (:data:`BOOTSTRAP_WARN_N`).

Diagnostics (:func:`contrast_warnings`) read the block contrasts and warn where the coverage
study showed intervals for the mean under-cover: strongly skewed contrasts. With lognormal
contrasts t, sign-flip and both bootstraps cover 0.71-0.82 at nominal 0.90 for n = 6-20, their
upper bound missing the mean 13-26% of the time. The warning fires when the sample skewness G1
exceeds twice its standard error under normality: on 4-5% of normal samples, 29 / 52 / 87% of
lognormal samples at n = 6 / 10 / 20 (so at n = 6 most skewed samples go unflagged: say so in the
plan, use a log-ratio for positive metrics), and 13-41% of heavy-tailed t3 samples, where the
methods for the mean still cover; the warning therefore says "if".
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from ._common import EXACT_TOL as _TOL
from ._common import SIGNFLIP_EXACT_MAX_N, WILCOXON_EXACT_MAX_N, floor_count, tail_alpha

MIN_BOOTSTRAP_N = 20
BOOTSTRAP_WARN_N = 30


def minimum_blocks(method: str, confidence: float, resamples: int | None = None) -> int | None:
    """Smallest number of blocks at which ``method`` can give a finite interval at
    ``confidence`` (two-sided) and is allowed to decide; None if no number of blocks can."""
    alpha = tail_alpha(confidence)
    if method == "t":
        return 2
    if method in ("bootstrap", "bca"):
        return MIN_BOOTSTRAP_N
    if method not in ("signflip", "wilcoxon"):
        raise ValueError(f"unknown method {method!r}")
    for n in range(1, SIGNFLIP_EXACT_MAX_N + 1):
        if floor_count(alpha * 2.0**n) >= 1:
            return n
    if method == "signflip":
        total = (resamples if resamples is not None else 9999) + 1
        return SIGNFLIP_EXACT_MAX_N + 1 if floor_count(alpha * total) >= 1 else None
    for n in range(SIGNFLIP_EXACT_MAX_N + 1, WILCOXON_EXACT_MAX_N + 1):
        if 2.0**-n <= alpha * _TOL:
            return n
    return WILCOXON_EXACT_MAX_N + 1


def insufficient_blocks(
    method: str, confidence: float, n: int, resamples: int | None = None, unit: str = "blocks"
) -> str | None:
    """A sentence saying why ``n`` blocks (paired contrasts, called ``unit``) cannot decide with
    ``method``, or None when they can."""
    need = minimum_blocks(method, confidence, resamples)
    if need is None:
        return (
            f"{method} at confidence {confidence:g} can never give a finite interval "
            f"(with {resamples} resamples); raise resamples or lower the confidence"
        )
    if n >= need:
        return None
    why = {
        "t": "a t interval needs at least 2 blocks",
        "bootstrap": "bootstrap intervals under-cover below this size (coverage study, docs/estimators.md)",
        "bca": "BCa intervals under-cover below this size (coverage study, docs/estimators.md)",
    }.get(method, f"with fewer blocks the smallest attainable one-sided p-value 2^-n exceeds {tail_alpha(confidence):.4g}, "
          "so the interval is unbounded and the gate could never pass")
    return f"{method} at confidence {confidence:g} needs at least {need} {unit} and has {n}: {why}"


def skewness(d: ArrayLike) -> float | None:
    """Adjusted Fisher-Pearson sample skewness G1 (scipy ``skew(bias=False)``); None if n < 3
    or the contrasts do not vary."""
    x = np.asarray(d, dtype=np.float64)
    n = x.size
    if n < 3:
        return None
    c = x - x.mean()
    m2 = float(np.mean(c * c))
    if m2 <= 0 or m2 <= 1e-24 * float(np.mean(x * x)):
        return None
    g1 = float(np.mean(c**3)) / m2**1.5
    return g1 * math.sqrt(n * (n - 1)) / (n - 2)


def skew_threshold(n: int) -> float:
    """Twice the standard error of G1 under normality, ``2 sqrt(6n(n-1) / ((n-2)(n+1)(n+3)))``."""
    return 2.0 * math.sqrt(6.0 * n * (n - 1) / ((n - 2) * (n + 1) * (n + 3)))


def contrast_warnings(d: ArrayLike, method: str, scale: str) -> tuple[str, ...]:
    """Data-driven coverage caveats for block contrasts ``d`` (analysis scale)."""
    x = np.asarray(d, dtype=np.float64)
    out: list[str] = []
    g1 = skewness(x)
    if g1 is not None and abs(g1) > skew_threshold(x.size):
        target = "pseudo-median (Hodges-Lehmann)" if method == "wilcoxon" else "mean"
        remedy = "more blocks"
        if scale == "difference":
            remedy = "a log-ratio contrast ('a / b') for a positive metric, " + remedy
        if method != "wilcoxon":
            remedy += ", or the wilcoxon method (which targets the pseudo-median, not the mean)"
        out.append(
            f"the block contrasts are strongly skewed (sample skewness {g1:.2f}, beyond "
            f"+-{skew_threshold(x.size):.2f} = 2 standard errors under normality): if their distribution is skewed, "
            f"intervals for the {target} under-cover (coverage study: lognormal contrasts at n = 6-20 cover 0.71-0.82 "
            "at nominal 0.90, the upper bound missing 13-26% of the time instead of 5%); "
            f"remedy: {remedy}"
        )
    return tuple(out)
