"""The HTML page's interim-looks section: the status, a small look chart per primary gate, the look table.

The chart (inline SVG, drawn like :mod:`reports.html.svg`'s figures: x in percent of the width,
sizes in pixels, presentation attributes only) puts the pairing blocks on x (0 to the plan's last
look) and the evidence ``-log10 p`` of the gate's rule p-value on y. At each planned look it marks
the efficacy bound ``-log10(nominal alpha)`` (a pass above it, in pass's colour) and, with
non-binding futility, the futility bound ``-log10(futility p)`` (fail's colour); the p-values the
look ledger recorded at earlier looks and this evaluation's are dots. Every mark is also a row of
the table below it, in words: the chart only repeats the table. No statistics here: the numbers are
the artifact's.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from reports.html.svg import AXIS_COLOUR, FONT, TEXT_COLOUR, esc
from reports.words import monitoring as mt
from reports.words.palette import MUTED, VERDICT_COLOURS

if TYPE_CHECKING:
    from gates.artifact import Evaluation
    from gates.artifact_monitoring import GateLooks, MonitoringResult

HEIGHT, TOP, BOTTOM = 170.0, 18.0, 136.0
X0, XW = 8.0, 88.0  # plotting area, percent of the width


def _x(blocks: float, total: float) -> str:
    return f"{X0 + XW * blocks / total:.3f}%"


def _evidence(p: float | None) -> float | None:
    return None if p is None or not p > 0 else -math.log10(p)


def _y(value: float, top_value: float) -> float:
    return BOTTOM - (BOTTOM - TOP) * min(value, top_value) / top_value


def look_chart(m: MonitoringResult, gate: GateLooks, uid: str) -> str:
    """One gate's looks as an inline SVG (module doc)."""
    total = float(m.total_blocks)
    points: list[tuple[float, float, str]] = []  # (blocks, evidence, label)
    for entry in m.history:
        e = _evidence(entry.pvalues.get(gate.id))
        if e is not None:
            points.append((entry.point_blocks, e, f"#{entry.seq}"))
    here = _evidence(gate.pvalue)
    if here is not None:
        points.append((m.point_blocks, here, f"#{m.sequence} (this)"))
    bounds = [(b.blocks, _evidence(b.nominal_alpha), _evidence(b.futility_p)) for b in gate.looks]
    values = [v for _, e, f in bounds for v in (e, f) if v is not None] + [e for _, e, _ in points]
    top_value = max([1.0, *values]) * 1.1
    pass_colour, fail_colour, muted = VERDICT_COLOURS["pass"], VERDICT_COLOURS["fail"], MUTED.hex
    desc = (
        f"Gate {gate.id}: evidence -log10 p against pairing blocks; efficacy bound at each planned look "
        + ", ".join(f"{b:g} blocks {e:.2f}" for b, e, _ in bounds if e is not None)
        + "; this evaluation "
        + (f"{here:.2f} at {m.point_blocks} blocks" if here is not None else "has no p-value")
    )
    out = [
        f'<svg class="figure look-chart" width="100%" height="{HEIGHT:g}" role="img" aria-labelledby="{uid}-t '
        f'{uid}-d" font-family="{esc(FONT)}"><title id="{uid}-t">{esc(f"Looks of gate {gate.id}")}</title>'
        f'<desc id="{uid}-d">{esc(desc)}</desc>',
        f'<line x1="{_x(0, total)}" x2="{_x(total, total)}" y1="{BOTTOM:g}" y2="{BOTTOM:g}" stroke="{AXIS_COLOUR}"/>',
        f'<text x="{_x(0, total)}" y="{TOP - 6:g}" font-size="11" fill="{TEXT_COLOUR}">-log10 p (higher: stronger '
        "evidence)</text>",
    ]
    for blocks, eff, fut in bounds:
        x = _x(blocks, total)
        out.append(f'<line x1="{x}" x2="{x}" y1="{TOP:g}" y2="{BOTTOM:g}" stroke="{muted}" stroke-dasharray="2 3"/>')
        out.append(
            f'<text x="{x}" y="{BOTTOM + 14:g}" font-size="11" text-anchor="middle" fill="{TEXT_COLOUR}">'
            f"{blocks}</text>"
        )
        if eff is not None:
            y = _y(eff, top_value)
            out.append(
                f'<svg x="{x}" y="{y:g}" width="1" height="1" overflow="visible"><path d="M-7,0 L7,0" '
                f'stroke="{pass_colour}" stroke-width="3"/></svg>'
            )
        if fut is not None:
            y = _y(fut, top_value)
            out.append(
                f'<svg x="{x}" y="{y:g}" width="1" height="1" overflow="visible"><path d="M-7,0 L7,0" '
                f'stroke="{fail_colour}" stroke-width="3" stroke-dasharray="3 2"/></svg>'
            )
    merged: dict[tuple[float, float], list[str]] = {}  # evaluations of one point share a dot and one label
    for at, e, label in points:
        merged.setdefault((at, round(e, 6)), []).append(label)
    for (at, e), labels in merged.items():
        label = ", ".join(labels)
        x, y = _x(at, total), _y(e, top_value)
        out.append(f'<circle cx="{x}" cy="{y:g}" r="4" fill="{TEXT_COLOUR}"/>')
        out.append(
            f'<text x="{x}" y="{y - 7:g}" font-size="10" text-anchor="middle" fill="{TEXT_COLOUR}">{esc(label)}</text>'
        )
    out.append(
        f'<text x="{_x(total, total)}" y="{BOTTOM + 28:g}" font-size="11" text-anchor="end" '
        f'fill="{TEXT_COLOUR}">pairing blocks</text></svg>'
    )
    return "".join(out)


def looks_section(ev: Evaluation) -> str:
    """The section's HTML ("" for an unmonitored plan)."""
    m = ev.monitoring
    if m is None:
        return ""
    word = mt.status_word(ev) or ""
    cls = "interim" if m.status == "interim_reading" else "look"
    head = f'<p class="{cls}"><strong>{esc(word)}</strong>: {esc(mt.status_sentence(m))}</p>'
    legend = (
        '<p class="legend">Chart: the solid bar at each planned look is the efficacy bound (above it the gate '
        "passes there), the dashed bar the non-binding futility bound (below it the gate is futile), dots the "
        "p-values recorded at each look (#: look ledger record). The table says the same in numbers.</p>"
    )
    charts = "".join(look_chart(m, g, f"look-chart-{i}") for i, g in enumerate(m.gates))
    rows = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in mt.look_rows(m))
    table = (
        '<table class="looks"><caption>Planned looks: one-sided levels per gate</caption><thead><tr>'
        + "".join(f'<th scope="col">{esc(c)}</th>' for c in mt.LOOK_COLUMNS)
        + f"</tr></thead><tbody>{rows}"
        "</tbody></table>"
    )
    lines = "".join(f"<li>{esc(line)}</li>" for line in mt.gate_lines(m) + mt.history_lines(m))
    return head + legend + charts + table + (f"<ul>{lines}</ul>" if lines else "")
