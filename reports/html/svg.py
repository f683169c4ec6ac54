"""Inline SVG of the gate figures: one forest row per gate (its own axis) and each gate's per-stratum points.

Every x coordinate is a percentage of the figure's width and every size is in pixels, so a figure
fills its container at 360 px and on a desktop while its text keeps its size (no viewBox scaling).
Everything is drawn with presentation attributes (no stylesheet needed), so the same markup is a
standalone ``.svg`` file when given a fixed ``width`` (what ``reports show --markdown`` writes beside
the Markdown). Each figure carries a ``<title>`` and ``<desc>`` in words; the page puts a table with
the same numbers beside it. Every string from the artifact is escaped. No statistics: the numbers
are the artifact's, placed on the axis of :mod:`reports.html.axes`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gates.numbers import as_float
from reports.html.axes import Axis, linear_ticks, number_label, pct_change, ratio_label, value_label, widened_interval
from reports.words import evaluation as et
from reports.words.palette import VERDICT_COLOURS, VERDICT_WORDS
from reports.words.safe_text import clean

if TYPE_CHECKING:
    from gates.artifact import GateResult

DIAGNOSTIC_GREY = "#8c8c8c"
MARGIN_COLOUR, NULL_COLOUR, AXIS_COLOUR, TEXT_COLOUR = "#b35806", "#555555", "#444444", "#1f2328"
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"
X0, XW = 3.0, 94.0  # the plotting area, in percent of the width
LABEL_ROW = 14
MAX_LABELLED_ROWS = 40  # beyond this many blocks the per-stratum figure is one strip of points


def esc(value: object) -> str:
    """Text made literal in HTML and SVG (quotes too), control characters shown escaped (``safe_text``)."""
    return html.escape(clean(str(value)), quote=True)


def x_at(frac: float) -> str:
    return f"{X0 + XW * frac:.3f}%"


def _anchor(frac: float) -> str:
    return "start" if frac < 0.1 else "end" if frac > 0.9 else "middle"


def _text(
    x: str,
    y: float,
    text: str,
    *,
    size: int = 12,
    anchor: str = "middle",
    fill: str = TEXT_COLOUR,
    weight: str = "normal",
) -> str:
    return (
        f'<text x="{x}" y="{y:g}" font-size="{size}" text-anchor="{anchor}" fill="{fill}" '
        f'font-weight="{weight}">{esc(text)}</text>'
    )


def _vline(frac: float, y0: float, y1: float, colour: str, dash: str, width: float = 1.5) -> str:
    return (
        f'<line x1="{x_at(frac)}" x2="{x_at(frac)}" y1="{y0:g}" y2="{y1:g}" stroke="{colour}" '
        f'stroke-width="{width:g}" stroke-dasharray="{dash}"/>'
    )


def _glyph(frac: float, y: float, shape: str, fill: str, stroke: str = "none", size: float = 6.0) -> str:
    """A small shape centred at (frac, y): a nested svg, since polygons take no percentages."""
    s = size
    paths = {
        "diamond": f"M0,{-s} L{s},0 L0,{s} L{-s},0 Z",
        "right": f"M{-s},{-s} L{s},0 L{-s},{s} Z",
        "left": f"M{s},{-s} L{-s},0 L{s},{s} Z",
    }
    return (
        f'<svg x="{x_at(frac)}" y="{y:g}" width="1" height="1" overflow="visible">'
        f'<path d="{paths[shape]}" fill="{fill}" stroke="{stroke}" stroke-width="1"/></svg>'
    )


def _label_rows(labels: list[tuple[float, str, str]]) -> list[tuple[float, str, str, int]]:
    """Greedy rows for labels at fractions of the width, so that no two on a row come too close."""
    rows: list[float] = []
    out = []
    for frac, text, colour in sorted(labels):
        for i, last in enumerate(rows):
            if frac - last > 0.3:
                rows[i] = frac
                out.append((frac, text, colour, i))
                break
        else:
            rows.append(frac)
            out.append((frac, text, colour, len(rows) - 1))
    return out


def _label_texts(labels: list[tuple[float, str, str, int]]) -> list[str]:
    return [
        _text(x_at(f), 12 + LABEL_ROW * row, text, size=11, anchor=_anchor(f), fill=c) for f, text, c, row in labels
    ]


def axis_marks(gate: GateResult, axis: Axis, y: float) -> tuple[list[str], float]:
    """The axis line at ``y`` with its ticks (ratios also as % change) and caption; returns the height used."""
    ticks = axis.ticks()
    out = [f'<line x1="{x_at(0)}" x2="{x_at(1)}" y1="{y:g}" y2="{y:g}" stroke="{AXIS_COLOUR}" stroke-width="1"/>']
    for t in ticks:
        f = axis.frac(t)
        if f is None:
            continue
        out.append(f'<line x1="{x_at(f)}" x2="{x_at(f)}" y1="{y:g}" y2="{y + 5:g}" stroke="{AXIS_COLOUR}"/>')
        label = ratio_label(t) if axis.log else number_label(t, ticks)
        out.append(_text(x_at(f), y + 18, label, size=11, anchor=_anchor(f)))
        if axis.log:
            out.append(_text(x_at(f), y + 31, pct_change(t), size=10, anchor=_anchor(f), fill=NULL_COLOUR))
    caption_y = y + (46 if axis.log else 33)
    caption = (
        f"ratio {gate.contrast} (log axis; second row: % change)"
        if axis.log
        else f"{gate.contrast}, {gate.unit}"
        if gate.unit
        else gate.contrast
    )
    out.append(_text(x_at(0.5), caption_y, caption, size=11, fill=NULL_COLOUR))
    return out, caption_y + 6 - y


def _reference_labels(gate: GateResult, axis: Axis) -> list[tuple[float, str, str, int]]:
    labels = []
    for m in gate.margin:
        f = axis.frac(m)
        if f is not None:
            labels.append((f, f"margin {value_label(m, gate)}", MARGIN_COLOUR))
    f = axis.frac(gate.null)
    if f is not None:
        labels.append(
            (f, f"null {ratio_label(gate.null) if gate.scale == 'ratio' else number_label(gate.null)}", NULL_COLOUR)
        )
    return _label_rows(labels)


def _widened_band(gate: GateResult, axis: Axis, y: float) -> list[str]:
    """The interval widened by the meter's bounds, as a light dashed band behind the interval."""
    widened = widened_interval(gate)
    if widened is None:
        return []
    a, b = axis.frac(widened[0]), axis.frac(widened[1])
    if a is None or b is None:
        return []
    return [
        f'<rect x="{x_at(a)}" width="{XW * max(b - a, 0.004):.3f}%" y="{y - 11:g}" height="22" '
        f'fill="#f6e7b4" stroke="{VERDICT_COLOURS["unresolvable"]}" stroke-dasharray="3 2"/>'
    ]


