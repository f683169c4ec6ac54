"""The HTML report's telemetry section: each kept trace embedded compressed, drawn on demand.

Every number comes from :func:`reports.data.telemetry.load_telemetry` (which re-hashes the trace
against its record, refusing a changed one, and reads it only through
``collect.traces.telemetry.read_trace``) and :func:`reports.data.telemetry.drawn` (the points the
PNG draws: every update, the polls decimated to their envelope above ``MAX_POLL_POINTS``). The
text equivalent is :func:`reports.plots.telemetry.telemetry_text`, what ``reports plot RUNS --run ID
--telemetry`` prints; it reads without the script. The points travel as JSON, gzip-compressed and
base64-encoded in a non-executed ``<script type="application/gzip+base64">`` block; the page's
script decompresses them with ``DecompressionStream`` when the reader asks and draws polls (a faint
step line), updates (a circle at the window's midpoint, a bar across the window) and phases (bands,
named on the wide ones). Embedded data stop at ``EMBED_BUDGET`` bytes; later traces are listed
with the command that draws them.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
from typing import TYPE_CHECKING, Any

from prereg.errors import InputError, IntegrityError
from reports.data.origin import origins_text
from reports.data.telemetry import drawn, energy_scale, load_telemetry
from reports.html.svg import esc
from reports.plots.figures import merge_spans
from reports.plots.telemetry import OTHER_PHASE, PHASE_STYLE, telemetry_text

if TYPE_CHECKING:
    from reports.data.telemetry import Drawn, TelemetryView
    from reports.html.runs import RunsContext

EMBED_BUDGET = 4 << 20  # compressed bytes of embedded traces per page
META_SUFFIX = ".telemetry.meta.json"


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


LEGEND = (
    '<ul class="legend"><li><svg width="26" height="14" aria-hidden="true" focusable="false"><path '
    'd="M1,11 L9,11 L9,6 L17,6 L17,3 L25,3" fill="none" stroke="#555"/></svg>every poll (faint step line)</li>'
    '<li><svg width="26" height="14" aria-hidden="true" focusable="false"><line x1="3" x2="23" y1="7" y2="7" '
    'stroke="#08306b" stroke-width="1.4"/><circle cx="13" cy="7" r="3" fill="#fff" stroke="#08306b"/></svg>'
    "update: circle at the window's midpoint, bar across the update window</li>"
    '<li><svg width="26" height="14" aria-hidden="true" focusable="false"><rect x="1" y="1" width="24" '
    'height="12" fill="#9ecae1" fill-opacity="0.5"/></svg>phase band (named on wide bands; the text lists '
    "every interval)</li></ul>"
)


def telemetry_section(ctx: RunsContext) -> str:
    """One collapsed entry per run that kept a telemetry trace: its text, and its points on demand."""
    kept = [r for r in ctx.records if any(t.endswith(META_SUFFIX) for t in r.traces)]
    if not kept:
        return (
            f"<p>No run of this plan kept a raw telemetry trace (none of its {esc(origins_text(ctx.records))} "
            "did; runs collected with a sensor keep one: torch.multisite, or command with <code>sensor</code> "
            "set).</p>"
        )
    used, parts, skipped = 0, [], []
    for i, r in enumerate(kept):
        try:
            view = load_telemetry(ctx.folder, r.run_id)
        except IntegrityError as err:
            parts.append(f'<p class="alarm">run <code>{esc(r.run_id)}</code>: NOT DRAWN: {esc(err)}</p>')
            continue
        except InputError as err:
            parts.append(f'<p class="notice">run <code>{esc(r.run_id)}</code>: not drawn: {esc(err)}</p>')
            continue
        shown = drawn(view)
        text = telemetry_text(view, shown)
        blob = encode(payload(view, shown))
        if used + len(blob) > EMBED_BUDGET:
            skipped.append(r.run_id)
            blob = ""
        used += len(blob)
        ident = f"tm{i}"
        if blob:
            draw = (
                f'<p><button type="button" class="draw" data-source="{ident}-data" data-target="{ident}-fig" '
                f'data-status="{ident}-status">Draw this trace</button> <span id="{ident}-status" '
                'class="muted" role="status"></span></p>'
                f'<div id="{ident}-fig" class="trace-figure"></div>{LEGEND}'
                f'<script type="application/gzip+base64" id="{ident}-data">{blob}</script>'
            )
        else:
            draw = (
                f'<p class="muted">Not embedded (the page\'s {EMBED_BUDGET >> 20} MiB budget for traces is '
                f"spent): <code>reports plot RUNS --run {esc(r.run_id)} --telemetry</code> draws it.</p>"
            )
        parts.append(
            f"<details><summary>{esc(_summary(view, shown))}</summary>{draw}"
            f"<p>Text equivalent (as <code>reports plot RUNS --run ID --telemetry</code> prints it):</p>"
            f"<pre>{esc(text)}</pre></details>"
        )
    intro = (
        f"<p>{len(kept)} runs kept their raw telemetry trace, each checked against the SHA-256 in its "
        f"record. The points are embedded compressed ({used / 1024:.0f} KiB in all) and drawn only when "
        "asked: every poll as a faint step line, every update as a circle at its window's midpoint with a "
        "bar across the window, phases as bands.</p>"
    )
    if skipped:
        intro += f'<p class="notice">{len(skipped)} traces are not embedded (size budget); their text is.</p>'
    return intro + "".join(parts)
