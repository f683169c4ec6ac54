"""Can a method decide anything with n blocks? Minimum block counts and data diagnostics.

More in ``docs/internals.md``.
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
    if method in ("t", "betting"):
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
    }.get(
        method,
        f"with fewer blocks the smallest attainable one-sided p-value 2^-n exceeds {tail_alpha(confidence):.4g}, "
        "so the interval is unbounded and the gate could never pass",
    )
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


def skew_se(n: int) -> float:
    """Standard error of G1 under normality, ``sqrt(6n(n-1) / ((n-2)(n+1)(n+3)))``."""
    return math.sqrt(6.0 * n * (n - 1) / ((n - 2) * (n + 1) * (n + 3)))


def skew_threshold(n: int) -> float:
    """Twice the standard error of G1 under normality (a plain size yardstick)."""
    return 2.0 * skew_se(n)


#: z multiples of the G1 standard error: 10% under normality one-sided / two-sided
SKEW_Z_ONE_SIDED = 1.2816
SKEW_Z_TWO_SIDED = 1.6449
#: below this n the skew check misses too much (module doc): mean-targeting verdicts say so
SKEW_CHECK_MIN_N = 15
#: the methods whose interval targets the mean (their coverage needs near-symmetric contrasts)
MEAN_METHODS = ("t", "signflip", "bootstrap", "bca")


def threatening_skew(rule: object | None) -> str:
    """Which skew threatens ``rule``'s bound: ``right`` (``upper`` rules), ``left`` (``lower``)
    or ``either`` (``within``, ``estimate``, no rule)."""
    quantity = getattr(rule, "quantity", None)
    return {"upper": "right", "lower": "left"}.get(str(quantity), "either")


def skew_flagged(d: ArrayLike, rule: object | None = None) -> float | None:
    """G1 when it is beyond the check's threshold in the direction that threatens ``rule``
    (module doc), else None."""
    x = np.asarray(d, dtype=np.float64)
    g1 = skewness(x)
    if g1 is None:
        return None
    side, se = threatening_skew(rule), skew_se(x.size)
    if side == "right":
        return g1 if g1 > SKEW_Z_ONE_SIDED * se else None
    if side == "left":
        return g1 if g1 < -SKEW_Z_ONE_SIDED * se else None
    return g1 if abs(g1) > SKEW_Z_TWO_SIDED * se else None


def symmetry_unchecked(method: str, n: int) -> bool:
    """Whether a ``method`` interval on ``n`` units rests on a symmetry its n cannot check:
    a mean-targeting method below :data:`SKEW_CHECK_MIN_N` units."""
    return method in MEAN_METHODS and n < SKEW_CHECK_MIN_N


def symmetry_note(method: str, n: int) -> str | None:
    """The sentence a mean-targeting verdict carries below :data:`SKEW_CHECK_MIN_N` units, or None."""
    if not symmetry_unchecked(method, n):
        return None
    return (
        f"coverage rests on near-symmetric contrasts that n = {n} cannot check: the {method} interval targets the "
        f"mean, and below {SKEW_CHECK_MIN_N} units the skew check misses too much skew to vouch for it (a t gate at "
        "90% passes lognormal contrasts with the mean on the margin about 20% of the time, not 5%: docs/estimators.md)"
    )


#: a rare-event sample: at least this share of the units tie at one value (module doc)
RARE_EVENT_TIE_SHARE = 0.5


def rare_event_flagged(d: ArrayLike, rule: object | None = None) -> tuple[int, int] | None:
    """``(tied, away)`` when at least :data:`RARE_EVENT_TIE_SHARE` of the ``n >= 3`` contrasts are one
    exact value and ``away`` of the others lie on the side that threatens ``rule`` (above it for
    ``upper`` rules, below for ``lower``, either side otherwise), else None.

    Such a sample looks like draws of a discrete variable with rare departures (a restart, a failed
    site): its mean rests on the few units away from the common value, and departures rarer than
    about 1 / n are likely not in the sample at all. Continuous contrasts never tie, so the check
    raises no false alarm on them."""
    x = np.asarray(d, dtype=np.float64)
    if x.size < 3:
        return None
    values, counts = np.unique(x, return_counts=True)
    k = int(np.argmax(counts))
    tied, common = int(counts[k]), float(values[k])
    if tied == x.size or tied < RARE_EVENT_TIE_SHARE * x.size:
        return None
    side = threatening_skew(rule)
    away = (
        int(np.sum(x > common))
        if side == "right"
        else int(np.sum(x < common))
        if side == "left"
        else int(x.size - tied)
    )
    return (tied, away) if away else None


def contrast_warnings(d: ArrayLike, method: str, scale: str, rule: object | None = None) -> tuple[str, ...]:
    """Data-driven coverage caveats for block contrasts ``d`` (analysis scale); ``rule`` (the
    gate's pass rule) picks the skew direction that threatens it (module doc). ``betting`` (valid
    for any distribution in its range) gets none."""
    x = np.asarray(d, dtype=np.float64)
    out: list[str] = []
    if method == "betting":
        return ()
    rare = rare_event_flagged(x, rule)
    if rare is not None:
        tied, away = rare
        out.append(
            f"rare events: {tied} of the {x.size} units show one and the same contrast and {away} lie away from it "
            "on the side that threatens the rule: the mean rests on those few units, and departures rarer than about "
            f"1 / {x.size} are likely unseen in this sample; remedy: declare the metric's range and use method "
            "betting (valid for any distribution in the range), or more units"
        )
    g1 = skew_flagged(x, rule)
    if g1 is not None:
        target = "pseudo-median (Hodges-Lehmann)" if method == "wilcoxon" else "mean"
        remedy = "more blocks"
        if scale == "difference":
            remedy = "a log-ratio contrast ('a / b') for a positive metric, " + remedy
        if method != "wilcoxon":
            remedy += ", or the wilcoxon method (which targets the pseudo-median, not the mean)"
        side = threatening_skew(rule)
        z = SKEW_Z_TWO_SIDED if side == "either" else SKEW_Z_ONE_SIDED
        where = {
            "right": " to the right, which threatens an upper bound",
            "left": " to the left, which threatens a lower bound",
        }.get(side, "")
        out.append(
            f"the block contrasts look skewed{where}: sample skewness {g1:.2f} is beyond {z:.2f} standard errors "
            f"({z * skew_se(x.size):.2f}) under normality (a check with 10% false alarms); if their distribution is "
            "skewed, "
            f"intervals for the {target} under-cover (coverage study: lognormal contrasts at n = 6-20 cover 0.71-0.82 "
            "at nominal 0.90, the upper bound missing 13-26% of the time instead of 5%); "
            f"remedy: {remedy}"
        )
    return tuple(out)