def _interval_marks(gate: GateResult, axis: Axis, y: float, colour: str, diagnostic: bool) -> list[str]:
    """The interval (a bar, arrows at infinite ends) and the estimate (a diamond)."""
    out = []
    lower, upper = as_float(gate.lower), as_float(gate.upper)
    if lower is None or upper is None:
        out.append(_text(x_at(0.5), y + 4, "no interval", size=11, fill=NULL_COLOUR))
    else:
        a, b = axis.frac(lower), axis.frac(upper)
        assert a is not None and b is not None
        dash = ' stroke-dasharray="4 2"' if diagnostic else ""
        fill = "#d9d9d9" if diagnostic else colour
        out.append(
            f'<rect x="{x_at(a)}" width="{XW * max(b - a, 0.004):.3f}%" y="{y - 5:g}" height="10" '
            f'fill="{fill}" stroke="{colour}"{dash}/>'
        )
        for end, f, shape in ((lower, a, "left"), (upper, b, "right")):
            if math.isinf(end) or (axis.log and end <= 0):
                out.append(_glyph(f, y, shape, colour, size=7))
                label = "+inf" if end > 0 else ("0" if axis.log else "\u2212inf")
                out.append(_text(x_at(f), y - 9, label, size=10, anchor="end" if end > 0 else "start", fill=colour))
    est = as_float(gate.estimate)
    at = axis.frac(est) if est is not None and math.isfinite(est) else None
    if at is not None:
        out.append(_glyph(at, y, "diamond", "#000000", "#ffffff", size=6))
    return out


def _open(uid: str, height: float, width: str, title: str, desc: str) -> str:
    xmlns = ' xmlns="http://www.w3.org/2000/svg"' if width != "100%" else ""
    return (
        f'<svg{xmlns} class="figure" width="{width}" height="{height:g}" role="img" '
        f'aria-labelledby="{uid}-t {uid}-d" font-family="{esc(FONT)}">'
        f'<title id="{uid}-t">{esc(title)}</title><desc id="{uid}-d">{esc(desc)}</desc>'
    )


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


def forest_row(
    gate: GateResult, axis: Axis, points: Sequence[float], *, uid: str, diagnostic: bool = False, width: str = "100%"
) -> str:
    """One gate's forest row: margin and null labelled, interval, estimate, the strata's points, its axis."""
    colour = DIAGNOSTIC_GREY if diagnostic else VERDICT_COLOURS[gate.verdict]
    labels = _reference_labels(gate, axis)
    top = 4 + LABEL_ROW * (1 + max((row for *_, row in labels), default=-1))
    bar_y = top + 18
    dots_y = bar_y + 20
    axis_y = dots_y + (14 if points else 0)
    body = _label_texts(labels)
    body += _widened_band(gate, axis, bar_y)
    body += _reference_lines(gate, axis, top, axis_y)
    body += _interval_marks(gate, axis, bar_y, colour, diagnostic)
    for value in points:
        f = axis.frac(value)
        if f is not None:
            body.append(
                f'<circle cx="{x_at(f)}" cy="{dots_y:g}" r="3.5" fill="#ffffff" fill-opacity="0.6" '
                f'stroke="{TEXT_COLOUR}" stroke-width="1"/>'
            )
    marks, used = axis_marks(gate, axis, axis_y)
    height = axis_y + used
    title = f"Forest row of gate {gate.id}" + (" (diagnostic, not evidence)" if diagnostic else "")
    return _open(uid, height, width, title, describe(gate, len(points))) + "".join(body + marks) + "</svg>"


