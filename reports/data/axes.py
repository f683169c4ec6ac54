"""Axes of the gate figures, shared by the HTML report's SVG and the PNG forest plot.

Pure functions of the artifact's numbers (no drawing, no statistics): the range one gate's axis
must hold (its interval, estimate, margins, null, the interval widened by the meter's bounds when
a resolution check was made, and every block's paired contrast), round tick values, and their
labels. Ratio gates are drawn on a log axis (ratios are analysed on the log scale); their ticks
always include 1x (the null) and are labelled also as percentage changes (0.95x is -5%).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from gates.numbers import as_float
from reports.words.evaluation import fmt_num

if TYPE_CHECKING:
    from gates.artifact import BlockRow, GateResult

MINUS = "\u2212"  # a real minus sign for labels
PAD = 0.06  # share of the axis left empty at each end


@dataclass(frozen=True)
class Axis:
    """A gate's axis: ``lo`` .. ``hi`` on the reported scale, logarithmic for ratios."""

    lo: float
    hi: float
    log: bool

    def _scaled(self, value: float) -> float:
        return math.log(value) if self.log else value

    def frac(self, value: float | None) -> float | None:
        """Where ``value`` falls, 0 (left) .. 1 (right), clamped; -inf/+inf at the edges; None when absent."""
        if value is None or math.isnan(value):
            return None
        if self.log and value <= 0:
            return 0.0
        if math.isinf(value):
            return 0.0 if value < 0 else 1.0
        a, b = self._scaled(self.lo), self._scaled(self.hi)
        return min(1.0, max(0.0, (self._scaled(value) - a) / (b - a)))

    def ticks(self) -> list[float]:
        return ratio_ticks(self.lo, self.hi) if self.log else linear_ticks(self.lo, self.hi)


def widened_interval(gate: GateResult) -> tuple[float, float] | None:
    """The interval widened by the meter's bounds (the outer ends of the resolution check's two
    extreme intervals), or None when no resolution check was recorded."""
    r = gate.resolution
    if r is None or not r.extremes:
        return None
    ends = [as_float(x) for pair in r.extremes for x in pair[:2]]
    values = [x for x in ends if x is not None and not math.isnan(x)]
    if not values:
        return None
    return min(values), max(values)


def block_points(gate: GateResult, blocks: Sequence[BlockRow]) -> list[tuple[str, float]]:
    """(block label, the block's paired contrast) of every block with a recorded contrast for ``gate``."""
    out = []
    for b in blocks:
        value = as_float(b.contrasts.get(gate.id))
        if value is not None and not math.isnan(value):
            out.append((b.block, value))
    return out


def gate_axis(gate: GateResult, points: Iterable[float] = ()) -> Axis:
    """The axis holding every finite value the gate's figures draw, padded at both ends."""
    log = gate.scale == "ratio"
    values = [
        as_float(gate.lower),
        as_float(gate.upper),
        as_float(gate.estimate),
        gate.null,
        *gate.margin,
        *(widened_interval(gate) or ()),
        *points,
    ]
    finite = [v for v in values if v is not None and math.isfinite(v) and (v > 0 or not log)]
    lo, hi = min(finite), max(finite)  # the null is always there
    if log:
        a, b = math.log(lo), math.log(hi)
        if b - a < 1e-9:
            a, b = a - 0.05, b + 0.05
        pad = (b - a) * PAD
        return Axis(math.exp(a - pad), math.exp(b + pad), True)
    if hi - lo <= 0:
        half = max(abs(lo), 1.0) * 0.5
        lo, hi = lo - half, hi + half
    pad = (hi - lo) * PAD
    return Axis(lo - pad, hi + pad, False)


def _nice_step(span: float, target: int) -> float:
    raw = span / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def linear_ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Round values inside [lo, hi] (multiples of 1, 2, 2.5 or 5 times a power of ten)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return []
    step = _nice_step(hi - lo, target)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + step * 1e-9:
        value = k * step
        ticks.append(0.0 if abs(value) < step * 1e-9 else float(f"{value:.12g}"))
        k += 1
    return ticks


def ratio_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """Round ratios inside [lo, hi] on a log axis, always with 1x when it lies inside.

    Narrow ranges (hi / lo < 3) get evenly spaced round ratios (0.9x, 0.95x, 1x: the log axis is
    nearly linear there); wider ones the 1-2-5 series, or powers of ten beyond 8 ticks.
    """
    if not (0 < lo < hi) or not math.isfinite(hi):
        return []
    if hi / lo < 3:
        ticks = linear_ticks(lo, hi, target)
        step = ticks[1] - ticks[0] if len(ticks) > 1 else hi - lo
    else:
        ticks = []
        for exponent in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
            ticks += [m * 10.0**exponent for m in (1, 2, 5) if lo <= m * 10.0**exponent <= hi]
        if len(ticks) > 8:
            ticks = [t for t in ticks if abs(math.log10(t) - round(math.log10(t))) < 1e-9]
        ticks = [float(f"{t:.12g}") for t in ticks]
        step = 0.0
    if lo <= 1.0 <= hi and 1.0 not in ticks:  # 1x always labelled; neighbours too close to it dropped

        def crowds(t: float) -> bool:
            return abs(t - 1.0) < 0.4 * step if step else abs(math.log(t)) < 0.25

        ticks = sorted({1.0, *(t for t in ticks if not crowds(t))})
    return [t for t in ticks if t > 0]


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text


def number_label(value: float, ticks: Sequence[float] = ()) -> str:
    """A tick value with as many decimals as its neighbours need ('0.005', '1.5e+13')."""
    if value == 0:
        return "0"
    steps = [abs(b - a) for a, b in pairwise(ticks) if b != a]
    if steps and 1e-4 <= abs(value) < 1e6:
        decimals = max(0, min(8, -math.floor(math.log10(min(steps))) + 1))
        text = _trim(f"{value:.{decimals}f}")
    else:
        text = fmt_num(value)
    return text.replace("-", MINUS) if text.startswith("-") else text


def pct_change(ratio: float) -> str:
    """A ratio as a percentage change: 0.95 -> '-5%', 1.2 -> '+20%', 1 -> '0%'."""
    if not math.isfinite(ratio):
        return "+inf%" if ratio > 0 else f"{MINUS}100%"
    pct = (ratio - 1.0) * 100.0
    if abs(pct) < 5e-10:
        return "0%"
    text = _trim(f"{abs(pct):.3g}" if abs(pct) < 1e4 else f"{abs(pct):.0f}")
    return ("+" if pct > 0 else MINUS) + text + "%"


def ratio_label(ratio: float) -> str:
    """'0.95x' ('+infx' never: infinite ends are drawn as arrows and labelled '+inf')."""
    if not math.isfinite(ratio):
        return "+inf" if ratio > 0 else "0"
    return f"{fmt_num(float(f'{ratio:.4g}'))}x"


def value_label(value: float, gate: GateResult) -> str:
    """A margin or null for a figure: '0.02 nats', '0.95x (-5%)'."""
    if gate.scale == "ratio":
        return f"{ratio_label(value)} ({pct_change(value)})"
    text = f"{fmt_num(value)} {gate.unit}".rstrip()
    return MINUS + text[1:] if text.startswith("-") else text
