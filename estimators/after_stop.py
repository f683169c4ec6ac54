"""Estimates after a group-sequential study stops: repeated confidence intervals, the stage-wise
ordering p-value, the median-unbiased estimate and the final confidence interval.

A study that stops at look k because ``Z_k`` crossed its efficacy bound reports, at that look, an
estimate biased away from the null (it stopped *because* the estimate looked large). Following
Jennison & Turnbull (2000, ch. 8-9) and rpact's group-sequential analysis (Wassmer & Brannath 2016):

* **Stage-wise ordering.** Outcomes are ordered by the look they stopped at (earlier is more
  extreme), then by ``Z`` at that look. With ``mu`` the mean of ``Z_k`` at the stopping look,
  ``P_mu(stop) = P_mu(cross b_j at some j < k, or reach k with Z_k >= z_k)`` (the design's
  efficacy bounds ``b_j``; no futility bound, as for non-binding futility; the canonical joint
  normal with ``corr(Z_i, Z_j) = sqrt(t_i / t_j)``). The ordering p-value is ``P_0(stop)``; the
  median-unbiased drift solves ``P_mu(stop) = 1/2``; the final two-sided ``1 - 2 alpha`` interval
  has ends solving ``P_mu(stop) = alpha`` and ``1 - alpha``.
* **Effect scale.** ``effect = null + sign * mu * se_k`` with ``se_k`` the estimate's standard error
  at the stopping look (``sign`` +1 when large effects are the evidence, -1 otherwise). A stop at
  look 1 reports the look's estimate and ``estimate -/+ z_{1-alpha} se_1`` (rpact's convention).
* **Repeated confidence intervals** (Jennison & Turnbull 1989): at look j the estimate's interval at
  the look's own level, ``estimate_j -/+ q_j se_j`` with ``q_j`` the ``1 - a_j`` quantile of the
  normal (or of Student's t with ``df_j``); they cover the effect at every look simultaneously with
  probability at least ``1 - 2 alpha``, whether or not the study stops where the boundary says.

Inputs are on the z scale of the test of ``null``; a t statistic enters as
``Phi^-1(1 - p_t)`` (rpact's conversion). Numbers: ``estimators.sequential``'s recursion (Simpson's
rule on an 801-point grid per look) and Brent's method on the drift.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special, stats

from .sequential import crossing_probabilities

Floats = Sequence[float] | NDArray[np.float64]  # one value per look
_DRIFT_SPAN = 12.0  # initial half-width of the bracket on the drift around z_k
_XTOL = 1e-10


@dataclass(frozen=True)
class RepeatedInterval:
    """The repeated confidence interval at one look: ``estimate -/+ quantile * std_error`` at the
    look's one-sided level ``nominal_alpha`` (two-sided ``1 - 2 nominal_alpha``)."""

    look: int
    estimate: float
    lower: float
    upper: float
    nominal_alpha: float


@dataclass(frozen=True)
class AfterStop:
    """What a stopped group-sequential study reports (module doc), on the effect scale of ``estimate``.

    ``stop_look`` (1-based) of ``looks`` planned; ``ordering_pvalue`` the stage-wise ordering
    p-value of ``null``; ``median_unbiased`` and ``final_lower``/``final_upper`` the median-unbiased
    estimate and the two-sided ``confidence`` = ``1 - 2 alpha`` final interval; ``drift_*`` the same
    on the z scale (mean of ``Z`` at the stopping look); ``naive_estimate`` the look's own estimate."""

    stop_look: int
    looks: int
    alpha: float
    z_stop: float
    ordering_pvalue: float
    median_unbiased: float
    final_lower: float
    final_upper: float
    naive_estimate: float
    drift_median_unbiased: float
    drift_lower: float
    drift_upper: float

    @property
    def confidence(self) -> float:
        return 1.0 - 2.0 * self.alpha

    @property
    def stopped_early(self) -> bool:
        return self.stop_look < self.looks


def stopping_look(z_statistics: Floats, z_bounds: Floats) -> int | None:
    """The first look (1-based) whose ``Z`` reaches its efficacy bound, else None."""
    for k, (z, b) in enumerate(zip(z_statistics, z_bounds, strict=False), start=1):
        if z >= b:
            return k
    return None


def ordering_probability(fractions: Floats, z_bounds: Floats, stop_look: int, z_stop: float, drift: float) -> float:
    """``P_mu(cross z_bounds[j] at some look j < stop_look, or reach stop_look with Z >= z_stop)``
    with ``mu = drift`` the mean of ``Z`` at ``stop_look`` (module doc)."""
    k = _check(fractions, z_bounds, stop_look)
    t = [float(x) / float(fractions[k - 1]) for x in fractions[:k]]
    upper = [float(b) for b in z_bounds[: k - 1]] + [float(z_stop)]
    return float(min(1.0, max(0.0, sum(crossing_probabilities(t, upper, drift)[0]))))


def _check(fractions: Floats, z_bounds: Floats, stop_look: int) -> int:
    t = [float(x) for x in fractions]
    if not t or any(not 0 < x <= 1 for x in t) or any(b <= a for a, b in zip(t, t[1:], strict=False)):
        raise ValueError(f"information fractions must be strictly increasing in (0, 1], got {list(fractions)}")
    if len(z_bounds) != len(t):
        raise ValueError(f"one efficacy bound per look is needed: {len(z_bounds)} bounds for {len(t)} looks")
    if not 1 <= int(stop_look) <= len(t):
        raise ValueError(f"stop_look must be in 1..{len(t)}, got {stop_look}")
    return int(stop_look)


