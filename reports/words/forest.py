"""Text forest bars: one gate's interval, estimate, margin(s) and null on a fixed-width axis.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MARGIN, ESTIMATE, LOWER, UPPER, INSIDE, EMPTY = "|", "*", "[", "]", "-", "."
MINUS_INF, PLUS_INF = "<", ">"
LEGEND = "[ ] interval, * estimate, | margin, 0/1 null, < > interval end at infinity"
MIN_WIDTH = 7


def _scaled(value: float | None, log: bool) -> float | None:
    """A value on the axis's scale: log for ratio axes (a ratio <= 0 is minus infinity)."""
    if value is None:
        return None
    if log:
        return math.log(value) if value > 0 else -math.inf
    return float(value)


def forest_axis(
    lower: float | None,
    upper: float | None,
    estimate: float | None,
    margin_marks: Sequence[float],
    null: float,
    *,
    log: bool = False,
) -> tuple[float, float]:
    """The axis range (on the reported scale) that holds every finite value of the bar."""
    values = [_scaled(v, log) for v in (lower, upper, estimate, null, *margin_marks)]
    finite = [v for v in values if v is not None and math.isfinite(v)]
    lo, hi = min(finite), max(finite)  # the null is always finite
    if hi == lo:
        pad = max(abs(lo), 1.0) * 0.5 if not log else 0.1
        lo, hi = lo - pad, hi + pad
    if log:
        return math.exp(lo), math.exp(hi)
    return lo, hi


def forest_bar(
    lower: float | None,
    upper: float | None,
    estimate: float | None,
    margin_marks: Sequence[float],
    null: float,
    width: int = 40,
    *,
    log: bool = False,
) -> str:
    """The bar as a string of exactly ``width`` characters (see the module doc for the marks).

    ``lower`` / ``upper`` may be infinite (an arrow at that edge) or None (no interval drawn, e.g.
    a refused gate without one); ``estimate`` may be None.
    """
    if width < MIN_WIDTH:
        raise ValueError(f"a forest bar needs at least {MIN_WIDTH} columns")
    lo_axis, hi_axis = (_scaled(v, log) for v in forest_axis(lower, upper, estimate, margin_marks, null, log=log))
    assert lo_axis is not None and hi_axis is not None
    steps = width - 3

    def column(value: float | None) -> int | None:
        v = _scaled(value, log)
        if v is None:
            return None
        if v == -math.inf:
            return 0
        if v == math.inf:
            return width - 1
        return 1 + round((v - lo_axis) / (hi_axis - lo_axis) * steps)

    cells = [EMPTY] * width
    lc, uc = column(lower), column(upper)
    if lc is not None and uc is not None:
        if lc > uc:  # a malformed interval: draw it as given rather than hide it
            lc, uc = uc, lc
        if lc == uc:  # a single-column interval still shows both ends
            if uc + 1 <= width - 2:
                uc += 1
            else:
                lc -= 1
        for c in range(lc, uc + 1):
            cells[c] = INSIDE
        cells[lc] = MINUS_INF if lc == 0 else LOWER
        cells[uc] = PLUS_INF if uc == width - 1 else UPPER
    nc = column(null)
    if nc is not None:
        cells[nc] = "1" if log or null == 1 else "0"
    ec = column(estimate)
    if ec is not None and 0 < ec < width - 1:
        cells[ec] = ESTIMATE
    for m in margin_marks:
        mc = column(m)
        if mc is not None:
            cells[mc] = MARGIN
    return "".join(cells)
