"""The HTML report's telemetry section: each kept trace embedded compressed, drawn on demand.

The points are those the PNG draws (:mod:`reports.data.telemetry`, trace re-hashed against its
record) as gzip + base64 JSON in a non-executed ``<script type="application/gzip+base64">``, drawn
by the page's script when asked; the text equivalent is ``reports plot RUNS --run ID --telemetry``'s.
Embedding stops at ``EMBED_BUDGET`` bytes; later traces are listed with the command that draws them.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
from typing import TYPE_CHECKING, Any, NamedTuple

from markupsafe import Markup

from prereg.errors import InputError, IntegrityError
from reports.data.origin import origins_text
from reports.data.telemetry import drawn, energy_scale, load_telemetry
from reports.html.render import macro
from reports.plots.figures import merge_spans
from reports.plots.telemetry import OTHER_PHASE, PHASE_STYLE, telemetry_text

if TYPE_CHECKING:
    from reports.data.telemetry import Drawn, TelemetryView
    from reports.html.runs import RunsContext

EMBED_BUDGET = 4 << 20  # compressed bytes of embedded traces per page
META_SUFFIX = ".telemetry.meta.json"


class Entry(NamedTuple):
    """One run's trace on the page: why it is not drawn (and the notice's class), or its summary, points and text."""

    run_id: str
    error: str = ""
    cls: str = ""
    ident: str = ""
    blob: str = ""
    summary: str = ""
    text: str = ""


def _round(values: Any) -> list[float | None]:
    return [None if not math.isfinite(v) else float(f"{v:.6g}") for v in (float(x) for x in values)]


def payload(view: TelemetryView, shown: Drawn) -> dict[str, Any]:
    """The JSON the page's script draws: polls, updates, phase bands, ranges and labels."""
    t0 = view.t0_ns
    bands: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for p in view.trace.phases:
        if p.end_ns >= p.start_ns:
            bands.setdefault((p.name, p.depth), []).append(((p.start_ns - t0) / 1e9, (p.end_ns - t0) / 1e9))
    phases, labels = [], []
    xs = [float(v) for v in shown.poll_x] + [float(v) for v in shown.update_hi]
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    for (name, depth), spans in bands.items():
        colour = PHASE_STYLE.get(name, OTHER_PHASE)[0]
        for a, w in merge_spans(spans):
            phases.append([name, float(f"{a:.6g}"), float(f"{a + w:.6g}"), min(depth, 4), colour])
            x_lo, x_hi = min(x_lo, a), max(x_hi, a + w)
            if x_hi > x_lo and w / (x_hi - x_lo) > 0.06:
                labels.append([name, float(f"{a + w / 2:.6g}")])
    ys = [float(v) for v in shown.poll_y if math.isfinite(float(v))] + [float(v) for v in shown.update_y]
    y_lo, y_hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    pad = (y_hi - y_lo) * 0.05 or 1.0
    if view.is_counter:
        ylabel = f"energy since the first poll ({energy_scale(view)[1]})"
    else:
        ylabel = f"{view.signal} ({view.unit})"
    return {
        "label": f"Telemetry trace of {view.title}: {view.signal}, every poll and every update",
        "x": [x_lo, x_hi],
        "y": [y_lo - pad, y_hi + pad],
        "px": _round(shown.poll_x),
        "py": _round(shown.poll_y),
        "ux": _round(shown.update_x),
        "ulo": _round(shown.update_lo),
        "uhi": _round(shown.update_hi),
        "uy": _round(shown.update_y),
        "phases": phases,
        "phase_labels": labels,
        "xlabel": "time since the first poll (s)",
        "ylabel": ylabel,
    }


def encode(data: dict[str, Any]) -> str:
    """gzip (no timestamp: reproducible bytes) + base64 of compact JSON."""
    raw = json.dumps(data, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


def _summary(view: TelemetryView, shown: Drawn) -> str:
    period = view.period.effective_period_ms
    where = ", ".join(f"{k}={v}" for k, v in view.stratum.items()) or "no factors"
    every = f" every {period:.4g} ms" if period is not None and math.isfinite(period) else ""
    return (
        f"{view.arm} ({where}, replicate {view.replicate}), run {view.run_id}: {view.signal}, "
        f"{shown.polls} readings, {view.updates.lo_ns.size} updates{every}"
    )


def telemetry_section(ctx: RunsContext) -> Markup:
    """One collapsed entry per run that kept a telemetry trace: its text, and its points on demand."""
    kept = [r for r in ctx.records if any(t.endswith(META_SUFFIX) for t in r.traces)]
    used, entries, skipped = 0, list[Entry](), 0
    for i, r in enumerate(kept):
        try:
            view = load_telemetry(ctx.folder, r.run_id)
        except IntegrityError as err:
            entries.append(Entry(r.run_id, f"NOT DRAWN: {err}", "alarm"))
            continue
        except InputError as err:
            entries.append(Entry(r.run_id, f"not drawn: {err}", "notice"))
            continue
        shown = drawn(view)
        blob = encode(payload(view, shown))
        if used + len(blob) > EMBED_BUDGET:
            skipped, blob = skipped + 1, ""
        used += len(blob)
        entries.append(
            Entry(r.run_id, ident=f"tm{i}", blob=blob, summary=_summary(view, shown), text=telemetry_text(view, shown))
        )
    return macro("telemetry.html", "telemetry_section")(
        len(kept), origins_text(ctx.records), used, skipped, entries, EMBED_BUDGET >> 20
    )
