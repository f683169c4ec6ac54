"""Decision helpers: pass_if rules on intervals, their p-values, multiplicity, resolution.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._common import (
    IntervalResult,
    check_confidence,
    check_contrasts,
    check_scale,
    is_constant,
    tail_alpha,
    to_analysis,
    to_reported,
)
from .dispatch import check_method, interval, one_sided_p_values
from .signflip import sequential_reference
from .unseen import unseen_interval, unseen_one_sided
from .vocabulary import MULTIPLICITIES, OPS, QUANTITIES, Rule, RuleError  # noqa: F401 - re-exported

ADJUSTMENTS = MULTIPLICITIES


class DegenerateContrastWarning(UserWarning):
    """A rule p-value was requested for constant contrasts (no variability to test)."""


def _compare(value: float, op: str, threshold: float) -> bool:
    if op == "<":
        return value < threshold
    if op == "<=":
        return value <= threshold
    if op == ">":
        return value > threshold
    return value >= threshold


def _holds(rule: Rule, estimate: float, lower: float, upper: float) -> bool:
    """Evaluate ``rule`` on reported-scale values."""
    if rule.quantity == "within":
        assert rule.low is not None and rule.high is not None
        return bool(rule.low < lower and upper < rule.high)
    value = {"upper": upper, "lower": lower, "estimate": estimate}[rule.quantity]
    assert rule.op is not None and rule.threshold is not None
    return _compare(value, rule.op, rule.threshold)


def rule_holds(rule: Rule, result: IntervalResult) -> bool:
    """Whether ``rule`` holds on ``result`` (reported scale; a degenerate result is evaluated
    on its single value -- check ``result.degenerate`` before calling that a pass)."""
    return _holds(rule, result.estimate, result.lower, result.upper)


def is_tested(rule: Rule) -> bool:
    """True for rules that imply a one-sided null (:attr:`Rule.tested`)."""
    return rule.tested


def clears(pvalue: float, alpha: float) -> bool:
    """The one decision rule: a p-value clears ``alpha`` when ``p <= alpha`` (boundary
    included; a 1e-12 relative tolerance absorbs the binary representation of alpha, as the
    interval constructions do)."""
    return bool(pvalue <= alpha * (1.0 + 1e-12))


def holds_as_test(rule: Rule, estimate: float, lower: float, upper: float) -> bool:
    """A tested rule on an interval: its threshold must lie outside the (closed) interval, so
    ``upper <= u`` means the same as ``upper < u`` (both: H0 theta >= u rejected)."""
    if is_tested(rule) and rule.op in ("<=", ">="):
        rule = Rule(rule.quantity, rule.op[0], rule.threshold)
    return _holds(rule, estimate, lower, upper)


@dataclass(frozen=True)
class RuleDecision:
    """The verdict of one rule on one set of block contrasts (before resolution).

    ``holds``: for tested rules on varying contrasts, exactly ``pvalue <= alpha``; for constant
    contrasts (no variability: ``constant``) and untested rules, the rule on the interval.
    ``pvalue`` is None when there is no test (untested rules; constant contrasts without a range).
    ``unseen``: constant contrasts inside a known range, tested on the bound n identical values
    give (:mod:`estimators.unseen`). ``betting`` contrasts are never ``constant``: its interval
    needs no spread estimate.
    """

    holds: bool
    pvalue: float | None
    alpha: float
    tested: bool
    constant: bool
    result: IntervalResult
    unseen: bool = False  # constant contrasts judged on what n identical values cannot rule out (bounds given)


def decide_rule(
    rule: Rule,
    d: ArrayLike,
    confidence: float = 0.95,
    method: str = "t",
    scale: str = "difference",
    resamples: int = 9999,
    seed: int | None = 0,
    levels: Sequence[float] | None = None,
    *,
    bounds: tuple[float, float] | None = None,
    horizon: int | None = None,
) -> RuleDecision:
    """Interval, rule p-value and verdict as one construction (see :class:`RuleDecision`).

    The p-value decides: a tested rule holds exactly when its p-value clears
    ``alpha = (1 - confidence) / 2`` (:func:`clears`); the interval is the set of thresholds
    the test does not reject, so the two agree (up to floating-point rounding at the exact end
    of a t interval, a set of measure zero).

    ``levels``: the p-value thresholds the caller's verdict depends on (``alpha``, and ``alpha / K``
    under a multiplicity adjustment over ``K`` gates). Given, a sign-flip Monte Carlo stops drawing
    once the rule is settled at all of them (:mod:`estimators.mc_stop`: the decision then differs from
    the full draw's with probability at most ``mc_stop.RISK``; the result says so in its warnings).

    ``bounds`` (the contrasts' range, analysis scale) and ``horizon`` go to ``betting``; given with
    another method, constant contrasts are tested on what they cannot rule out (``unseen``).
    """
    arr = check_contrasts(d)
    constant = is_constant(arr) and method != "betting"
    tested = is_tested(rule)
    if constant and bounds is not None and tested:
        res = unseen_interval(arr, check_confidence(confidence), scale, check_method(method), bounds)
        p = rule_pvalue(rule, arr, confidence, method, scale, bounds=bounds)
        return RuleDecision(clears(p, tail_alpha(confidence)), p, tail_alpha(confidence), tested, True, res, True)
    stop = None
    if levels is not None and method == "signflip" and tested and not constant:
        stop = sequential_reference(arr, _tails(rule, scale), resamples, seed, levels)
        resamples = stop.patterns
    res = interval(method, arr, confidence, scale, resamples=resamples, seed=seed, bounds=bounds, horizon=horizon)
    if stop is not None and stop.early:
        res = replace(res, warnings=(*res.warnings, stop.note()))
    alpha = tail_alpha(res.confidence)
    if constant or not tested:
        holds = holds_as_test(rule, res.estimate, res.lower, res.upper)
        return RuleDecision(holds, None, alpha, tested, constant, res)
    p = rule_pvalue(rule, arr, confidence, method, scale, resamples, seed, bounds=bounds, horizon=horizon)
    return RuleDecision(clears(p, alpha), p, alpha, tested, constant, res)


def _tails(rule: Rule, scale: str) -> list[tuple[float, bool]]:
    """The one-sided tests behind a tested rule: ``(mu, greater)`` each, on the analysis scale."""
    if rule.quantity == "within":
        assert rule.low is not None and rule.high is not None
        return [
            (to_analysis(rule.low, scale, "within low"), True),
            (to_analysis(rule.high, scale, "within high"), False),
        ]
    assert rule.threshold is not None
    return [(to_analysis(rule.threshold, scale), rule.quantity == "lower")]


def rule_pvalue(
    rule: Rule | str,
    d: ArrayLike | IntervalResult,
    confidence: float = 0.95,
    method: str = "t",
    scale: str = "difference",
    resamples: int = 9999,
    seed: int | None = 0,
    *,
    bounds: tuple[float, float] | None = None,
    horizon: int | None = None,
) -> float:
    """One-sided p-value of the shifted null implied by ``rule`` (see the module doc).

    ``d`` are the block contrasts on the analysis scale, or an :class:`IntervalResult`, whose
    contrasts, method, scale, resamples and seed are then used (``rule_pvalue(rule, result)``).
    ``rule`` may be its text (``"upper < 1.05"``). ``confidence`` is validated but the p-value
    does not depend on it (but for ``betting``, whose bets are tuned to it). For constant contrasts
    inside ``bounds`` (any method but ``betting``) the p-value is what n identical values cannot rule
    out (:mod:`estimators.unseen`); without ``bounds`` there is nothing to test: a
    :class:`DegenerateContrastWarning` is issued and 0.0 / 1.0 returned according as the rule
    holds on the single value.
    """
    rule = Rule.parse(rule)
    if isinstance(d, IntervalResult):
        if d.contrasts is None:
            raise ValueError("this IntervalResult carries no contrasts; pass the block contrasts instead")
        confidence, method, scale = d.confidence, d.method, d.scale
        resamples = d.resamples if d.resamples is not None else resamples
        seed = d.seed if d.resamples is not None else seed
        bounds = d.bounds if d.bounds is not None else bounds
        horizon = d.horizon if d.horizon is not None else horizon
        d = d.contrasts
    arr = check_contrasts(d)
    check_confidence(confidence)
    check_scale(scale)
    check_method(method)
    if not is_tested(rule):
        raise ValueError(
            f"rule '{rule.quantity} {rule.op} {rule.threshold}' implies no one-sided null "
            "hypothesis, so it has no p-value"
        )
    if is_constant(arr) and method != "betting" and bounds is not None:
        return _tested_p(rule, scale, lambda mu: unseen_one_sided(float(arr[0]), int(arr.size), mu, bounds))
    if is_constant(arr) and method != "betting":
        v = to_reported(float(np.mean(arr)), scale)
        holds = _holds(rule, v, v, v)
        warnings.warn(
            f"constant block contrasts: the rule p-value is degenerate ({0.0 if holds else 1.0}), not a test result",
            DegenerateContrastWarning,
            stacklevel=2,
        )
        return 0.0 if holds else 1.0

    def p(mu: float) -> tuple[float, float]:
        return one_sided_p_values(
            method, arr, mu, resamples, seed, bounds=bounds, horizon=horizon, confidence=confidence
        )

    return _tested_p(rule, scale, p)


def _tested_p(rule: Rule, scale: str, p: Callable[[float], tuple[float, float]]) -> float:
    """The rule's p-value from ``p(mu) -> (p_greater, p_less)`` at its threshold(s) (module doc)."""
    if rule.quantity == "within":
        assert rule.low is not None and rule.high is not None
        lo = to_analysis(rule.low, scale, "within low")
        hi = to_analysis(rule.high, scale, "within high")
        return float(max(p(lo)[0], p(hi)[1]))
    assert rule.threshold is not None
    mu = to_analysis(rule.threshold, scale)
    p_greater, p_less = p(mu)
    return float(p_less if rule.quantity == "upper" else p_greater)


def adjust_p_values(p: ArrayLike, method: str = "holm") -> NDArray[np.float64]:
    """Multiplicity-adjusted p-values (``none``, ``holm`` step-down, ``bonferroni``), capped
    at 1, in the input order. Agrees with ``statsmodels.stats.multitest.multipletests``."""
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"p-values must be a 1-D array, got shape {arr.shape}")
    if np.any(~np.isfinite(arr)) or np.any((arr < 0) | (arr > 1)):
        raise ValueError("p-values must be finite and in [0, 1]")
    if method not in ADJUSTMENTS:
        raise ValueError(f"multiplicity method must be one of {ADJUSTMENTS}, got {method!r}")
    m = arr.size
    if method == "none" or m == 0:
        return arr.copy()
    if method == "bonferroni":
        return np.minimum(1.0, arr * m)
    order = np.argsort(arr, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate(arr[order] * (m - np.arange(m))))
    out = np.empty(m, dtype=np.float64)
    out[order] = stepped
    return out
