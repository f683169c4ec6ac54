"""Resolution: could the measurement bounds of the values change a rule's outcome?

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._common import IntervalResult, check_contrasts, special, tail_alpha, to_reported
from .bootstrap import bca_end_bound
from .contrast import paired_contrast, propagate_bounds
from .dispatch import interval
from .rules import holds_as_test
from .vocabulary import Rule


@dataclass(frozen=True)
class ResolutionCheck:
    """Outcome of :func:`resolution_check`.

    ``interval_bound`` is the bound on how far any interval end can move (analysis scale, log
    for ratios); ``extremes`` are the two extreme intervals evaluated, ``(lower, upper)`` on the
    reported scale; ``could_change`` is True when the rule's outcome differs between them.
    """

    holds: bool
    could_change: bool
    holds_at_extremes: tuple[bool, bool]
    extremes: tuple[tuple[float, float], tuple[float, float]]
    interval_bound: float
    block_bounds: tuple[float, ...]
    result: IntervalResult

    @property
    def resolvable(self) -> bool:
        """True when the measurement bounds cannot change the rule's outcome."""
        return not self.could_change


def interval_bound(
    method: str,
    block_bounds: NDArray[np.float64],
    confidence: float,
    d: NDArray[np.float64] | None = None,
    resamples: int = 9999,
    seed: int | None = 0,
) -> float:
    """Worst-case movement of an interval end given per-block contrast bounds (module doc).
    ``bca`` also needs the contrasts ``d`` (and the interval's resamples and seed)."""
    b = block_bounds
    if not np.all(np.isfinite(b)) or method == "betting":
        return math.inf
    if method == "bca":
        if d is None:
            raise ValueError("the BCa resolution bound needs the contrasts d")
        return bca_end_bound(np.asarray(d, dtype=np.float64), float(np.max(b)), confidence, resamples, seed)
    if method == "t":
        n = b.size
        q = float(special().stdtrit(n - 1, 1.0 - tail_alpha(confidence)))
        return float(np.mean(b) + q * np.sqrt(np.sum(b * b)) / math.sqrt(n * (n - 1)))
    return float(np.max(b))


def end_shift_per_bound(method: str, n: int, confidence: float) -> float:
    """How far :func:`interval_bound` moves an interval end at ``n`` units when every unit's contrast
    bound is 1 (scale it by the actual bound): 1 for signflip, wilcoxon and the bootstrap, ``1 +
    t_q / sqrt(n - 1)`` for t, ``inf`` for betting; for bca at least 1 (its bound also depends on
    the contrasts, unknown before the data), so 1 is returned. For planning, before any data."""
    if n < 2:
        raise ValueError("a paired interval needs 2 or more units")
    if method == "bca":
        return 1.0
    return interval_bound(method, np.ones(n), confidence)


def resolution_check(
    rule: Rule,
    d: ArrayLike,
    block_bounds: ArrayLike,
    confidence: float = 0.95,
    method: str = "t",
    scale: str = "difference",
    resamples: int = 9999,
    seed: int | None = 0,
    result: IntervalResult | None = None,
) -> ResolutionCheck:
    """Could the rule's outcome change if every value moved anywhere within its bound?

    ``block_bounds`` are per-block bounds on the contrast (analysis scale; from
    :func:`estimators.propagate_bounds`), non-negative, ``inf`` allowed. The interval is
    computed (``result``: the same interval, already computed by the caller), each end is moved
    by :func:`interval_bound`, and the rule is evaluated on the interval shifted down and up
    (``within``: widened and narrowed).
    """
    arr = check_contrasts(d)
    b = np.asarray(block_bounds, dtype=np.float64)
    if b.shape != arr.shape:
        raise ValueError(f"block_bounds must have shape {arr.shape}, got {b.shape}")
    if np.any(np.isnan(b)) or np.any(b < 0):
        raise ValueError("block bounds must be non-negative (inf allowed)")
    res = result if result is not None else interval(method, arr, confidence, scale, resamples=resamples, seed=seed)
    shift = interval_bound(method, b, res.confidence, arr, resamples, seed)
    est, lo, hi = res.analysis_scale()
    if rule.quantity == "within":
        cands = [(est, lo - shift, hi + shift), (est, lo + shift, hi - shift)]
    else:
        cands = [(est - shift, lo - shift, hi - shift), (est + shift, lo + shift, hi + shift)]
    rep = [tuple(to_reported(x, scale) for x in c) for c in cands]
    outcomes = (holds_as_test(rule, *rep[0]), holds_as_test(rule, *rep[1]))
    return ResolutionCheck(
        holds=holds_as_test(rule, res.estimate, res.lower, res.upper),
        could_change=outcomes[0] != outcomes[1],
        holds_at_extremes=outcomes,
        extremes=((rep[0][1], rep[0][2]), (rep[1][1], rep[1][2])),
        interval_bound=shift,
        block_bounds=tuple(float(x) for x in b),
        result=res,
    )


def resolution_check_outcomes(
    rule: Rule,
    outcomes: ArrayLike,
    coefficients: ArrayLike,
    bounds: ArrayLike,
    confidence: float = 0.95,
    method: str = "t",
    scale: str = "difference",
    resamples: int = 9999,
    seed: int | None = 0,
) -> ResolutionCheck:
    """:func:`resolution_check` from the outcome matrix and each value's measurement bound
    (absolute, metric units; broadcast like ``outcomes``)."""
    d = paired_contrast(outcomes, coefficients, scale)
    b = propagate_bounds(outcomes, coefficients, bounds, scale)
    return resolution_check(rule, d, b, confidence, method, scale, resamples, seed)


__all__ = ["ResolutionCheck", "end_shift_per_bound", "interval_bound", "resolution_check", "resolution_check_outcomes"]
