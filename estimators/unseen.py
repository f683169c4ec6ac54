"""What n identical contrasts cannot rule out: the bound a constant sample gives inside a known range.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ._common import IntervalResult, build_result, tail_alpha, two_sided
from .vocabulary import Verdict


def unseen_one_sided(value: float, n: int, mu: float, bounds: tuple[float, float]) -> tuple[float, float]:
    """``(p_greater, p_less)`` at null centre ``mu`` for ``n`` units all equal to ``value`` inside
    ``bounds`` (analysis scale; module doc). ``p_greater`` tests H0: theta <= mu."""
    low, high = bounds
    if not low <= value <= high:
        raise ValueError(f"the constant contrast {value:g} lies outside its range [{low:g}, {high:g}]")
    p_less = 1.0 if mu <= value else 0.0 if mu >= high else ((high - mu) / (high - value)) ** n
    p_greater = 1.0 if mu >= value else 0.0 if mu <= low else ((mu - low) / (value - low)) ** n
    return float(p_greater), float(p_less)


def unseen_interval(
    d: NDArray[np.float64], confidence: float, scale: str, method: str, bounds: tuple[float, float]
) -> IntervalResult:
    """The interval of a constant sample ``d`` inside ``bounds`` at two-sided ``confidence``
    (module doc), labelled with the gate's ``method``; its ``pvalue`` tests the null 0 (log 1)."""
    n, value = int(d.size), float(d[0])
    low, high = bounds
    shrink = 1.0 - tail_alpha(confidence) ** (1.0 / n)
    lower, upper = value - shrink * (value - low), value + shrink * (high - value)
    null = 0.0
    p_greater, p_less = unseen_one_sided(value, n, null, bounds) if low <= null <= high else (1.0, 1.0)
    note = (
        f"every one of the {n} units shows the same contrast: the interval is the widest mean consistent with "
        f"{n} identical values inside the declared range [{low:.6g}, {high:.6g}] (analysis scale) -- an event "
        "at the range's end that these units did not happen to show (estimators.unseen)"
    )
    return build_result(
        estimate=value,
        lower=lower,
        upper=upper,
        confidence=confidence,
        method=method,
        n=n,
        scale=scale,
        pvalue=two_sided(p_greater, p_less),
        exact=True,
        warnings=(note,),
        bounds=(low, high),
        contrasts=d,
    )


def judged_bounds(method: str, bounds: tuple[float, float] | None, deterministic: bool) -> tuple[float, float] | None:
    """The range a rule is decided with: none for a ``deterministic`` metric (its constant sample is judged on
    its one value) unless the method is ``betting``, which needs its range whatever the data."""
    return None if deterministic and method != "betting" else bounds


def constant_verdict(holds: bool, unseen: bool, deterministic: bool) -> Verdict:
    """The verdict of a constant sample (module doc): ``vacuous`` (or ``fail``) for a deterministic metric,
    pass / fail on the unseen bound when the range was given (``unseen``), else ``unresolvable``."""
    if deterministic:
        return "vacuous" if holds else "fail"
    if unseen:
        return "pass" if holds else "fail"
    return "unresolvable"


def unseen_shrink(n: int, confidence: float) -> float:
    """The fraction of the distance to the range's end a constant sample of ``n`` cannot exclude."""
    return 1.0 - math.pow(tail_alpha(confidence), 1.0 / n)


__all__ = ["constant_verdict", "judged_bounds", "unseen_interval", "unseen_one_sided", "unseen_shrink"]