def _reference_lines(gate: GateResult, axis: Axis, top: float, bottom: float) -> list[str]:
    """The gate's margin(s) (dashed) and null (dotted) as vertical lines from ``top`` to ``bottom``."""
    lines = []
    for m in gate.margin:
        f = axis.frac(m)
        if f is not None:
            lines.append(_vline(f, top, bottom, MARGIN_COLOUR, "6 3"))
    f = axis.frac(gate.null)
    if f is not None:
        lines.append(_vline(f, top, bottom, NULL_COLOUR, "2 3", 1.2))
    return lines


def strata_plot(
    gate: GateResult, axis: Axis, points: Sequence[tuple[str, float]], *, uid: str, width: str = "100%"
) -> str:
    """Each block's paired contrast on the gate's axis, one labelled row per block (a strip beyond
    ``MAX_LABELLED_ROWS``), over a light band for the gate's interval, with margin and null lines."""
    labelled = len(points) <= MAX_LABELLED_ROWS
    labels = _reference_labels(gate, axis)
    top = 4 + LABEL_ROW * (1 + max((row for *_, row in labels), default=-1))
    row_h = 30 if labelled else 0
    axis_y = top + (row_h * len(points) if labelled else 24) + 6
    body = _label_texts(labels)
    lower, upper = as_float(gate.lower), as_float(gate.upper)
    if lower is not None and upper is not None:
        a, b = axis.frac(lower), axis.frac(upper)
        if a is not None and b is not None:
            body.append(
                f'<rect x="{x_at(a)}" width="{XW * max(b - a, 0.004):.3f}%" y="{top:g}" '
                f'height="{axis_y - top:g}" fill="#eaeef2"/>'
            )
    body += _reference_lines(gate, axis, top, axis_y)

    for i, (label, value) in enumerate(points):
        f = axis.frac(value)
        if f is None:
            continue
        y = top + row_h * i + 21 if labelled else top + 12
        if labelled:
            body.append(
                f'<line x1="{x_at(0)}" x2="{x_at(1)}" y1="{y:g}" y2="{y:g}" stroke="#d0d7de" stroke-width="0.8"/>'
            )
            body.append(_text(x_at(0), y - 7, f"{label}: {et.with_unit(value, gate)}", size=11, anchor="start"))
        body.append(
            f'<circle cx="{x_at(f)}" cy="{y:g}" r="4.5" fill="{TEXT_COLOUR}" fill-opacity="0.75" '
            'stroke="#ffffff" stroke-width="1"/>'
        )
    marks, used = axis_marks(gate, axis, axis_y)
    layout = "one row each" if labelled else "one strip"
    desc = (
        f"{len(points)} blocks' paired contrasts of gate {gate.id} on its axis ({layout}), "
        f"the gate's interval as a shaded band, margin and null as lines; the table beside lists each value"
    )
    return (
        _open(uid, axis_y + used, width, f"Per-stratum paired contrasts of gate {gate.id}", desc)
        + "".join(body + marks)
        + "</svg>"
    )


def linear_axis(end: float, y: float, label: str, fx: Callable[[float], float]) -> list[str]:
    """An x axis from 0 to ``end`` at height ``y`` (px): the line, ticks at round values placed by
    ``fx`` (value -> fraction of the plot's width), their labels, and ``label`` under them."""
    body = [f'<line x1="{x_at(0)}" x2="{x_at(1)}" y1="{y:g}" y2="{y:g}" stroke="{AXIS_COLOUR}"/>']
    ticks = linear_ticks(0.0, end)
    for tick in ticks:
        f = fx(tick)
        anchor = "start" if f < 0.05 else "end" if f > 0.95 else "middle"
        body.append(f'<line x1="{x_at(f)}" x2="{x_at(f)}" y1="{y:g}" y2="{y + 5:g}" stroke="{AXIS_COLOUR}"/>')
        body.append(
            f'<text x="{x_at(f)}" y="{y + 18:g}" font-size="11" text-anchor="{anchor}" fill="{TEXT_COLOUR}">'
            f"{esc(number_label(tick, ticks))}</text>"
        )
    body.append(
        f'<text x="{x_at(0.5)}" y="{y + 34:g}" font-size="11" text-anchor="middle" fill="{NULL_COLOUR}">'
        f"{esc(label)}</text>"
    )
    return body
