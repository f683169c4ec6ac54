"""``reports plot RUNS --run ID --telemetry``: one run's kept raw telemetry trace, its figure and text.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from collect.telemetry.analysis.phases import RUN_PHASES
from reports.data.telemetry import Drawn, TelemetryView, drawn, duration_text, energy_scale
from reports.plots.figures import merge_spans, new_figure
from reports.words.palette import ALARM_COLOUR
from reports.words.safe_text import wrap_entries

if TYPE_CHECKING:
    from collect.telemetry.analysis.bounds import EnergyEstimate

#: artists with more points than this are rasterised in SVG (all drawn, but as an image)
RASTER_ABOVE = 20_000
#: phase -> (colour, hatch): the timeline's colours for the same kinds, a distinct hatch for each
PHASE_STYLE = {
    "idle": ("#bdbdbd", ".."),
    "compute": ("#9ecae1", ""),
    "replay": ("#e6550d", "\\\\\\\\"),
    "checkpoint": ("#3182bd", "////"),
    "restore": ("#756bb1", "xxxx"),
    "stall": ("#fdae6b", "--"),
}
OTHER_PHASE = ("#bcbd22", "++")
MAX_LISTED = 40
MAX_NOTES = 3


# --- the text equivalent -----------------------------------------------------------------------


def _seconds(view: TelemetryView) -> str:
    span = (int(view.trace.poll_ns[-1]) - view.t0_ns) / 1e9
    return "{:.3f}" if span < 100 else "{:.2f}" if span < 1000 else "{:.1f}"


def _ms(value: float | None) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.4g} ms"


def _joules(e: EnergyEstimate) -> str:
    return f"{e.estimate_j:.6g} J in [{e.lower_j:.6g}, {e.upper_j:.6g}] J ({e.method})"


def telemetry_text(view: TelemetryView, shown: Drawn | None = None) -> str:
    """The figure's text equivalent: the trace, its updates and period, and every phase's energy."""
    import numpy as np  # lazy: numpy

    shown = shown if shown is not None else drawn(view)
    trace, u, fmt, t0 = view.trace, view.updates, _seconds(view), view.t0_ns
    info = trace.signals.get(view.signal)
    kind = "cumulative counter" if view.is_counter else "power gauge"
    window = f", averaging window {info.window_ms:g} ms" if info is not None and info.window_ms is not None else ""
    evidence = "modeled: a simulated sensor, not a measurement" if trace.evidence == "modeled" else trace.evidence
    span = (int(trace.poll_ns[-1]) - t0) / 1e9
    period = view.period
    lines = [
        f"Telemetry trace of {view.title}",
        f"  files {', '.join(view.checked)}: SHA-256 as recorded in the ledger",
        f"  signal {view.signal} ({kind}, {view.unit}{window}); sensor {trace.sensor or 'unknown'}; "
        f"evidence {evidence}",
        f"  times in seconds from the first poll; {trace.poll_ns.size} polls over {fmt.format(span)} s, asked every "
        f"{trace.requested_poll_ms:g} ms, achieved {_ms(period.achieved_poll_ms)} (median; p95 "
        f"{_ms(period.achieved_poll_p95_ms)})",
    ]
    widths = (u.hi_ns - u.lo_ns) / 1e6
    line = (
        f"  {u.lo_ns.size} updates (value changes) in {shown.polls} ok readings; effective update period "
        f"{_ms(period.effective_period_ms)}"
    )
    if period.driver_period_ms is not None:
        line += f" (driver timestamps: {_ms(period.driver_period_ms)})"
    if widths.size:
        line += (
            f"; update windows {float(np.median(widths)):.4g} ms wide (median; "
            f"{float(widths.min()):.4g}-{float(widths.max()):.4g} ms)"
        )
    lines.append(line)
    if shown.failed_x.size:
        mask = (trace.signal == view.signal) & (trace.status != "ok")
        statuses, counts = np.unique(trace.status[mask].astype(str), return_counts=True)
        lines.append(
            f"  {shown.failed_x.size} readings not ok ("
            + ", ".join(f"{s} {c}" for s, c in zip(statuses.tolist(), counts.tolist(), strict=True))
            + "): no value, drawn as ticks"
        )
    for a, b in shown.resets:
        lines.append(
            f"  counter decreased (reset) between {fmt.format(a)} and {fmt.format(b)} s: intervals "
            "overlapping it get the power-range bound"
        )
    p_min, p_max = view.power_range_w
    source = (
        "the sensor's, recorded in the trace"
        if view.range_recorded
        else "assumed: the trace records none (as `collect probe --sensor replay:` assumes)"
    )
    lines.append(f"  energy bounds use the power range [{p_min:g}, {p_max:g}] W ({source})")
    if shown.decimated:
        lines.append(
            f"  figure: the faint poll line is decimated for drawing: {shown.polls} readings drawn as "
            f"{shown.poll_x.size} points (each bin's lowest and highest kept); every one of the "
            f"{u.lo_ns.size} update markers is drawn"
        )
    else:
        lines.append(
            f"  figure: every one of the {shown.polls} readings (faint step line) and of the "
            f"{u.lo_ns.size} updates (marker at the window midpoint, bar across the window) is drawn"
        )
    lines.append(
        "Per phase (collect.telemetry.analysis.phases): intervals in s, total duration, updates whose whole window "
        "lies inside the phase, energy with bounds that contain the true energy, mean power"
    )
    width = max([len(r.name) for r in view.phases] + [8]) + 2
    for row in view.phases:
        pe = row.total
        seconds = pe.duration_ms / 1e3
        mean = f", mean {pe.energy.estimate_j / seconds:.4g} W" if seconds > 0 else ""
        lines.append(
            f"  {row.name:<{width}}{pe.intervals} interval{'s' if pe.intervals != 1 else ''}, "
            f"{fmt.format(seconds)} s, {pe.updates} update{'s' if pe.updates != 1 else ''}, energy "
            f"{_joules(pe.energy)}{mean}"
        )
        entries = [f"{fmt.format((a - t0) / 1e9)}-{fmt.format((b - t0) / 1e9)}" for a, b in row.intervals]
        more = len(entries) - MAX_LISTED
        entries = entries[:MAX_LISTED] + ([f"and {more} more"] if more > 0 else [])
        lines += wrap_entries(" " * (width + 2) + "intervals:", entries)
        notes = list(pe.energy.notes)  # one per distinct wording (power: one per interval's coverage)
        for note in notes[:MAX_NOTES]:
            lines.append(" " * (width + 2) + f"note: {note}")
        if len(notes) > MAX_NOTES:
            lines.append(" " * (width + 2) + f"and {len(notes) - MAX_NOTES} more notes of its intervals")

    absent = [p for p in RUN_PHASES if p not in {r.name for r in view.phases}]
    if absent:
        lines.append(f"  no interval of: {', '.join(absent)}")
    inside = np.zeros(u.lo_ns.size, dtype=bool)
    for row in view.phases:  # one phase's outermost intervals are disjoint and in time order
        starts = np.array([a for a, _ in row.intervals], dtype=np.int64)
        ends = np.array([b for _, b in row.intervals], dtype=np.int64)
        k = np.searchsorted(starts, u.lo_ns, side="right") - 1  # the last interval starting at or before lo
        inside |= (k >= 0) & (u.hi_ns <= ends[np.clip(k, 0, None)])
    lines.append(
        f"  {int((~inside).sum())} of {u.lo_ns.size} updates lie in no single phase interval (their "
        "window straddles a boundary or lies outside every mark)"
    )
    bound = f" +/- {view.energy_bound_j:.3g} J" if math.isfinite(view.energy_bound_j) else " (no finite bound)"
    lines.append(
        f"Run energy (the ledger's `energy`, from the end of the idle window to the last poll): "
        f"{view.energy_j:.6g} J{bound}, {view.summary.get('updates')} updates inside"
    )
    for name, why in view.other_problems:
        lines.append(f"WARNING: trace {name} {why} (not part of this plot)")
    return "\n".join(lines)


# --- the figure --------------------------------------------------------------------------------


def _plain(text: str) -> str:
    """Text for matplotlib with ``$`` escaped (no mathtext from run ids, arms or sensor specs)."""
    return text.replace("$", r"\$")


def _bands(ax: Any, view: TelemetryView, label: bool) -> None:
    """Every closed phase mark as a shaded band (colour and hatch), one collection per phase and
    depth (thousands of marks stay cheap); nested marks are shorter bands. Wide bands are named."""
    from matplotlib.collections import PolyCollection  # lazy: matplotlib

    t0 = view.t0_ns
    x0, x1 = ax.get_xlim()
    groups: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for p in view.trace.phases:
        if p.end_ns >= p.start_ns:
            groups.setdefault((p.name, p.depth), []).append(((p.start_ns - t0) / 1e9, (p.end_ns - t0) / 1e9))
    for (name, depth), spans in groups.items():
        colour, hatch = PHASE_STYLE.get(name, OTHER_PHASE)
        top = max(0.4, 1.0 - 0.15 * depth)
        merged = merge_spans(spans)  # (start, width), touching marks joined
        verts = [[(a, 0.0), (a + w, 0.0), (a + w, top), (a, top)] for a, w in merged]
        ax.add_collection(
            PolyCollection(
                verts,
                transform=ax.get_xaxis_transform(),
                facecolors=colour,
                alpha=0.35,
                hatch=hatch or None,
                edgecolors="#444444",
                linewidths=0,
                zorder=0,
                label=f"_{name}",
            ),
            autolim=False,
        )
        for a, w in merged:
            share = w / (x1 - x0) if x1 > x0 else 0.0
            if label and share > 0.012:  # named on the band: across it when wide, upright when narrow
                ax.text(
                    a + w / 2,
                    top - 0.02,
                    _plain(name),
                    transform=ax.get_xaxis_transform(),
                    ha="center",
                    va="top",
                    fontsize=7,
                    color="#222222",
                    zorder=4,
                    rotation=0 if share > 0.08 else 90,
                    bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8},
                )


def telemetry_figure(view: TelemetryView, shown: Drawn | None = None) -> Any:
    """The trace on a time axis: polls, updates, phases; for a counter also the power between updates."""
    from matplotlib.lines import Line2D  # lazy: matplotlib
    from matplotlib.patches import Patch  # lazy: matplotlib

    shown = shown if shown is not None else drawn(view)
    counter = view.is_counter and shown.power is not None
    fig = new_figure(12, 7.2 if counter else 5.2)
    if counter:
        top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2], "hspace": 0.08})
        axes = [top, bottom]
    else:
        top = bottom = fig.add_subplot(1, 1, 1)
        axes = [top]
    many = shown.update_x.size > RASTER_ABOVE
    top.step(
        shown.poll_x,
        shown.poll_y,
        where="post",
        color="#555555",
        alpha=0.6,
        linewidth=1.0,
        zorder=2,
        label="every poll (faint step)",
        rasterized=shown.poll_x.size > RASTER_ABOVE,
    )
    top.hlines(
        shown.update_y, shown.update_lo, shown.update_hi, color="#08306b", linewidth=1.2, zorder=3, rasterized=many
    )
    top.plot(
        shown.update_x,
        shown.update_y,
        linestyle="none",
        marker="o",
        markersize=2.0 if many else 3.0,
        markerfacecolor="white",
        markeredgecolor="#08306b",
        markeredgewidth=0.9,
        zorder=4,
        rasterized=many,
        label="update",
    )
    if shown.failed_x.size:
        top.plot(
            shown.failed_x,
            [0.01] * shown.failed_x.size,
            linestyle="none",
            marker="|",
            color=ALARM_COLOUR,
            markersize=8,
            transform=top.get_xaxis_transform(),
            zorder=5,
        )
    for a, b in shown.resets:
        for ax in axes:
            ax.axvline((a + b) / 2, color=ALARM_COLOUR, linestyle="--", linewidth=1.0, zorder=5)
    gauge_range = not view.is_counter and view.unit == "W"
    if gauge_range:  # the bounds' power range, on the power axis itself
        for level in view.power_range_w:
            top.axhline(level, color="#b35806", linestyle=":", linewidth=1.0, zorder=2)
    if view.is_counter:
        top.set_ylabel(
            f"energy since the first poll ({energy_scale(view)[1]})\n{_plain(view.signal)} counter, read in mJ",
            fontsize=9,
        )
    else:
        top.set_ylabel(f"{_plain(view.signal)} ({_plain(view.unit)})", fontsize=9)
    if counter and shown.power_edges is not None and shown.power is not None:
        bottom.stairs(
            shown.power,
            shown.power_edges,
            baseline=None,
            color="#08306b",
            linewidth=1.0,
            zorder=3,
            rasterized=shown.power.size > RASTER_ABOVE,
        )
        p_min, p_max = view.power_range_w
        for level in (p_min, p_max):
            bottom.axhline(level, color="#b35806", linestyle=":", linewidth=1.0, zorder=2)
        finite = shown.power[~(shown.power != shown.power)]
        hi = max(float(finite.max()) if finite.size else p_max, p_max)
        bottom.set_ylim(min(0.0, p_min), hi * 1.08 if hi > 0 else 1.0)
        bottom.set_ylabel("mean power between\nconsecutive updates (W)", fontsize=9)
    span = float(max(shown.poll_x.max(initial=0.0), shown.update_hi.max(initial=0.0)))
    start = float(min(shown.poll_x.min(initial=0.0), 0.0))
    for p in view.trace.phases:
        if p.end_ns >= p.start_ns:
            span = max(span, (p.end_ns - view.t0_ns) / 1e9)
            start = min(start, (p.start_ns - view.t0_ns) / 1e9)
    pad = (span - start) * 0.01 or 0.5
    for ax in axes:
        ax.set_xlim(start - pad, span + pad)
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        ax.grid(color="#dddddd", linewidth=0.6, zorder=1)
        ax.tick_params(labelsize=8)
    for ax in axes:
        _bands(ax, view, label=ax is top)
    bottom.set_xlabel("time since the first poll (s)")
    evidence = "modeled (simulated sensor)" if view.trace.evidence == "modeled" else view.trace.evidence
    period = view.period.effective_period_ms
    top.set_title(
        _plain(
            f"Telemetry trace of {view.title}\n{view.signal}: {view.updates.lo_ns.size} updates, "
            f"effective period {_ms(period)}, polled every {view.trace.requested_poll_ms:g} ms; "
            f"evidence {evidence}"
        ),
        fontsize=10,
    )
    handles: list[Any] = [
        Line2D(
            [],
            [],
            color="#555555",
            alpha=0.6,
            linewidth=1.0,
            label="every poll (faint step)" + (", decimated" if shown.decimated else ""),
        ),
        Line2D(
            [],
            [],
            color="#08306b",
            marker="o",
            markerfacecolor="white",
            markersize=4,
            linewidth=1.2,
            label="update: window midpoint, bar = update window",
        ),
    ]
    if counter:
        handles.append(Line2D([], [], color="#08306b", linewidth=1.0, label="mean power between updates (lower panel)"))
    if counter or gauge_range:
        handles.append(Line2D([], [], color="#b35806", linestyle=":", label="power range used for the bounds"))
    if shown.failed_x.size:
        handles.append(
            Line2D(
                [],
                [],
                color=ALARM_COLOUR,
                marker="|",
                linestyle="none",
                markersize=8,
                label="reading not ok (no value)",
            )
        )
    if shown.resets:
        handles.append(Line2D([], [], color=ALARM_COLOUR, linestyle="--", label="counter reset"))
    for row in view.phases:
        colour, hatch = PHASE_STYLE.get(row.name, OTHER_PHASE)
        handles.append(
            Patch(
                facecolor=colour,
                alpha=0.5,
                hatch=hatch or None,
                edgecolor="#444444",
                label=_plain(f"{row.name} ({row.total.intervals}x, {duration_text(row.total.duration_ms / 1e3)})"),
            )
        )
    bottom.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16 if counter else -0.12),
        ncol=4,
        fontsize=8,
        frameon=False,
    )
    return fig
