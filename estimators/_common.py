"""Shared pieces of the estimators: the result object, argument checks, degenerate data.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from types import ModuleType
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .vocabulary import METHODS, MIN_RESAMPLES, SCALES, Scale  # noqa: F401 - re-exported

#: largest n whose sign-flip reference distribution is enumerated exactly (Monte Carlo beyond)
SIGNFLIP_EXACT_MAX_N = 20
#: largest n whose signed-rank distribution is computed exactly (normal approximation beyond)
WILCOXON_EXACT_MAX_N = 400
#: relative tolerance of "p <= alpha" on exact lattices (binary representation of alpha)
EXACT_TOL = 1.0 + 1e-12

DEGENERATE_WARNING = (
    "all block contrasts are exactly equal (or differ only below floating-point underflow, so their "
    "standard deviation is 0): no sampling variability can be estimated; the interval is the single "
    "observed value and the p-value is undefined"
)


def special() -> ModuleType:
    """``scipy.special`` (ndtr, ndtri, stdtr, stdtrit), imported on first use: it costs about
    0.3-0.4 s, and the sign-flip and exact Wilcoxon paths never need it (never scipy.stats)."""
    import scipy.special  # lazy: scipy

    return scipy.special


class ConfidenceInterval(NamedTuple):
    """An interval's ends on the reported scale."""

    low: float
    high: float


class RatioInputWarning(UserWarning):
    """``scale="ratio"`` contrasts that look like ratios rather than log ratios."""


@dataclass(frozen=True)
class IntervalResult:
    """A two-sided interval for the centre of the block contrasts, on the reported scale.

    ``estimate``, ``lower`` and ``upper`` are differences (scale ``difference``) or ratios
    (scale ``ratio``: exponentiated log-scale values). ``pvalue`` is the two-sided test
    of ``null`` (0 for differences, 1 for ratios) -- not a pass rule's p-value, which is
    :func:`estimators.rule_pvalue` ``(rule, result)`` -- and is ``None`` when undefined (degenerate
    data). ``contrasts`` keeps the block contrasts (analysis scale) the interval was computed from.
    ``attained_confidence`` is the exact coverage of a discrete method (``None`` for continuous
    ones). ``exact`` means the reference distribution was enumerated exactly;
    ``monte_carlo`` that it was sampled (seeded). ``bounds`` is the contrasts' declared range
    (analysis scale) a bounded method (``betting``) or a constant sample's bound used, ``horizon`` the
    planned number of units a betting interval is tuned to. Bounds may be infinite when the data are
    too few for the requested confidence (stated in ``warnings``), never NaN.
    """

    estimate: float
    lower: float
    upper: float
    confidence: float
    method: str
    n: int
    scale: str = "difference"
    attained_confidence: float | None = None
    sidedness: str = "two-sided"
    df: float | None = None
    pvalue: float | None = None
    null: float | None = 0.0
    degenerate: bool = False
    exact: bool = False
    monte_carlo: bool = False
    warnings: tuple[str, ...] = ()
    resamples: int | None = None
    seed: int | None = None
    bounds: tuple[float, float] | None = None  # the contrast's range (analysis scale), for bounded methods
    horizon: int | None = None  # the planned number of units a betting interval is tuned to
    contrasts: NDArray[np.float64] | None = field(default=None, repr=False, compare=False)

    def confidence_interval(self) -> ConfidenceInterval:
        """``(low, high)`` on the reported scale (a named tuple, as in scipy.stats)."""
        return ConfidenceInterval(self.lower, self.upper)

    def analysis_scale(self) -> tuple[float, float, float]:
        """``(estimate, lower, upper)`` on the analysis scale (natural log for ratios)."""
        if self.scale == "ratio":
            with np.errstate(divide="ignore"):
                return (float(np.log(self.estimate)), float(np.log(self.lower)), float(np.log(self.upper)))
        return (self.estimate, self.lower, self.upper)


def check_contrasts(d: ArrayLike, min_n: int = 2) -> NDArray[np.float64]:
    """Return ``d`` as a 1-D float64 array, refusing NaN/inf, wrong shapes and n < ``min_n``."""
    arr = np.asarray(d, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"contrasts must be a 1-D array, got shape {arr.shape}")
    if arr.size < min_n:
        raise ValueError(f"need at least {min_n} block contrasts, got n = {arr.size}")
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"contrasts contain {bad} NaN or infinite value(s)")
    return arr


def check_confidence(confidence: float) -> float:
    """Two-sided confidence level, strictly inside (0, 1)."""
    try:
        c = float(confidence)
    except (TypeError, ValueError):
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}") from None
    if not (0.0 < c < 1.0):
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    return c


