"""Figures of ``command`` runs for ``reports plot RUNS --run ID``: the attempt timeline and the progress curves.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reports.data.attempts import attempt_rows, by_attempt, fault_label, faults, phase_events
from reports.plots.figures import OTHER_SPAN, SPAN_STYLE, merge_spans, new_figure
from reports.words.palette import ALARM_COLOUR

if TYPE_CHECKING:
    from reports.data.timeline import Block, RunTrace

#: (face colour, hatch) of an attempt that ran to its end, one a fault ended, and a restart
ATTEMPT_DONE = ("#a1d99b", "")
ATTEMPT_FAULTED = ("#fdd0a2", "////")
RESTART_STYLE = ("#d9d9d9", "xx")
RUN_COLOURS = ("#08519c", "#a63603", "#006d2c", "#54278f", "#7f2704", "#252525")
ATTEMPT_LINES: tuple[Any, ...] = ("-", "--", ":", "-.")  # attempt k draws with ATTEMPT_LINES[k % 4]
THIN_PHASES = ("state_transfer", "restore", "replay")


def run_name(block: Block, t: RunTrace) -> str:
    """The run's arm, with its id when two runs of the block share the arm."""
    arms = [r.arm for r in block.runs]
    return t.arm if arms.count(t.arm) == 1 else f"{t.arm} ({t.run_id})"


def story_lanes(block: Block) -> list[tuple[str, int, str]]:
    """(label, run index, 'attempts' | 'phases') per lane, top to bottom."""
    lanes = []
    for i, t in enumerate(block.runs):
        name = run_name(block, t)
        lanes.append((f"{name} · attempts", i, "attempts"))
        if phase_events(t.events):
            lanes.append((f"{name} · phases", i, "phases"))
    return lanes


def _plain(text: str) -> str:
    return text.replace("$", r"\$")


def _attempt_lane(ax: Any, t: RunTrace, y: int) -> None:
    rows = attempt_rows(t.events)
    for k, row in enumerate(rows):
        colour, hatch = ATTEMPT_FAULTED if row.fault is not None or row.aborted else ATTEMPT_DONE
        ax.broken_barh(
            [(row.start, max(row.end - row.start, 1e-9))],
            (y - 0.35, 0.7),
            facecolors=colour,
            edgecolor="#333333",
            hatch=hatch or None,
            linewidth=0.6,
            zorder=3,
        )
        ax.text((row.start + row.end) / 2, y, f"attempt {row.index}", ha="center", va="center", fontsize=7, zorder=4)
        if row.restart is not None:
            number = sum(1 for r in rows[: k + 1] if r.restart is not None)
            r = row.restart
            ax.broken_barh(
                [(r.start, max(r.end - r.start, 1e-9))],
                (y - 0.2, 0.4),
                facecolors=RESTART_STYLE[0],
                edgecolor="#333333",
                hatch=RESTART_STYLE[1],
                linewidth=0.5,
                zorder=3,
            )
            ax.annotate(
                f"restart {number}",
                ((r.start + r.end) / 2, y + 0.35),
                xytext=(0, -2),
                textcoords="offset points",
                ha="center",
                va="top",
                fontsize=7,
                zorder=6,
            )
    for f in faults(t.events):
        ax.plot(
            [f.start],
            [y],
            linestyle="none",
            marker="X",
            color=ALARM_COLOUR,
            markersize=9,
            markeredgecolor="white",
            markeredgewidth=0.6,
            zorder=7,
        )
        ax.annotate(
            fault_label(f),
            (f.start, y - 0.35),
            xytext=(0, 2),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=7,
            color=ALARM_COLOUR,
            weight="bold",
            zorder=7,
        )


def _phase_lane(ax: Any, t: RunTrace, y: int) -> set[str]:
    kinds = set()
    events = phase_events(t.events)
    for kind in sorted({e.kind for e in events}):
        spans = [(e.start, e.end) for e in events if e.kind == kind and e.end > e.start]
        if not spans:
            continue
        kinds.add(kind)
        colour, hatch = SPAN_STYLE.get(kind, OTHER_SPAN)
        height = 0.45 if kind in THIN_PHASES else 0.7
        ax.broken_barh(
            merge_spans(spans),
            (y - height / 2, height),
            facecolors=colour,
            edgecolor="#333333" if hatch else "none",
            hatch=hatch or None,
            linewidth=0.3,
            alpha=0.9,
            zorder=2 if kind == "compute" else 3,
        )
    return kinds


