"""The HTML report's story of ``command`` runs: each block's attempts, faults, restarts, phases and progress.

Every block (at most :data:`MAX_BLOCKS`; ``--run``'s first and open) gets the lanes of ``reports plot
RUNS --run ID``, step and loss curves and their text equivalents, placed here (x in percent of the
width, y in px) and drawn by ``templates/attempts.html``. Traces are read only after their hashes
matched the ledger: a block with a changed trace is named, not drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from prereg.errors import InputError, IntegrityError
from reports.data.attempts import (
    attempt_rows,
    by_attempt,
    fault_label,
    faults,
    has_attempts,
    has_loss,
    loss_text,
    phase_events,
    progress_runs,
    progress_text,
    story_counts,
)
from reports.data.axes import linear_ticks, number_label
from reports.data.origin import origins_text
from reports.data.timeline import TRACE_SUFFIXES, load_block, seconds_format, timeline_text
from reports.html.render import macro, x_at
from reports.html.svg import anchor, hatch_fill, linear_axis, span
from reports.plots.attempts import (
    ATTEMPT_DONE,
    ATTEMPT_FAULTED,
    RESTART_STYLE,
    RUN_COLOURS,
    THIN_PHASES,
    run_name,
    story_lanes,
)
from reports.plots.figures import OTHER_SPAN, SPAN_STYLE, merge_spans

if TYPE_CHECKING:
    from collect.ledger.columns import Record
    from reports.data.timeline import Block
    from reports.html.runs import RunsContext

MAX_BLOCKS = 12  # blocks drawn on the page; the rest are named
MAX_POINTS = 400  # points per attempt's line (evenly thinned, the last always kept)
LANE = 46
CHART_TOP, CHART_H = 24, 150
DASHES = ("", "6 3", "2 3", "8 3 2 3")  # attempt k: DASHES[k % 4] (solid, dashed, dotted, dash-dot)
TEMPLATE = "attempts.html"


def _bar(
    uid: str, frac: float, width: float, y: float, h: float, colour: str, hatch: str, title: str
) -> tuple[Any, ...]:
    return ("bar", x_at(frac), span(0, width, 0.0015), y, h, colour, hatch_fill(uid, hatch), title)


def attempt_timeline_svg(block: Block, uid: str) -> Markup:
    """Every run of the block: an attempts lane (attempts, faults, restarts) and a phases lane, one time axis."""
    lanes = story_lanes(block)
    end = max([t.end for t in block.runs] + [1e-9]) * 1.04

    def fx(t: float) -> float:
        return min(1.0, max(0.0, t / end))

    drawn = []
    for y_index, (label, i, part) in enumerate(lanes):
        top, t, items = 4 + LANE * y_index, block.runs[i], list[tuple[Any, ...]]()
        if part == "phases":
            events = phase_events(t.events)
            for kind in sorted({e.kind for e in events}):
                spans = [(e.start, e.end) for e in events if e.kind == kind and e.end > e.start]
                colour, hatch = SPAN_STYLE.get(kind, OTHER_SPAN)
                y, h = (top + 19, 10) if kind in THIN_PHASES else (top + 15, 18)
                items += [_bar(uid, fx(a), w / end, y, h, colour, hatch, kind) for a, w in merge_spans(spans)]
            drawn.append((label, top, items))
            continue
        rows = attempt_rows(t.events)
        for k, row in enumerate(rows):
            colour, hatch = ATTEMPT_FAULTED if row.fault is not None or row.aborted else ATTEMPT_DONE
            how = fault_label(row.fault) if row.fault is not None else "ran to its end"
            title = f"attempt {row.index}: {row.start:.4g}-{row.end:.4g} s, {how}"
            items.append(_bar(uid, fx(row.start), (row.end - row.start) / end, top + 15, 18, colour, hatch, title))
            if (row.end - row.start) / end > 0.08:
                items.append(("text", x_at(fx((row.start + row.end) / 2)), top + 28, "middle", f"attempt {row.index}"))
            if row.restart is not None:
                number, r = sum(1 for r in rows[: k + 1] if r.restart is not None), row.restart
                title = f"restart {number}: {r.start:.4g}-{r.end:.4g} s"
                items.append(_bar(uid, fx(r.start), (r.end - r.start) / end, top + 19, 10, *RESTART_STYLE, title))
                mid = fx((r.start + r.end) / 2)
                items.append(("text", x_at(mid), top + 44, anchor(mid, 0.08), f"restart {number}"))
        for f in faults(t.events):
            at = fx(f.start)
            tip = f"{fault_label(f)} at {f.start:.4g} s"
            items.append(("fault", x_at(at), top + 24, tip, anchor(at, 0.08), fault_label(f)))
        drawn.append((label, top, items))
    runs: list[tuple[bool, int, int, str, str | None]] = []
    for i, t in enumerate(block.runs):
        ys = [y for y, lane in enumerate(lanes) if lane[1] == i]
        y0, y1 = 4 + LANE * min(ys) + 13, 4 + LANE * max(ys) + 35
        if t.events:
            runs.append((i == 0, y0, y1, f"{t.arm} done {t.end:.4g} s", x_at(fx(t.end))))
        else:
            runs.append((i == 0, y0, y1, f"{t.arm}: no event trace ({t.status})", None))
    axis_y = 4 + LANE * len(lanes) + 10
    n_faults = sum(len(faults(t.events)) for t in block.runs)
    return macro(TEMPLATE, "attempt_timeline")(
        uid=uid,
        height=axis_y + 40,
        title=f"Attempts, faults and restarts of {block.title}: every arm on one time axis",
        desc=f"{len(lanes)} lanes; {n_faults} faults in all; the text equivalent after the figure lists every "
        "attempt, fault, restart and phase with its times",
        lanes=drawn,
        runs=runs,
        axis=linear_axis(end, axis_y, "time since the run's first start (s)", fx),
    )


def _thin(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    if len(points) <= MAX_POINTS:
        return points
    stride = (len(points) - 1) / (MAX_POINTS - 1)
    return [points[round(i * stride)] for i in range(MAX_POINTS)]


def _chart(
    uid: str,
    title: str,
    x_label: str,
    y_label: str,
    series: Sequence[tuple[str, int, list[tuple[float, float]]]],
    marks: Sequence[tuple[float, float, str | None, str]],
    x_end: float | None = None,
) -> Markup:
    """A line chart: ``series`` (colour, attempt, points) and ``marks`` (x, y, circle colour or None for a
    cross, tooltip); the x axis from 0 to ``x_end`` (default: the largest x, padded)."""
    xs = [x for _, _, pts in series for x, _ in pts] + [m[0] for m in marks]
    ys = [y for _, _, pts in series for _, y in pts if y == y] + [m[1] for m in marks]
    x_hi = max([x_end or 0.0] + [x * 1.02 for x in xs] + [1e-9])
    y_lo, y_hi = min(ys + [0.0]), max(ys + [1e-9])
    y_hi += (y_hi - y_lo) * 0.05 or 1.0
    bottom = CHART_TOP + CHART_H

    def fx(x: float) -> float:
        return min(1.0, max(0.0, x / x_hi))

    def py(y: float) -> float:
        return bottom - CHART_H * (y - y_lo) / (y_hi - y_lo)

    ticks = linear_ticks(y_lo, y_hi, 4)
    lines = []
    for colour, attempt, pts in series:
        shown = [(x, y) for x, y in _thin(pts) if y == y]  # NaN loss: a gap, listed in the text
        if shown:
            coords = " ".join(f"{1000 * fx(x):.1f},{1000 * (py(y) - CHART_TOP) / CHART_H:.1f}" for x, y in shown)
            lines.append((colour, coords, DASHES[attempt % len(DASHES)]))
    return macro(TEMPLATE, "chart")(
        uid=uid,
        title=title,
        y_label=y_label,
        height=bottom + 40,
        top=CHART_TOP,
        h=CHART_H,
        ticks=[(f"{py(t):.1f}", f"{py(t) - 2:.1f}", number_label(t, ticks)) for t in ticks],
        lines=lines,
        marks=[(x_at(fx(x)), py(y), colour, tip) for x, y, colour, tip in marks],
        axis=linear_axis(x_hi, bottom, x_label, fx),
    )


def progress_svgs(block: Block, uid: str) -> list[Markup]:
    """Step over time and (when reported) training loss over steps, attempts distinguished."""
    steps: list[tuple[str, int, list[tuple[float, float]]]] = []
    losses: list[tuple[str, int, list[tuple[float, float]]]] = []
    marks: list[tuple[float, float, str | None, str]] = []
    for i, t in enumerate(progress_runs(block)):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        for attempt, rows in by_attempt(t.progress or []).items():
            steps.append((colour, attempt, [(p.t_s, float(p.step)) for p in rows]))
            losses.append((colour, attempt, [(float(p.step), p.loss) for p in rows if p.loss is not None]))
            if attempt:
                tip = f"{t.arm}: attempt {attempt} resumed at step {rows[0].step}"
                marks.append((rows[0].t_s, float(rows[0].step), colour, tip))
        marks += [
            (f.start, float(f.step), None, f"{t.arm}: {fault_label(f)} at {f.start:.4g} s")
            for f in faults(t.events)
            if f.step is not None
        ]
    out = [
        _chart(
            f"{uid}-p",
            f"Step the programs reported over time, {block.title}",
            "time since the run's first start (s)",
            "step",
            steps,
            marks,
            x_end=max([t.end for t in block.runs] + [1e-9]) * 1.04,
        )
    ]  # the timeline's axis, above it
    if has_loss(block):
        out.append(
            _chart(
                f"{uid}-l",
                f"Training loss the programs reported over steps, {block.title}",
                "step the program reported",
                "training loss",
                losses,
                [],
            )
        )
    return out


def block_story(block: Block, uid: str) -> Markup:
    """One block: its timeline, its curves, the legend and every text equivalent."""
    runs = progress_runs(block)
    kinds = sorted({e.kind for t in block.runs for e in phase_events(t.events)})
    lg = f"{uid}-lg"  # the legend's own patterns (a figure's may be scrolled away)
    legend = (
        lg,
        *((c, hatch_fill(lg, h)) for c, h in (ATTEMPT_DONE, ATTEMPT_FAULTED, RESTART_STYLE)),
        [(k, c, hatch_fill(lg, h)) for k in kinds for c, h in [SPAN_STYLE.get(k, OTHER_SPAN)]],
        [(run_name(block, t), RUN_COLOURS[i % len(RUN_COLOURS)]) for i, t in enumerate(runs)],
    )
    text = timeline_text(block)
    if runs:
        text += "\n\n" + progress_text(block, seconds_format(block))
    if has_loss(block):
        text += "\n\n" + loss_text(block)
    return macro(TEMPLATE, "block_story")(
        timeline=attempt_timeline_svg(block, uid),
        charts=progress_svgs(block, uid) if runs else [],
        legend=legend,
        run_id=block.run_id,
        text=text,
    )


def is_story_plan(records: Sequence[Record]) -> bool:
    """Whether the runs are ``command`` runs (their collector, or a progress trace, says so)."""
    return any(
        (r.code or {}).get("collector") == "command" or any(n.endswith(".progress.csv") for n in r.traces)
        for r in records
    )


def _summary(block: Block) -> str:
    arms = "; ".join(
        f"{t.arm}: {story_counts(t.events)}" if has_attempts(t.events) else f"{t.arm}: no event trace"
        for t in block.runs
    )
    return f"{block.title}: {arms}"


def command_timeline_section(ctx: RunsContext, run_id: str | None) -> Markup:
    """Every block of command runs (``run_id``'s first and open): timeline, curves and text; see the module."""
    traced = [r for r in ctx.records if any(n.endswith(TRACE_SUFFIXES) for n in r.traces)]
    if run_id is not None and run_id not in {r.run_id for r in ctx.records}:
        raise InputError(f"run {run_id}: not a run of this evaluation's plan in {ctx.ledger.path}")
    if run_id is not None:
        target = next(r for r in ctx.records if r.run_id == run_id)
        traced = [target] + [r for r in traced if r is not target]
    keys: dict[tuple[str, int], str] = {}
    for r in traced:
        keys.setdefault((repr(sorted(r.stratum.items())), r.replicate), r.run_id)
    blocks: list[tuple[str, str, str, Markup | None, bool]] = []
    for n, (key, rid) in enumerate(list(keys.items())[:MAX_BLOCKS]):
        mates = [r for r in ctx.records if (repr(sorted(r.stratum.items())), r.replicate) == key]
        bad = [
            f"run {r.run_id}: {name} {why}"
            for r in mates
            for name, why in ctx.problems.get(r.run_id, [])
            if name.endswith(TRACE_SUFFIXES)
        ]
        if bad:
            blocks.append((rid, "", "; ".join(bad), None, False))
            continue
        try:
            block = load_block(ctx.folder, rid)  # reads each trace only after it matches its record
        except (InputError, IntegrityError) as err:
            blocks.append((rid, str(err), "", None, False))
            continue
        blocks.append((rid, "", _summary(block), block_story(block, f"st{n}"), n == 0))
    return macro(TEMPLATE, "command_timeline_section")(
        len(keys),
        origins_text(ctx.records),
        MAX_BLOCKS if len(keys) > MAX_BLOCKS else 0,
        blocks,
        list(keys.values())[MAX_BLOCKS:],
    )
