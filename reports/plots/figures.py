"""Figures for ``reports plot``: the forest plot of an evaluation, a block's recovery timeline, NLL curves.

(A run's telemetry trace, ``--telemetry``, is drawn by :mod:`reports.plots.telemetry` with the helpers here.)

More in ``docs/internals.md``.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gates.numbers import as_float
from prereg.errors import InputError
from prereg.fileio import file_head, runs_folder_of, write_output
from reports.data.axes import (
    block_points,
    gate_axis,
    pct_change,
    ratio_label,
    ratio_ticks,
    value_label,
    widened_interval,
)
from reports.data.timeline import MARK_KINDS, SPAN_KINDS, Block
from reports.words.evaluation import EVIDENCE_WORDS, contrast_text, fmt_num, interval_text
from reports.words.palette import DECISION_WORDS, VERDICT_COLOURS, VERDICT_WORDS

if TYPE_CHECKING:
    from gates.artifact import Evaluation, GateResult

INSTALL_HINT = "pip install 'prereg-toolkit[plot]'"
FORMATS = {"png": ("png",), "svg": ("svg",), "both": ("png", "svg")}
# Event kinds: (colour, hatch) for spans, marker shape for marks.
SPAN_STYLE = {
    "compute": ("#9ecae1", ""),
    "checkpoint": ("#3182bd", "////"),
    "collective": ("#c7c7c7", ""),
    "state_transfer": ("#fdae6b", "...."),
    "restore": ("#756bb1", "xxxx"),
    "replay": ("#e6550d", "\\\\\\\\"),
    "failure": ("#636363", "xx"),
}
MARK_STYLE = {"failure": "X", "preemption": "v", "restore": "s", "replay": ">", "rejoin": "o"}
OTHER_SPAN = ("#bcbd22", "++")


def require_matplotlib() -> None:
    """Raise a ``InputError`` (exit 2) with the install hint when matplotlib is missing."""
    try:
        import matplotlib.figure  # noqa: F401  # lazy: matplotlib
    except ImportError:
        raise InputError(f"plots need matplotlib, which is not installed: {INSTALL_HINT}") from None


def new_figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure  # lazy: matplotlib

    return Figure(figsize=(width, height), dpi=110)


#: written into every plot's metadata (PNG ``Software``, SVG ``dc:creator``): how a plot is known as ours
CREATOR = "reports plot (prereg toolkit)"


def _is_image(path: Path) -> bool:
    """A plot written earlier (safe to replace): one carrying :data:`CREATOR`, or, outside a runs
    folder, any PNG or SVG file (plots of older versions carry no mark)."""
    head = file_head(path, 2048)
    if CREATOR.encode() in head:
        return True
    image = head.startswith(b"\x89PNG\r\n") or (b"<svg" in head or head.lstrip().startswith(b"<?xml"))
    return image and runs_folder_of(path) is None


def save_figure(fig: Any, out_dir: Path, stem: str, fmt: str) -> list[Path]:
    """Write ``stem.png`` / ``stem.svg`` atomically (reproducible bytes: no dates, fixed SVG ids)."""
    import matplotlib  # lazy: matplotlib

    paths = []
    for ext in FORMATS[fmt]:
        buf = io.BytesIO()
        metadata = {"Date": None, "Creator": CREATOR} if ext == "svg" else {"Software": CREATOR}
        with matplotlib.rc_context({"svg.hashsalt": "reports-plot", "svg.fonttype": "none"}):
            fig.savefig(buf, format=ext, metadata=metadata, bbox_inches="tight")
        path = out_dir / f"{stem}.{ext}"
        write_output(path, buf.getvalue(), ours=_is_image)  # never over a ledger, lock, link, device or foreign file
        paths.append(path)
    return paths


# --- forest plot -------------------------------------------------------------------------------


def _gate_axis(gate: GateResult, points: list[float] | None = None) -> tuple[float, float]:
    """The row's x range: every finite value the row draws (interval, estimate, margins, null, the
    interval widened by the meter's bounds, each stratum's contrast), padded (in log space for ratios)."""
    axis = gate_axis(gate, points or [])
    return axis.lo, axis.hi


def _ratio_ticks(ax: Any, x0: float, x1: float) -> None:
    """Round ratios on the log axis, always with 1x, labelled '0.95x' and below it the % change ('-5%')."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator  # lazy: matplotlib

    ticks = ratio_ticks(x0, x1)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FixedFormatter([f"{ratio_label(t)}\n{pct_change(t)}" for t in ticks]))


