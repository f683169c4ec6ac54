"""The HTML page's interim-looks section: the status, a small look chart per primary gate, the look table,
and the estimates that account for the looks (repeated intervals; after a stop, the ordering p-value,
median-unbiased estimate and final interval).

A chart puts pairing blocks on x (0 to the plan's last look, percent of the width) and the
evidence ``-log10 p`` on y (px): each planned look's efficacy bound (and non-binding futility
bound), and the p-values the look ledger recorded as dots. The table below says the same in
numbers; nothing is computed here (``templates/looks.html`` draws it).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from markupsafe import Markup

from reports.html.render import macro
from reports.words import monitoring as mt
from reports.words.palette import MUTED, VERDICT_COLOURS

if TYPE_CHECKING:
    from gates.artifact import Evaluation
    from gates.artifact_monitoring import GateLooks, MonitoringResult

TOP, BOTTOM = 18.0, 136.0
X0, XW = 8.0, 88.0  # plotting area, percent of the width


def _x(blocks: float, total: float) -> str:
    return f"{X0 + XW * blocks / total:.3f}%"


def _evidence(p: float | None) -> float | None:
    return None if p is None or not p > 0 else -math.log10(p)


def look_chart(m: MonitoringResult, gate: GateLooks, uid: str) -> Markup:
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
    top_value = (
        max([1.0, *(v for _, e, f in bounds for v in (e, f) if v is not None), *(e for _, e, _ in points)]) * 1.1
    )

    def y(value: float | None) -> float | None:
        return None if value is None else BOTTOM - (BOTTOM - TOP) * min(value, top_value) / top_value

    merged: dict[tuple[float, float], list[str]] = {}  # evaluations of one point share a dot and one label
    for at, e, label in points:
        merged.setdefault((at, round(e, 6)), []).append(label)
    desc = (
        f"Gate {gate.id}: evidence -log10 p against pairing blocks; efficacy bound at each planned look "
        + ", ".join(f"{b:g} blocks {e:.2f}" for b, e, _ in bounds if e is not None)
        + "; this evaluation "
        + (f"{here:.2f} at {m.point_blocks} blocks" if here is not None else "has no p-value")
    )
    return macro("looks.html", "look_chart")(
        uid=uid,
        title=f"Looks of gate {gate.id}",
        desc=desc,
        x0=_x(0, total),
        x1=_x(total, total),
        top=TOP,
        bottom=BOTTOM,
        muted=MUTED.hex,
        pass_colour=VERDICT_COLOURS["pass"],
        fail_colour=VERDICT_COLOURS["fail"],
        bounds=[(_x(b, total), b, y(e), y(f)) for b, e, f in bounds],
        points=[(_x(at, total), y(e), ", ".join(labels)) for (at, e), labels in merged.items()],
    )


def looks_section(ev: Evaluation) -> Markup:
    """The section's HTML ("" for an unmonitored plan)."""
    m = ev.monitoring
    if m is None:
        return Markup()
    return macro("looks.html", "looks_section")(
        "interim" if m.status == "interim_reading" else "look",
        mt.status_word(ev) or "",
        mt.status_sentence(m),
        [look_chart(m, g, f"look-chart-{i}") for i, g in enumerate(m.gates)],
        mt.LOOK_COLUMNS,
        mt.look_rows(m),
        mt.gate_lines(m, estimates=False) + mt.history_lines(m),
        mt.INTERVAL_COLUMNS,
        mt.interval_rows(m),
        mt.after_stop_lines(m, intervals=False),
    )