def check_scale(scale: str, d: NDArray[np.float64] | None = None) -> str:
    """``'difference'`` or ``'ratio'``; for ``ratio``, warn (:class:`RatioInputWarning`) when the
    contrasts ``d`` look like ratios rather than the natural-log ratios the methods take."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if scale == "ratio" and d is not None and looks_like_ratios(d):
        warnings.warn(
            "scale='ratio' takes natural-log ratios, but every contrast lies in [0.5, 2] and none is "
            "negative: these look like ratios. Pass np.log(ratios), build them with "
            "paired_contrast(..., scale='ratio'), or call estimators.compare on the raw values. (Log ratios "
            "this large mean every block's ratio is between 1.65 and 7.4.)",
            RatioInputWarning,
            stacklevel=3,
        )
    return scale


def looks_like_ratios(d: NDArray[np.float64]) -> bool:
    """All contrasts in [0.5, 2]: plain ratios near 1, not log ratios near 0."""
    return bool(d.size > 0 and float(np.min(d)) >= 0.5 and float(np.max(d)) <= 2.0)


def check_resamples(resamples: int, minimum: int = MIN_RESAMPLES) -> int:
    """A positive resample count (at least ``minimum``)."""
    if isinstance(resamples, bool) or int(resamples) != resamples or resamples < minimum:
        raise ValueError(f"resamples must be an integer >= {minimum}, got {resamples!r}")
    return int(resamples)


def tail_alpha(confidence: float) -> float:
    """Per-tail level of a two-sided interval."""
    return (1.0 - confidence) / 2.0


def floor_count(x: float) -> int:
    """``floor(x)`` tolerant of rounding just below an integer (``0.05 * 20 = 0.99999..``)."""
    return int(math.floor(x * (1.0 + 1e-12) + 1e-12))


def is_constant(d: NDArray[np.float64]) -> bool:
    """True when the contrasts do not vary: every value bitwise equal, or (a tolerance of zero
    in all but name) their standard deviation computes as exactly 0, which happens only when
    every deviation from the mean is below ~1e-154 and its square underflows. Contrasts that
    differ by any representable relative amount (1e-13, one ulp) vary and are tested."""
    if float(np.ptp(d)) == 0.0:
        return True
    return float(np.std(d)) == 0.0


def null_value(scale: str) -> float:
    """The stated null on the reported scale: 0 (difference) or 1 (ratio)."""
    return 1.0 if scale == "ratio" else 0.0


def to_reported(x: float, scale: str) -> float:
    """Analysis scale -> reported scale (``exp`` for ratios; infinities map to 0 / inf)."""
    return float(np.exp(x)) if scale == "ratio" else float(x)


def to_analysis(x: float, scale: str, what: str = "threshold") -> float:
    """Reported scale -> analysis scale; a ratio threshold must be positive and finite."""
    x = float(x)
    if scale == "ratio":
        if not (np.isfinite(x) and x > 0):
            raise ValueError(f"a ratio {what} must be positive and finite, got {x!r}")
        return float(np.log(x))
    if not np.isfinite(x):
        raise ValueError(f"{what} must be finite, got {x!r}")
    return x


def build_result(
    *, estimate: float, lower: float, upper: float, confidence: float, method: str, n: int, scale: str, **extra: object
) -> IntervalResult:
    """Make an :class:`IntervalResult` from analysis-scale values (back-transforms ratios)."""
    return IntervalResult(
        estimate=to_reported(estimate, scale),
        lower=to_reported(lower, scale),
        upper=to_reported(upper, scale),
        confidence=confidence,
        method=method,
        n=n,
        scale=scale,
        null=null_value(scale),
        **extra,  # type: ignore[arg-type]
    )


def degenerate_result(
    d: NDArray[np.float64],
    confidence: float,
    method: str,
    scale: str,
    df: float | None = None,
    extra_warnings: tuple[str, ...] = (),
    **extra: object,
) -> IntervalResult:
    """The marked degenerate interval ``lower = upper = estimate`` for constant contrasts."""
    value = float(np.mean(d))
    return build_result(
        estimate=value,
        lower=value,
        upper=value,
        confidence=confidence,
        method=method,
        n=int(d.size),
        scale=scale,
        df=df,
        pvalue=None,
        degenerate=True,
        contrasts=d,
        warnings=(DEGENERATE_WARNING, *extra_warnings),
        **extra,
    )


def two_sided(p_greater: float, p_less: float) -> float:
    """Two-sided p-value from the two one-sided ones: ``min(1, 2 min(p_greater, p_less))``."""
    return float(min(1.0, 2.0 * min(p_greater, p_less)))