def _gate_row(ax: Any, gate: GateResult, colour: str, points: list[float] | None = None) -> None:
    log = gate.scale == "ratio"
    points = points or []
    x0, x1 = _gate_axis(gate, points)
    ax.set_xlim(x0, x1)
    if log:  # a log axis with plain tick labels ('0.9x' over '-10%', not '9 x 10^-1')
        ax.set_xscale("log")
        ax.set_xlim(x0, x1)
        _ratio_ticks(ax, x0, x1)
    ax.set_ylim(-1, 1)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel(
        "ratio (log axis; % change below each ratio)" if log else gate.unit or "difference", fontsize=8, labelpad=1
    )
    widened = widened_interval(gate)
    if widened is not None:  # the interval widened by the meter's bounds (the resolution check)
        ax.axvspan(
            max(widened[0], x0),
            min(widened[1], x1),
            ymin=0.3,
            ymax=0.7,
            facecolor="#f6e7b4",
            edgecolor=VERDICT_COLOURS["unresolvable"],
            linestyle="--",
            linewidth=0.8,
            zorder=0,
        )
    ax.axvline(gate.null, color="#555555", linestyle=":", linewidth=1.2)
    ax.annotate(
        f"null {fmt_num(gate.null)}{'x' if log else ''}",
        (gate.null, 0.95),
        fontsize=7,
        color="#555555",
        ha="center",
        va="top",
        xycoords=("data", "axes fraction"),
    )
    for m in gate.margin:
        ax.axvline(m, color="#b35806", linestyle="--", linewidth=1.4)
        ax.annotate(
            f"margin {value_label(m, gate)}",
            (m, 0.05),
            fontsize=7,
            color="#b35806",
            ha="center",
            va="bottom",
            xycoords=("data", "axes fraction"),
        )
    if points:  # each stratum's paired contrast, below the interval
        ax.plot(
            points,
            [-0.5] * len(points),
            linestyle="none",
            marker="o",
            markersize=4.5,
            markerfacecolor="white",
            markeredgecolor="#1f2328",
            markeredgewidth=0.9,
            alpha=0.9,
            zorder=4,
        )
    lower, upper, est = as_float(gate.lower), as_float(gate.upper), as_float(gate.estimate)
    if log and lower is not None and lower <= 0:  # a ratio of 0 is minus infinity on the log axis
        lower = -math.inf
    if lower is None or upper is None:
        ax.text(0.5, 0.0, "no interval", transform=ax.transAxes, ha="center", va="center", fontsize=8, style="italic")
    else:
        left = x0 if math.isinf(lower) else lower
        right = x1 if math.isinf(upper) else upper
        ax.plot([left, right], [0, 0], color=colour, linewidth=4, solid_capstyle="butt")
        for end, inf, edge in ((lower, math.isinf(lower), x0), (upper, math.isinf(upper), x1)):
            if inf:  # an arrow to the axis edge: the interval goes on to infinity
                inner = (
                    left + (right - left) * (0.85 if edge == x0 else 0.15)
                    if not log
                    else math.exp(math.log(left) + (math.log(right) - math.log(left)) * (0.85 if edge == x0 else 0.15))
                )
                ax.annotate(
                    "",
                    xy=(edge, 0),
                    xytext=(inner, 0),
                    arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 2, "mutation_scale": 14},
                )
            else:
                ax.plot([end, end], [-0.3, 0.3], color=colour, linewidth=2)
    if est is not None and math.isfinite(est):
        ax.plot([est], [0], marker="D", color="black", markersize=6, linestyle="none")


