"""Method dispatch: one entry point for every interval method and its one-sided tests."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._common import METHODS, IntervalResult
from .betting import betting_interval, betting_one_sided
from .bootstrap import bca_interval, bootstrap_interval, bootstrap_one_sided
from .signflip import signflip_interval, signflip_one_sided
from .tinterval import t_interval, t_one_sided
from .wilcoxon import wilcoxon_interval, wilcoxon_one_sided


def check_method(method: str) -> str:
    """One of ``t``, ``signflip``, ``wilcoxon``, ``bootstrap``, ``bca``, ``betting``."""
    if method not in METHODS:
        raise ValueError(f"unknown interval method {method!r}; choose one of {METHODS}")
    return method


def _required(method: str, bounds: tuple[float, float] | None) -> tuple[float, float]:
    """The contrasts' range a bounded method needs (ValueError without it; ``estimators.betting.check_bounds``
    checks its ends)."""
    if bounds is None:
        raise ValueError(
            f"the {method} interval needs the contrasts' range (bounds=(low, high), analysis scale): "
            "it is valid for any distribution inside a known range, and for no other"
        )
    return bounds


def interval(
    method_name: str,
    d: ArrayLike,
    confidence: float = 0.95,
    scale: str = "difference",
    resamples: int = 9999,
    seed: int | None = 0,
    *,
    bounds: tuple[float, float] | None = None,
    horizon: int | None = None,
) -> IntervalResult:
    """Compute the named interval for block contrasts ``d`` (analysis scale).

    ``resamples`` and ``seed`` are passed to the resampling methods (``bootstrap``, ``bca``,
    and ``signflip`` beyond n = 20) and ignored by the others. ``bounds`` (the contrasts' range,
    analysis scale) and ``horizon`` (the planned number of units) are for ``betting``
    (:mod:`estimators.betting`), which needs ``bounds``; the other methods ignore both.
    """
    check_method(method_name)
    if method_name == "betting":
        return betting_interval(d, confidence, scale, bounds=_required(method_name, bounds), horizon=horizon)
    if method_name == "t":
        return t_interval(d, confidence, scale)
    if method_name == "signflip":
        return signflip_interval(d, confidence, scale, resamples=resamples, seed=seed)
    if method_name == "wilcoxon":
        return wilcoxon_interval(d, confidence, scale)
    if method_name == "bootstrap":
        return bootstrap_interval(d, confidence, scale, resamples=resamples, seed=seed)
    return bca_interval(d, confidence, scale, resamples=resamples, seed=seed)


def one_sided_p_values(
    method_name: str,
    d: NDArray[np.float64],
    mu: float,
    resamples: int = 9999,
    seed: int | None = 0,
    *,
    bounds: tuple[float, float] | None = None,
    horizon: int | None = None,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """``(p_greater, p_less)`` of the named method's test at null centre ``mu`` (analysis scale).

    ``p_greater`` tests H0: theta <= mu (small when the data lie well above mu);
    ``p_less`` tests H0: theta >= mu. ``d`` must be validated and (but for ``betting``) non-constant.
    ``betting`` needs ``bounds`` and tunes its bets to ``confidence`` and ``horizon`` (its p-values are
    valid at any level and at any number of units: anytime-valid).
    """
    check_method(method_name)
    if method_name == "betting":
        return betting_one_sided(d, mu, bounds=_required(method_name, bounds), confidence=confidence, horizon=horizon)
    if method_name == "t":
        return t_one_sided(d, mu)
    if method_name == "signflip":
        return signflip_one_sided(d, mu, resamples, seed)
    if method_name == "wilcoxon":
        return wilcoxon_one_sided(d, mu)
    return bootstrap_one_sided(d, mu, method_name == "bca", resamples, seed)


__all__ = ["check_method", "interval", "one_sided_p_values"]