def _drift_root(fractions: Floats, z_bounds: Floats, k: int, z: float, target: float) -> float:
    """The drift ``mu`` with ``ordering_probability(...) = target`` (increasing in ``mu``)."""
    f = lambda mu: ordering_probability(fractions, z_bounds, k, z, mu) - target  # noqa: E731
    lo, hi = z - _DRIFT_SPAN, z + _DRIFT_SPAN
    while f(lo) > 0:
        lo -= _DRIFT_SPAN
    while f(hi) < 0:
        hi += _DRIFT_SPAN
    return float(optimize.brentq(f, lo, hi, xtol=_XTOL, rtol=1e-12, maxiter=200))


def after_stop(
    fractions: Floats,
    z_bounds: Floats,
    alpha: float,
    stop_look: int,
    z_stop: float,
    estimate: float,
    std_error: float,
    null: float = 0.0,
    upper: bool = True,
) -> AfterStop:
    """The ordering p-value, median-unbiased estimate and final interval of a study that stopped
    at ``stop_look`` with ``Z = z_stop`` (module doc).

    ``fractions`` the design's information fractions t_1..t_K and ``z_bounds`` its efficacy z bounds
    (only those before ``stop_look`` matter); ``alpha`` one-sided (final interval ``1 - 2 alpha``);
    ``estimate``/``std_error`` at the stopping look on the effect scale; ``null`` the tested value;
    ``upper`` True when effects above ``null`` are the evidence (rpact's ``directionUpper``)."""
    k = _check(fractions, z_bounds, stop_look)
    if not 0 < alpha < 0.5:
        raise ValueError(f"one-sided alpha must be in (0, 0.5), got {alpha}")
    if not (math.isfinite(z_stop) and math.isfinite(estimate) and math.isfinite(std_error) and std_error > 0):
        raise ValueError(
            f"z_stop, estimate and std_error must be finite (std_error > 0), got {z_stop}, {estimate}, {std_error}"
        )
    sign = 1.0 if upper else -1.0
    q = float(-special.ndtri(alpha))
    if k == 1:  # the look's own estimate and fixed-design interval (rpact's convention)
        p = float(special.ndtr(-z_stop))
        mu, lo, hi = z_stop, z_stop - q, z_stop + q
        med, ends = float(estimate), (estimate - q * std_error, estimate + q * std_error)
    else:
        p = ordering_probability(fractions, z_bounds, k, z_stop, 0.0)
        mu = _drift_root(fractions, z_bounds, k, z_stop, 0.5)
        lo = _drift_root(fractions, z_bounds, k, z_stop, alpha)
        hi = _drift_root(fractions, z_bounds, k, z_stop, 1.0 - alpha)
        med = null + sign * mu * std_error
        ends = (null + sign * lo * std_error, null + sign * hi * std_error)
    return AfterStop(
        stop_look=k,
        looks=len(fractions),
        alpha=float(alpha),
        z_stop=float(z_stop),
        ordering_pvalue=p,
        median_unbiased=float(med),
        final_lower=float(min(ends)),
        final_upper=float(max(ends)),
        naive_estimate=float(estimate),
        drift_median_unbiased=float(mu),
        drift_lower=float(lo),
        drift_upper=float(hi),
    )


def repeated_intervals(
    estimates: Floats,
    std_errors: Floats,
    nominal_alphas: Floats,
    dfs: Sequence[float | None] | NDArray[np.float64] | None = None,
) -> tuple[RepeatedInterval, ...]:
    """Per look taken, ``estimate -/+ q std_error`` with ``q`` the ``1 - nominal_alpha`` quantile of
    the normal, or of Student's t with ``dfs[j]`` degrees of freedom where given (module doc).
    A look that spends nothing (``nominal_alpha`` 0) has the whole line as its interval."""
    if not len(estimates) == len(std_errors) == len(nominal_alphas):
        raise ValueError("estimates, std_errors and nominal_alphas need one value per look")
    out = []
    for j, (est, se, a) in enumerate(zip(estimates, std_errors, nominal_alphas, strict=True)):
        df = dfs[j] if dfs is not None else None
        if not 0 <= a < 0.5:
            raise ValueError(f"look {j + 1}: nominal one-sided alpha must be in [0, 0.5), got {a}")
        if a == 0:
            q = math.inf
        elif df is None:
            q = float(-special.ndtri(a))
        else:
            q = float(stats.t.isf(a, df))
        half = q * float(se)
        out.append(RepeatedInterval(j + 1, float(est), float(est) - half, float(est) + half, float(a)))
    return tuple(out)


def z_from_pvalue(pvalue: float) -> float:
    """``Phi^-1(1 - p)`` of a one-sided p-value (rpact's conversion of a t test), exact in both tails."""
    if not 0 < pvalue < 1:
        raise ValueError(f"a one-sided p-value in (0, 1) is needed, got {pvalue}")
    return float(-special.ndtri(pvalue))


__all__ = [
    "AfterStop",
    "RepeatedInterval",
    "after_stop",
    "ordering_probability",
    "repeated_intervals",
    "stopping_look",
    "z_from_pvalue",
]