def forest_figure(ev: Evaluation) -> Any:
    """The forest plot: one row per gate (primary first), each on its own axis, verdict words beside."""
    from matplotlib.lines import Line2D  # lazy: matplotlib

    gates = [g for g in ev.gates if g.role == "primary"] + [g for g in ev.gates if g.role != "primary"]
    n = max(len(gates), 1)
    fig = new_figure(10, 1.15 * n + 1.6)
    fig.subplots_adjust(
        left=0.30, right=0.80, top=1 - 0.75 / (1.15 * n + 1.6), bottom=0.9 / (1.15 * n + 1.6), hspace=1.1
    )
    fig.suptitle(
        f"{ev.study}: each gate's interval against its margin and null\n"
        f"decision: {DECISION_WORDS[ev.decision]} (primary gates decide; sensitivity gates never do)",
        fontsize=10,
    )
    if not gates:
        fig.text(0.5, 0.5, "this evaluation has no gates", ha="center")
        return fig

    axes = fig.subplots(n, 1, squeeze=False)[:, 0]
    for ax, gate in zip(axes, gates, strict=True):
        colour = VERDICT_COLOURS[gate.verdict]
        points = [value for _, value in block_points(gate, ev.blocks)]
        _gate_row(ax, gate, colour if gate.verdict in ("pass", "fail", "vacuous") else "#8c8c8c", points)
        role = "primary" if gate.role == "primary" else "sensitivity (never decides)"
        role += f"; {EVIDENCE_WORDS[gate.evidence]}"
        ax.text(
            -0.03,
            0.5,
            f"{gate.id}\n{contrast_text(gate)}\n{role}",
            transform=ax.transAxes,
            ha="right",
            va="center",
            fontsize=8,
            wrap=True,
        )
        word = VERDICT_WORDS[gate.verdict]
        if gate.verdict in ("refused", "unresolvable"):
            word += "\n(diagnostic,\nnot evidence)"
        ax.text(
            1.03, 0.62, word, transform=ax.transAxes, ha="left", va="center", fontsize=10, weight="bold", color=colour
        )
        ax.text(1.03, 0.0, interval_text(gate), transform=ax.transAxes, ha="left", va="center", fontsize=7)
    handles: list[Any] = [
        Line2D([], [], color="#444444", linewidth=4, label="interval"),
        Line2D([], [], color="black", marker="D", linestyle="none", label="estimate"),
        Line2D([], [], color="#b35806", linestyle="--", label="margin (the frozen rule)"),
        Line2D([], [], color="#555555", linestyle=":", label="null"),
        Line2D([], [], color="#444444", marker=">", markersize=8, label="end at infinity (arrow)"),
        Line2D(
            [],
            [],
            color="#1f2328",
            marker="o",
            markerfacecolor="white",
            linestyle="none",
            label="one stratum's paired contrast",
        ),
    ]
    if any(widened_interval(g) is not None for g in gates):
        from matplotlib.patches import Patch  # lazy: matplotlib

        handles.append(
            Patch(
                facecolor="#f6e7b4",
                edgecolor=VERDICT_COLOURS["unresolvable"],
                linestyle="--",
                label="interval widened by the meter's bounds",
            )
        )
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=8, frameon=False)
    return fig


# --- recovery timeline -------------------------------------------------------------------------