def attempt_timeline_figure(block: Block) -> Any:
    """Every run of the block: its attempts, faults and restarts, and its phase marks, on one time axis."""
    from matplotlib.lines import Line2D  # lazy: matplotlib
    from matplotlib.patches import Patch  # lazy: matplotlib

    lanes = story_lanes(block)
    fig = new_figure(12, 0.55 * len(lanes) + 2.4)
    ax = fig.add_subplot(1, 1, 1)
    kinds: set[str] = set()
    for y, (_label, i, part) in enumerate(lanes):
        t = block.runs[i]
        if part == "attempts":
            _attempt_lane(ax, t, y)
        else:
            kinds |= _phase_lane(ax, t, y)
    for i, t in enumerate(block.runs):
        ys = [y for y, lane in enumerate(lanes) if lane[1] == i]
        if i:
            ax.axhline(min(ys) - 0.5, color="#888888", linewidth=0.8)
        if not t.events:
            ax.text(
                0, min(ys), _plain(f"  {t.arm}: no event trace ({t.status})"), va="center", fontsize=8, style="italic"
            )
            continue
        ax.plot([t.end, t.end], [min(ys) - 0.45, max(ys) + 0.45], color="black", linewidth=1.5, zorder=6)
        ax.annotate(
            _plain(f"{t.arm} done\n{t.end:.4g} s"),
            (t.end, max(ys) + 0.45),
            xytext=(3, 1),
            textcoords="offset points",
            fontsize=7,
            va="bottom",
        )
    ax.set_yticks(range(len(lanes)), [_plain(lane[0]) for lane in lanes], fontsize=8)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlim(0, max([t.end for t in block.runs] + [1e-9]) * 1.1)
    ax.set_xlabel("time since the run's first start (s)")
    ax.grid(axis="x", color="#dddddd", linewidth=0.6, zorder=0)
    n_faults = sum(len(faults(t.events)) for t in block.runs)
    ax.set_title(
        _plain(
            f"Attempts, faults and restarts, {block.title}: every arm on one time axis "
            f"(run {block.run_id}; {n_faults} faults in all)"
        ),
        fontsize=10,
    )
    handles: list[Any] = [
        Patch(facecolor=ATTEMPT_DONE[0], edgecolor="#333333", label="attempt that ran to its end"),
        Patch(
            facecolor=ATTEMPT_FAULTED[0],
            hatch=ATTEMPT_FAULTED[1],
            edgecolor="#333333",
            label="attempt ended by a fault",
        ),
        Patch(
            facecolor=RESTART_STYLE[0],
            hatch=RESTART_STYLE[1],
            edgecolor="#333333",
            label="restart (kill to next start)",
        ),
        Line2D(
            [],
            [],
            linestyle="none",
            marker="X",
            color=ALARM_COLOUR,
            markersize=8,
            label="fault (labelled with the program's step)",
        ),
    ]
    for kind in sorted(kinds, key=lambda k: (k not in SPAN_STYLE, k)):
        colour, hatch = SPAN_STYLE.get(kind, OTHER_SPAN)
        handles.append(
            Patch(facecolor=colour, hatch=hatch or None, edgecolor="#333333", label=_plain(f"{kind} (phase)"))
        )
    handles.append(Line2D([], [], color="black", linewidth=1.5, label="run done"))
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0),
        borderaxespad=4.0,
        ncol=4,
        fontsize=8,
        frameon=False,
    )
    return fig


def progress_figure(block: Block) -> Any:
    """Step over time (top) and, when reported, training loss over steps (bottom), attempts distinguished."""
    from matplotlib.lines import Line2D  # lazy: matplotlib

    runs = [t for t in block.runs if t.progress]
    loss = any(p.loss is not None for t in runs for p in t.progress or [])
    fig = new_figure(11, 8 if loss else 5)
    if loss:
        top, bottom = fig.subplots(2, 1, gridspec_kw={"height_ratios": [1, 1], "hspace": 0.32})
    else:
        top, bottom = fig.add_subplot(1, 1, 1), None
    most = 0
    for i, t in enumerate(runs):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        groups = by_attempt(t.progress or [])
        most = max(most, len(groups))
        for attempt, rows in groups.items():
            style = ATTEMPT_LINES[attempt % len(ATTEMPT_LINES)]
            top.plot([p.t_s for p in rows], [p.step for p in rows], color=colour, linestyle=style, linewidth=1.4)
            if attempt:
                top.plot(
                    [rows[0].t_s],
                    [rows[0].step],
                    marker="o",
                    markerfacecolor="white",
                    color=colour,
                    linestyle="none",
                    markersize=5,
                )
            if bottom is not None:
                pts = [(p.step, p.loss) for p in rows if p.loss is not None]
                bottom.plot([s for s, _ in pts], [v for _, v in pts], color=colour, linestyle=style, linewidth=1.3)
        for f in faults(t.events):
            if f.step is not None:
                top.plot(
                    [f.start],
                    [f.step],
                    marker="X",
                    color=ALARM_COLOUR,
                    markersize=8,
                    linestyle="none",
                    markeredgecolor="white",
                    markeredgewidth=0.5,
                    zorder=5,
                )
                top.annotate(
                    fault_label(f),
                    (f.start, f.step),
                    xytext=(4, 4 if i % 2 == 0 else -11),
                    textcoords="offset points",
                    fontsize=7,
                    color=ALARM_COLOUR,
                )
    ends = [t.end for t in block.runs] + [p.t_s for t in runs for p in t.progress or []]
    top.set_xlim(0, max(ends + [1e-9]) * 1.1)  # the attempt timeline's axis
    top.set_xlabel("time since the run's first start (s)")
    top.set_ylabel("step the program reported")
    top.grid(color="#dddddd", linewidth=0.6)
    top.set_title(_plain(f"Progress the programs reported, {block.title} (run {block.run_id})"), fontsize=10)
    handles: list[Any] = [
        Line2D(
            [],
            [],
            color=RUN_COLOURS[i % len(RUN_COLOURS)],
            linewidth=2,
            label=_plain(f"{run_name(block, t)} (run {t.run_id})"),
        )
        for i, t in enumerate(runs)
    ]
    handles += [
        Line2D([], [], color="#444444", linestyle=ATTEMPT_LINES[k % len(ATTEMPT_LINES)], label=f"attempt {k}")
        for k in range(min(most, len(ATTEMPT_LINES)))
    ]
    handles += [
        Line2D(
            [], [], color="#444444", marker="o", markerfacecolor="white", linestyle="none", label="attempt resumed here"
        ),
        Line2D([], [], color=ALARM_COLOUR, marker="X", linestyle="none", label="fault (step then)"),
    ]
    top.legend(handles=handles, fontsize=7, loc="upper left")
    if bottom is not None:
        bottom.set_xlabel("step the program reported")
        bottom.set_ylabel("training loss (as reported)")
        bottom.grid(color="#dddddd", linewidth=0.6)
        bottom.set_title("Training loss over steps (a replayed step appears once per attempt that ran it)", fontsize=9)
    return fig
