"""The HTML report's story of ``command`` runs: each block's attempts, faults, restarts, phases and progress.

A plan run by the ``command`` collector keeps, per run, an event trace (attempts, faults, restarts,
phase marks) and, when the program reported progress, a progress trace
(:mod:`reports.data.attempts`). The section draws every block (one stratum and replicate, every arm;
at most :data:`MAX_BLOCKS`, the rest named with the command that draws them), each behind a summary
line saying how many attempts, faults and restarts each arm met, the first block (or ``--run``'s)
open:

* the timeline (inline SVG, the lanes of ``reports plot RUNS --run ID``): per run an *attempts*
  lane (one bar per start of the program, hatched when a fault ended it; each fault a red cross
  labelled "fault at step N"; each restart a grey span labelled "restart k") and a *phases* lane;
* step over time and training loss over steps (one colour per run, one dash pattern per attempt, a
  hollow circle where an attempt resumed, a red cross at each fault);
* their text equivalents (the same text ``reports plot`` prints).

Traces are read only through :func:`reports.data.timeline.load_block`, after their hashes were
checked against the ledger: a block with a changed trace is named, not drawn. Every x coordinate is
a percentage of the width and every y a pixel, as in the other figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

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
from reports.data.origin import origins_text
from reports.data.timeline import TRACE_SUFFIXES, load_block, seconds_format, timeline_text
from reports.html.axes import linear_ticks, number_label
from reports.html.svg import NULL_COLOUR, TEXT_COLOUR, XW, esc, linear_axis, x_at
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
from reports.words.palette import ALARM_COLOUR

if TYPE_CHECKING:
    from collect.ledger.columns import Record
    from reports.data.timeline import Block
    from reports.html.runs import RunsContext

MAX_BLOCKS = 12  # blocks drawn on the page; the rest are named
MAX_POINTS = 400  # points per attempt's line (evenly thinned, the last always kept)
LANE = 46
CHART_TOP, CHART_H = 24, 150
PATTERNS = {  # hatch -> SVG pattern body
    "////": '<path d="M0,8 L8,0" stroke="#333" stroke-width="1"/>',
    "\\\\\\\\": '<path d="M0,0 L8,8" stroke="#333" stroke-width="1"/>',
    "xxxx": '<path d="M0,0 L8,8 M0,8 L8,0" stroke="#333" stroke-width="0.8"/>',
    "xx": '<path d="M0,0 L8,8 M0,8 L8,0" stroke="#333" stroke-width="0.8"/>',
    "....": '<circle cx="4" cy="4" r="1.2" fill="#333"/>',
    "++": '<path d="M4,0 L4,8 M0,4 L8,4" stroke="#333" stroke-width="0.8"/>',
}
DASHES = ("", "6 3", "2 3", "8 3 2 3")  # attempt k: DASHES[k % 4] (solid, dashed, dotted, dash-dot)
CROSS = f'<path d="M-5,-5 L5,5 M-5,5 L5,-5" stroke="{ALARM_COLOUR}" stroke-width="2.6"/>'


def _defs(uid: str) -> str:
    return (
        "<defs>"
        + "".join(
            f'<pattern id="{uid}-h{i}" width="8" height="8" patternUnits="userSpaceOnUse">{body}</pattern>'
            for i, body in enumerate(PATTERNS.values())
        )
        + "</defs>"
    )


def _fill(uid: str, hatch: str) -> str | None:
    keys = list(PATTERNS)
    return f"url(#{uid}-h{keys.index(hatch)})" if hatch in keys else None


def _at(x: float, y: float, body: str) -> str:
    """``body`` drawn centred at (x as a fraction of the width, y in px): a nested svg."""
    return f'<svg x="{x_at(x)}" y="{y:g}" width="1" height="1" overflow="visible">{body}</svg>'


def _anchor(frac: float) -> str:
    """Labels near an edge grow inwards, so none reaches past the figure."""
    return "start" if frac < 0.08 else "end" if frac > 0.92 else "middle"


def _rect(uid: str, frac: float, width: float, y: float, h: float, colour: str, hatch: str, title: str) -> str:
    rect = f'x="{x_at(frac)}" width="{XW * max(width, 0.0015):.3f}%" y="{y:g}" height="{h:g}"'
    out = f'<rect {rect} fill="{colour}" stroke="#333" stroke-width="0.6"><title>{esc(title)}</title></rect>'
    pattern = _fill(uid, hatch)
    return out + (f'<rect {rect} fill="{pattern}" pointer-events="none"/>' if pattern else "")


def attempt_timeline_svg(block: Block, uid: str) -> str:
    """Every run of the block: an attempts lane (attempts, faults, restarts) and a phases lane, one time axis."""
    lanes = story_lanes(block)
    end = max([t.end for t in block.runs] + [1e-9]) * 1.04

    def fx(t: float) -> float:
        return min(1.0, max(0.0, t / end))

    body: list[str] = []
    for y_index, (label, i, part) in enumerate(lanes):
        top, t = 4 + LANE * y_index, block.runs[i]
        body.append(f'<text x="{x_at(0)}" y="{top + 11}" font-size="12" fill="{TEXT_COLOUR}">{esc(label)}</text>')
        body.append(f'<rect x="{x_at(0)}" width="{XW}%" y="{top + 15}" height="18" fill="#f6f8fa"/>')
        if part == "phases":
            events = phase_events(t.events)
            for kind in sorted({e.kind for e in events}):
                spans = [(e.start, e.end) for e in events if e.kind == kind and e.end > e.start]
                colour, hatch = SPAN_STYLE.get(kind, OTHER_SPAN)
                y, h = (top + 19, 10) if kind in THIN_PHASES else (top + 15, 18)
                body += [_rect(uid, fx(a), w / end, y, h, colour, hatch, kind) for a, w in merge_spans(spans)]
            continue
        rows = attempt_rows(t.events)
        for k, row in enumerate(rows):
            colour, hatch = ATTEMPT_FAULTED if row.fault is not None or row.aborted else ATTEMPT_DONE
            how = fault_label(row.fault) if row.fault is not None else "ran to its end"
            body.append(
                _rect(
                    uid,
                    fx(row.start),
                    (row.end - row.start) / end,
                    top + 15,
                    18,
                    colour,
                    hatch,
                    f"attempt {row.index}: {row.start:.4g}-{row.end:.4g} s, {how}",
                )
            )
            if (row.end - row.start) / end > 0.08:
                body.append(
                    f'<text x="{x_at(fx((row.start + row.end) / 2))}" y="{top + 28}" font-size="10" '
                    f'text-anchor="middle" fill="{TEXT_COLOUR}">attempt {row.index}</text>'
                )
            if row.restart is not None:
                number = sum(1 for r in rows[: k + 1] if r.restart is not None)
                r = row.restart
                body.append(
                    _rect(
                        uid,
                        fx(r.start),
                        (r.end - r.start) / end,
                        top + 19,
                        10,
                        RESTART_STYLE[0],
                        RESTART_STYLE[1],
                        f"restart {number}: {r.start:.4g}-{r.end:.4g} s",
                    )
                )
                mid = fx((r.start + r.end) / 2)
                body.append(
                    f'<text x="{x_at(mid)}" y="{top + 44}" font-size="10" text-anchor="{_anchor(mid)}" '
                    f'fill="{TEXT_COLOUR}">restart {number}</text>'
                )
        for f in faults(t.events):
            body.append(_at(fx(f.start), top + 24, CROSS + f"<title>{esc(fault_label(f))} at {f.start:.4g} s</title>"))
            body.append(
                f'<text x="{x_at(fx(f.start))}" y="{top + 11}" font-size="10" font-weight="bold" '
                f'text-anchor="{_anchor(fx(f.start))}" fill="{ALARM_COLOUR}">{esc(fault_label(f))}</text>'
            )
    for i, t in enumerate(block.runs):
        ys = [y for y, lane in enumerate(lanes) if lane[1] == i]
        y0, y1 = 4 + LANE * min(ys) + 13, 4 + LANE * max(ys) + 35
        if i:
            body.append(f'<line x1="0" x2="100%" y1="{y0 - 15}" y2="{y0 - 15}" stroke="#8c959f"/>')
        if not t.events:
            body.append(
                f'<text x="{x_at(0.01)}" y="{y0 + 15}" font-size="11" font-style="italic" '
                f'fill="{TEXT_COLOUR}">{esc(t.arm)}: no event trace ({esc(t.status)})</text>'
            )
            continue
        done = fx(t.end)
        body.append(f'<line x1="{x_at(done)}" x2="{x_at(done)}" y1="{y0}" y2="{y1}" stroke="#000" stroke-width="2"/>')
        body.append(
            f'<text x="{x_at(done)}" y="{y1 + 10}" font-size="10" text-anchor="end" fill="{TEXT_COLOUR}">'
            f"{esc(t.arm)} done {t.end:.4g} s</text>"
        )
    axis_y = 4 + LANE * len(lanes) + 10
    body += linear_axis(end, axis_y, "time since the run's first start (s)", fx)
    n_faults = sum(len(faults(t.events)) for t in block.runs)
    title = f"Attempts, faults and restarts of {block.title}: every arm on one time axis"
    desc = (
        f"{len(lanes)} lanes; {n_faults} faults in all; the text equivalent after the figure lists every "
        "attempt, fault, restart and phase with its times"
    )
    return (
        f'<svg class="figure" width="100%" height="{axis_y + 40}" role="img" aria-labelledby="{uid}-t {uid}-d" '
        f'font-family="system-ui, sans-serif"><title id="{uid}-t">{esc(title)}</title><desc id="{uid}-d">'
        f"{esc(desc)}</desc>{_defs(uid)}" + "".join(body) + "</svg>"
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
    marks: Sequence[tuple[float, float, str, str]],
    x_end: float | None = None,
) -> str:
    """A line chart: ``series`` (colour, attempt, points) and ``marks`` (x, y, glyph svg, tooltip); the x
    axis from 0 to ``x_end`` (default: the largest x, padded)."""
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

    body = [f'<text x="{x_at(0)}" y="14" font-size="11" fill="{NULL_COLOUR}">{esc(y_label)}</text>']
    ticks = linear_ticks(y_lo, y_hi, 4)
    for tick in ticks:
        body.append(f'<line x1="{x_at(0)}" x2="{x_at(1)}" y1="{py(tick):.1f}" y2="{py(tick):.1f}" stroke="#eaeef2"/>')
        body.append(
            f'<text x="{x_at(0)}" y="{py(tick) - 2:.1f}" font-size="10" fill="{NULL_COLOUR}">'
            f"{esc(number_label(tick, ticks))}</text>"
        )
    for colour, attempt, pts in series:
        shown = [(x, y) for x, y in _thin(pts) if y == y]  # NaN loss: a gap, listed in the text
        if not shown:
            continue
        coords = " ".join(f"{1000 * fx(x):.1f},{1000 * (py(y) - CHART_TOP) / CHART_H:.1f}" for x, y in shown)
        dash = DASHES[attempt % len(DASHES)]
        body.append(
            f'<svg x="{x_at(0)}" y="{CHART_TOP}" width="{XW}%" height="{CHART_H}" viewBox="0 0 1000 1000" '
            'preserveAspectRatio="none" overflow="visible"><polyline fill="none" '
            f'stroke="{colour}" stroke-width="1.6" vector-effect="non-scaling-stroke" points="{coords}"'
            + (f' stroke-dasharray="{dash}"' if dash else "")
            + "/></svg>"
        )
    for x, y, glyph, tip in marks:
        body.append(_at(fx(x), py(y), f"{glyph}<title>{esc(tip)}</title>"))
    body += linear_axis(x_hi, bottom, x_label, fx)
    return (
        f'<svg class="figure" width="100%" height="{bottom + 40}" role="img" aria-labelledby="{uid}-t {uid}-d" '
        f'font-family="system-ui, sans-serif"><title id="{uid}-t">{esc(title)}</title><desc id="{uid}-d">'
        f"{esc(title)}; the text equivalent after the figure gives the numbers</desc>" + "".join(body) + "</svg>"
    )


def progress_svgs(block: Block, uid: str) -> str:
    """Step over time and (when reported) training loss over steps, attempts distinguished."""
    runs = progress_runs(block)
    steps: list[tuple[str, int, list[tuple[float, float]]]] = []
    losses: list[tuple[str, int, list[tuple[float, float]]]] = []
    marks: list[tuple[float, float, str, str]] = []
    for i, t in enumerate(runs):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        for attempt, rows in by_attempt(t.progress or []).items():
            steps.append((colour, attempt, [(p.t_s, float(p.step)) for p in rows]))
            losses.append((colour, attempt, [(float(p.step), p.loss) for p in rows if p.loss is not None]))
            if attempt:
                marks.append(
                    (
                        rows[0].t_s,
                        float(rows[0].step),
                        f'<circle r="4" fill="#fff" stroke="{colour}" stroke-width="1.5"/>',
                        f"{t.arm}: attempt {attempt} resumed at step {rows[0].step}",
                    )
                )
        marks += [
            (f.start, float(f.step), CROSS, f"{t.arm}: {fault_label(f)} at {f.start:.4g} s")
            for f in faults(t.events)
            if f.step is not None
        ]
    out = _chart(
        f"{uid}-p",
        f"Step the programs reported over time, {block.title}",
        "time since the run's first start (s)",
        "step",
        steps,
        marks,
        x_end=max([t.end for t in block.runs] + [1e-9]) * 1.04,
    )  # the timeline's axis, above it
    if has_loss(block):
        out += _chart(
            f"{uid}-l",
            f"Training loss the programs reported over steps, {block.title}",
            "step the program reported",
            "training loss",
            losses,
            [],
        )
    return out


def _legend(block: Block, uid: str) -> str:
    def swatch(colour: str, hatch: str) -> str:
        pattern = _fill(f"{uid}-lg", hatch)  # the legend's own patterns (a figure's may be scrolled away)
        over = f'<rect x="1" y="2" width="24" height="10" fill="{pattern}"/>' if pattern else ""
        return (
            f'<svg width="26" height="14" aria-hidden="true" focusable="false">{_defs(f"{uid}-lg")}'
            f'<rect x="1" y="2" width="24" height="10" fill="{colour}" stroke="#333" stroke-width="0.6"/>'
            f"{over}</svg>"
        )

    items = [
        f"<li>{swatch(*ATTEMPT_DONE)}attempt that ran to its end</li>",
        f"<li>{swatch(*ATTEMPT_FAULTED)}attempt a fault ended (hatched /)</li>",
        f"<li>{swatch(*RESTART_STYLE)}restart: kill to next start (cross-hatched)</li>",
        f'<li><svg width="14" height="14" aria-hidden="true" focusable="false"><g transform="translate(7 7)">'
        f"{CROSS}</g></svg>fault, labelled with the program's step then</li>",
    ]
    kinds = sorted({e.kind for t in block.runs for e in phase_events(t.events)})
    items += [f"<li>{swatch(*SPAN_STYLE.get(k, OTHER_SPAN))}{esc(k)} (phase)</li>" for k in kinds]
    runs = progress_runs(block)
    items += [
        f'<li><svg width="26" height="14" aria-hidden="true" focusable="false"><line x1="1" x2="25" y1="7" '
        f'y2="7" stroke="{RUN_COLOURS[i % len(RUN_COLOURS)]}" stroke-width="3"/></svg>'
        f"{esc(run_name(block, t))} (curves)</li>"
        for i, t in enumerate(runs)
    ]
    if runs:
        items += ["<li>attempt 0 solid, 1 dashed, 2 dotted, 3 dash-dot; a hollow circle where an attempt resumed</li>"]
    return '<ul class="legend">' + "".join(items) + "</ul>"


def block_story(block: Block, uid: str) -> str:
    """One block: its timeline, its curves, the legend and every text equivalent."""
    fmt = seconds_format(block)
    parts = [f"<figure>{attempt_timeline_svg(block, uid)}"]
    if progress_runs(block):
        parts.append(progress_svgs(block, uid))
    parts.append(
        "<figcaption>Every arm of the block on one time axis: attempts, faults and restarts above the "
        "program's phase marks"
        + ("; below, the progress and loss each program reported" if progress_runs(block) else "")
        + ".</figcaption>"
        + _legend(block, uid)
        + "</figure>"
    )
    text = timeline_text(block)
    if progress_runs(block):
        text += "\n\n" + progress_text(block, fmt)
    if has_loss(block):
        text += "\n\n" + loss_text(block)
    parts.append(
        f"<details><summary>Text equivalent (as <code>reports plot RUNS --run {esc(block.run_id)}</code> "
        f"prints it)</summary><pre>{esc(text)}</pre></details>"
    )
    return "".join(parts)


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


def command_timeline_section(ctx: RunsContext, run_id: str | None) -> str:
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
    if not keys:
        return (
            '<p class="notice">No run of this plan kept an event or progress trace (none of its '
            f"{esc(origins_text(ctx.records))} did), so there is no timeline.</p>"
        )
    parts = [
        f"<p>{len(keys)} block{'s' if len(keys) != 1 else ''} of runs (stratum and replicate, every arm), "
        "each with its attempts, faults and restarts"
        + (f"; the first {MAX_BLOCKS} are drawn" if len(keys) > MAX_BLOCKS else "")
        + ".</p>"
    ]
    for n, (key, rid) in enumerate(list(keys.items())[:MAX_BLOCKS]):
        mates = [r for r in ctx.records if (repr(sorted(r.stratum.items())), r.replicate) == key]
        bad = [
            (r.run_id, name, why)
            for r in mates
            for name, why in ctx.problems.get(r.run_id, [])
            if name.endswith(TRACE_SUFFIXES)
        ]
        if bad:
            parts.append(
                '<p class="alarm">NOT DRAWN: the traces of the block of run '
                f"<code>{esc(rid)}</code> do not match the ledger: "
                + esc("; ".join(f"run {b[0]}: {b[1]} {b[2]}" for b in bad))
                + "</p>"
            )
            continue
        try:
            block = load_block(ctx.folder, rid)  # reads each trace only after it matches its record
        except (InputError, IntegrityError) as err:
            parts.append(f'<p class="alarm">NOT DRAWN: {esc(err)}</p>')
            continue
        parts.append(
            f"<details{' open' if n == 0 else ''}><summary>{esc(_summary(block))}</summary>"
            f"{block_story(block, f'st{n}')}</details>"
        )
    rest = list(keys.values())[MAX_BLOCKS:]
    if rest:
        parts.append(
            f'<p class="muted">{len(rest)} more blocks are not drawn here; '
            "<code>reports plot RUNS --run ID</code> draws any of them (e.g. "
            + ", ".join(f"<code>{esc(r)}</code>" for r in rest[:5])
            + ").</p>"
        )
    return "".join(parts)
