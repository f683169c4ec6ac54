"""The gate figures as inline SVG: one forest row per gate (its own axis) and each gate's per-stratum points.

x is in percent of the figure's width and sizes in pixels (no viewBox scaling), presentation
attributes only, so the markup is also a standalone ``.svg`` given a fixed ``width``. Each figure
has a ``<title>`` and ``<desc>`` in words. This module places the artifact's numbers on the axis
of :mod:`reports.data.axes`; ``templates/svg.html`` draws them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from markupsafe import Markup

from gates.numbers import as_float
from reports.data.axes import Axis, linear_ticks, number_label, pct_change, ratio_label, value_label, widened_interval
from reports.html.render import COLOURS, XW, macro, x_at
from reports.words import evaluation as et
from reports.words.palette import VERDICT_COLOURS, VERDICT_WORDS

if TYPE_CHECKING:
    from gates.artifact import GateResult

LABEL_ROW = 14
MAX_LABELLED_ROWS = 40  # beyond this many blocks the per-stratum figure is one strip of points


class AxisMarks(NamedTuple):
    """A gate's axis at ``y`` px: ticks (x, label, % change or None, anchor), its caption, the height used."""

    y: float
    ticks: list[tuple[str, str, str | None, str]]
    caption: str
    caption_y: float
    height: float


class LinearAxis(NamedTuple):
    """An axis from 0 at ``y`` px: ticks (x, label, anchor) and the label under them."""

    y: float
    ticks: list[tuple[str, str, str]]
    label: str


class Bar(NamedTuple):
    """A gate's interval: where it starts, its width, its fill, and its infinite ends (x, path, label, anchor)."""

    x: str
    w: str
    fill: str
    ends: list[tuple[str, str, str, str]]


def anchor(frac: float, edge: float = 0.1) -> str:
    """Labels near an edge grow inwards, so none reaches past the figure."""
    return "start" if frac < edge else "end" if frac > 1 - edge else "middle"


def span(a: float, b: float, least: float = 0.004) -> str:
    """The width of ``a``..``b`` (fractions) in percent of the figure, at least ``least``."""
    return f"{XW * max(b - a, least):.3f}%"


def glyph_path(shape: str, s: float) -> str:
    return {
        "diamond": f"M0,{-s} L{s},0 L0,{s} L{-s},0 Z",
        "right": f"M{-s},{-s} L{s},0 L{-s},{s} Z",
        "left": f"M{s},{-s} L{-s},0 L{s},{s} Z",
    }[shape]


def _labels(gate: GateResult, axis: Axis) -> tuple[list[tuple[str, int, str, str, str]], int]:
    """The margin and null labels in greedy rows (no two on a row too close); and the rows used."""
    found = [
        (f, f"margin {value_label(m, gate)}", COLOURS["MARGIN"]) for m in gate.margin if (f := axis.frac(m)) is not None
    ]
    if (f := axis.frac(gate.null)) is not None:
        null = ratio_label(gate.null) if gate.scale == "ratio" else number_label(gate.null)
        found.append((f, f"null {null}", COLOURS["NULL"]))
    rows: list[float] = []
    out = []
    for frac, text, colour in sorted(found):
        row = next((i for i, last in enumerate(rows) if frac - last > 0.3), len(rows))
        rows[row : row + 1] = [frac]
        out.append((x_at(frac), 12 + LABEL_ROW * row, text, anchor(frac), colour))
    return out, len(rows)


def _references(gate: GateResult, axis: Axis) -> list[tuple[str, str, str, float]]:
    """The margin(s) (dashed) and null (dotted) as vertical lines: (x, colour, dash, width)."""
    lines = [(x_at(f), COLOURS["MARGIN"], "6 3", 1.5) for m in gate.margin if (f := axis.frac(m)) is not None]
    if (f := axis.frac(gate.null)) is not None:
        lines.append((x_at(f), COLOURS["NULL"], "2 3", 1.2))
    return lines


def axis_marks(gate: GateResult, axis: Axis, y: float) -> AxisMarks:
    """The axis at ``y``: ticks (ratios also as % change), caption, and the height it uses."""
    ticks = axis.ticks()
    marks = []
    for t in ticks:
        if (f := axis.frac(t)) is not None:
            label = ratio_label(t) if axis.log else number_label(t, ticks)
            marks.append((x_at(f), label, pct_change(t) if axis.log else None, anchor(f)))
    caption_y = y + (46 if axis.log else 33)
    if axis.log:
        caption = f"ratio {gate.contrast} (log axis; second row: % change)"
    else:
        caption = f"{gate.contrast}, {gate.unit}" if gate.unit else gate.contrast
    return AxisMarks(y, marks, caption, caption_y, caption_y + 6 - y)


def linear_axis(end: float, y: float, label: str, fx: Callable[[float], float]) -> LinearAxis:
    """An x axis from 0 to ``end`` at ``y`` px, ticks at round values placed by ``fx`` (value -> fraction)."""
    ticks = linear_ticks(0.0, end)
    marks = [(x_at(fx(t)), number_label(t, ticks), anchor(fx(t), 0.05)) for t in ticks]
    return LinearAxis(y, marks, label)