def merge_spans(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Touching or overlapping spans merged (keeps figures small for long traces)."""
    out: list[list[float]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b - a) for a, b in out]


def timeline_lanes(block: Block) -> list[tuple[str, int, int | None]]:
    """(label, run index, site) per lane, top to bottom: each run's sites, then its job-wide lane."""
    arms = [t.arm for t in block.runs]
    lanes = []
    for i, t in enumerate(block.runs):
        name = t.arm if arms.count(t.arm) == 1 else f"{t.arm} ({t.run_id})"
        sites: list[int | None] = list(t.sites) + ([None] if t.has_job_events else [])
        for site in sites or [None]:
            lanes.append((f"{name} · {'all sites' if site is None else f'site {site}'}", i, site))
    return lanes


def timeline_figure(block: Block) -> Any:
    """All arms of the block on one time axis: a lane per arm and site, spans and marks per event kind."""
    from matplotlib.lines import Line2D  # lazy: matplotlib
    from matplotlib.patches import Patch  # lazy: matplotlib

    lanes = timeline_lanes(block)
    fig = new_figure(12, 0.32 * len(lanes) + 2.2)
    ax = fig.add_subplot(1, 1, 1)
    kinds: set[str] = set()
    for y, (_label, i, site) in enumerate(lanes):
        events = [e for e in block.runs[i].events if e.site == site]
        for kind in sorted({e.kind for e in events}):
            kinds.add(kind)
            spans = [(e.start, e.end) for e in events if e.kind == kind and e.end > e.start]
            if spans and (kind in SPAN_KINDS or kind not in MARK_KINDS):
                colour, hatch = SPAN_STYLE.get(kind, OTHER_SPAN)
                height = 0.45 if kind in ("state_transfer", "restore", "replay") else 0.7
                ax.broken_barh(
                    merge_spans(spans),
                    (y - height / 2, height),
                    facecolors=colour,
                    edgecolor="#333333" if hatch else "none",
                    hatch=hatch or None,
                    linewidth=0.3,
                    alpha=0.9,
                    zorder=2 if kind in ("compute", "collective") else 3,
                )
            if kind in MARK_STYLE:
                starts = sorted({e.start for e in events if e.kind == kind})
                dy = -0.27 if kind == "preemption" else 0.0  # above the restore that starts with it
                ax.plot(
                    starts,
                    [y + dy] * len(starts),
                    linestyle="none",
                    marker=MARK_STYLE[kind],
                    color="black",
                    markerfacecolor="white" if kind in ("rejoin", "restore") else "black",
                    markersize=6,
                    zorder=5,
                )
    for i, t in enumerate(block.runs):  # arm separators and completion marks
        ys = [y for y, lane in enumerate(lanes) if lane[1] == i]
        if i:
            ax.axhline(min(ys) - 0.5, color="#888888", linewidth=0.8)
        if t.events:
            ax.plot([t.end, t.end], [min(ys) - 0.45, max(ys) + 0.45], color="black", linewidth=1.5, zorder=6)
            ax.annotate(
                f"{t.arm} done\n{t.end:.4g} s",
                (t.end, min(ys) - 0.45),
                xytext=(3, -1),
                textcoords="offset points",
                fontsize=7,
                va="top",
            )
        else:
            ax.text(0, min(ys), f"  {t.arm}: no event trace", va="center", fontsize=8, style="italic")
    ax.set_yticks(range(len(lanes)), [lane[0] for lane in lanes], fontsize=8)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlim(0, max([t.end for t in block.runs] + [1e-9]) * 1.1)
    ax.set_xlabel("time since the start of the run (s)")
    ax.grid(axis="x", color="#dddddd", linewidth=0.6, zorder=0)
    ax.set_title(f"Recovery timeline, {block.title}: every policy on one time axis (run {block.run_id})", fontsize=10)
    handles: list[Any] = []
    for kind in [k for k in SPAN_KINDS if k in kinds] + sorted(kinds - set(SPAN_KINDS) - set(MARK_KINDS)):
        colour, hatch = SPAN_STYLE.get(kind, OTHER_SPAN)
        handles.append(Patch(facecolor=colour, hatch=hatch or None, edgecolor="#333333", label=f"{kind} (span)"))
    for kind in [k for k in MARK_KINDS if k in kinds]:
        handles.append(
            Line2D(
                [],
                [],
                linestyle="none",
                marker=MARK_STYLE[kind],
                color="black",
                markerfacecolor="white" if kind in ("rejoin", "restore") else "black",
                label=f"{kind} (mark at start)",
            )
        )
    handles.append(Line2D([], [], color="black", linewidth=1.5, label="run done"))
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0),
        borderaxespad=4.5,
        ncol=5,
        fontsize=8,
        frameon=False,
    )
    return fig


def nll_figure(block: Block) -> Any:
    """Held-out NLL over ticks, one line (and marker shape) per arm, on one axis."""
    fig = new_figure(9, 5)
    ax = fig.add_subplot(1, 1, 1)
    markers = "os^Dv<>P*X"
    for i, t in enumerate(r for r in block.runs if r.trajectory):
        rows = t.trajectory or []
        ax.plot(
            [a for a, _ in rows],
            [b for _, b in rows],
            marker=markers[i % len(markers)],
            markersize=4,
            markevery=max(1, len(rows) // 12),
            linewidth=1.4,
            label=f"{t.arm} (run {t.run_id})",
        )
    ax.set_xlabel("tick")
    ax.set_ylabel("held-out NLL (nats/token)")
    ax.grid(color="#dddddd", linewidth=0.6)
    ax.set_title(f"Held-out NLL over ticks, {block.title}", fontsize=10)
    ax.legend(fontsize=8)
    return fig