def describe(gate: GateResult, n_points: int) -> str:
    """The figure's content in words (its ``desc``)."""
    words = [
        f"{gate.id}: {VERDICT_WORDS[gate.verdict]}",
        f"estimate {et.with_unit(gate.estimate, gate)}",
        et.interval_text(gate),
        f"rule {et.rule_text(gate)}",
        f"null {ratio_label(gate.null) if gate.scale == 'ratio' else number_label(gate.null)}",
    ]
    widened = widened_interval(gate)
    if widened is not None:
        words.append(f"interval widened by the meter's bounds: [{et.fmt_num(widened[0])}, {et.fmt_num(widened[1])}]")
    if n_points:
        words.append(f"{n_points} per-stratum paired contrasts drawn as circles")
    return "; ".join(words)


def _interval(gate: GateResult, axis: Axis, colour: str, diagnostic: bool) -> Bar | None:
    """The interval bar and its infinite ends (arrows), or None without an interval."""
    lower, upper = as_float(gate.lower), as_float(gate.upper)
    if lower is None or upper is None:
        return None
    a, b = axis.frac(lower), axis.frac(upper)
    assert a is not None and b is not None
    ends = []
    for end, f, shape in ((lower, a, "left"), (upper, b, "right")):
        if math.isinf(end) or (axis.log and end <= 0):
            label = "+inf" if end > 0 else ("0" if axis.log else "\u2212inf")
            ends.append((x_at(f), glyph_path(shape, 7), label, "end" if end > 0 else "start"))
    return Bar(x_at(a), span(a, b), "#d9d9d9" if diagnostic else colour, ends)


def forest_row(
    gate: GateResult, axis: Axis, points: Sequence[float], *, uid: str, diagnostic: bool = False, width: str = "100%"
) -> Markup:
    """One gate's forest row: margin and null labelled, interval, estimate, the strata's points, its axis."""
    colour = COLOURS["GREY"] if diagnostic else VERDICT_COLOURS[gate.verdict]
    labels, rows = _labels(gate, axis)
    top = 4 + LABEL_ROW * rows
    bar_y = top + 18
    dots_y = bar_y + 20
    marks = axis_marks(gate, axis, dots_y + (14 if points else 0))
    widened = widened_interval(gate) or (math.nan, math.nan)
    a, b = axis.frac(widened[0]), axis.frac(widened[1])
    band = (x_at(a), span(a, b), VERDICT_COLOURS["unresolvable"]) if a is not None and b is not None else None
    est = as_float(gate.estimate)
    at = axis.frac(est) if est is not None and math.isfinite(est) else None
    title = f"Forest row of gate {gate.id}" + (" (diagnostic, not evidence)" if diagnostic else "")
    return macro("svg.html", "forest_row")(
        uid=uid,
        width=width,
        height=marks.y + marks.height,
        title=title,
        desc=describe(gate, len(points)),
        labels=labels,
        band=band,
        refs=_references(gate, axis),
        top=top,
        bar_y=bar_y,
        colour=colour,
        diagnostic=diagnostic,
        bar=_interval(gate, axis, colour, diagnostic),
        diamond=glyph_path("diamond", 6),
        estimate=x_at(at) if at is not None else None,
        dots_y=dots_y,
        axis=marks,
        dots=[x_at(f) for v in points if (f := axis.frac(v)) is not None],
    )


def strata_plot(
    gate: GateResult, axis: Axis, points: Sequence[tuple[str, float]], *, uid: str, width: str = "100%"
) -> Markup:
    """Each block's paired contrast on the gate's axis, one labelled row per block (a strip beyond
    ``MAX_LABELLED_ROWS``), over a light band for the gate's interval, with margin and null lines."""
    labelled = len(points) <= MAX_LABELLED_ROWS
    labels, used = _labels(gate, axis)
    top = 4 + LABEL_ROW * used
    row_h = 30 if labelled else 0
    marks = axis_marks(gate, axis, top + (row_h * len(points) if labelled else 24) + 6)
    lower, upper = as_float(gate.lower), as_float(gate.upper)
    band = None
    if lower is not None and upper is not None:
        a, b = axis.frac(lower), axis.frac(upper)
        band = (x_at(a), span(a, b)) if a is not None and b is not None else None
    rows = [
        (top + row_h * i + 21, x_at(f), f"{label}: {et.with_unit(value, gate)}")
        if labelled
        else (top + 12, x_at(f), None)
        for i, (label, value) in enumerate(points)
        if (f := axis.frac(value)) is not None
    ]
    desc = (
        f"{len(points)} blocks' paired contrasts of gate {gate.id} on its axis "
        f"({'one row each' if labelled else 'one strip'}), the gate's interval as a shaded band, margin and "
        "null as lines; the table beside lists each value"
    )
    return macro("svg.html", "strata_plot")(
        uid=uid,
        width=width,
        height=marks.y + marks.height,
        title=f"Per-stratum paired contrasts of gate {gate.id}",
        desc=desc,
        labels=labels,
        band=band,
        refs=_references(gate, axis),
        top=top,
        rows=rows,
        axis=marks,
    )


HATCHES = ("////", "\\\\\\\\", "xxxx", "xx", "....", "++")  # the PNG's hatches, in the order of macros.html hatch_defs


def hatch_fill(uid: str, hatch: str) -> str | None:
    """The fill drawing ``hatch`` with the patterns ``hatch_defs(uid)`` defines, or None."""
    return f"url(#{uid}-h{HATCHES.index(hatch)})" if hatch in HATCHES else None
