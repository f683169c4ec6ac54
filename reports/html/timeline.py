"""The HTML report's recovery timeline: one block's runs on one time axis (inline SVG) and the event list.

The block (every arm of one stratum and replicate) is read by :func:`reports.data.timeline.load_block`
(which reads the ``events.jsonl`` traces the ledger lists, never outside ``RUNS/traces``), after
the block's traces were re-hashed against their records: a changed trace is not drawn. The
default block is the first one in the ledger whose runs met a failure; ``reports html RUNS --run
ID`` picks ID's. Lanes, span kinds, marks and colours are those of ``reports plot RUNS --run ID``;
every kind also differs by pattern or shape and is named in the legend, and the event list below
the figure gives every time in words. Runs of the ``command`` collector are drawn by
:mod:`reports.html.attempts` instead: every block, with each run's attempts, faults and restarts and
the progress its program reported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prereg.errors import InputError, IntegrityError
from reports.data.origin import origins_text
from reports.data.timeline import (
    MARK_KINDS,
    MAX_LISTED,
    SPAN_KINDS,
    SUMMARISED,
    TEXT_ORDER,
    TRACE_SUFFIXES,
    event_entries,
    event_summary,
    has_trajectories,
    kinds_present,
    load_block,
    nll_text,
    seconds_format,
)
from reports.html.attempts import command_timeline_section, is_story_plan
from reports.html.svg import TEXT_COLOUR, XW, esc, linear_axis, x_at
from reports.plots.figures import MARK_STYLE, OTHER_SPAN, SPAN_STYLE, merge_spans, timeline_lanes

if TYPE_CHECKING:
    from reports.data.timeline import Block
    from reports.html.runs import RunsContext

LANE = 36
HATCHES = {  # the PNG's hatch strings as SVG patterns
    "////": '<path d="M0,8 L8,0" stroke="#333" stroke-width="1"/>',
    "\\\\\\\\": '<path d="M0,0 L8,8" stroke="#333" stroke-width="1"/>',
    "xxxx": '<path d="M0,0 L8,8 M0,8 L8,0" stroke="#333" stroke-width="0.8"/>',
    "xx": '<path d="M0,0 L8,8 M0,8 L8,0" stroke="#333" stroke-width="0.8"/>',
    "....": '<circle cx="4" cy="4" r="1.2" fill="#333"/>',
    "++": '<path d="M4,0 L4,8 M0,4 L8,4" stroke="#333" stroke-width="0.8"/>',
}
MARK_PATHS = {  # the PNG's marker shapes (X, v, square, >, o), 12 px across
    "failure": ('<path d="M-5,-5 L5,5 M-5,5 L5,-5" stroke="#000" stroke-width="2.2"/>', "cross"),
    "preemption": ('<path d="M-5,-4 L5,-4 L0,5 Z" fill="#000"/>', "down triangle"),
    "restore": (
        '<rect x="-4.5" y="-4.5" width="9" height="9" fill="#fff" stroke="#000" stroke-width="1.5"/>',
        "hollow square",
    ),
    "replay": ('<path d="M-4,-5 L5,0 L-4,5 Z" fill="#000"/>', "right triangle"),
    "rejoin": ('<circle r="4.5" fill="#fff" stroke="#000" stroke-width="1.5"/>', "hollow circle"),
}


def _has_failure(block: Block) -> bool:
    return any(e.kind in ("failure", "preemption") for t in block.runs for e in t.events)


def choose_block(ctx: RunsContext, run_id: str | None) -> tuple[Block | None, str]:
    """The block to draw and a sentence on why (or why none): ``run_id``'s, else the first that met a failure."""
    with_events = [r for r in ctx.records if any(t.endswith(".events.jsonl") for t in r.traces)]
    if run_id is not None:
        if run_id not in {r.run_id for r in ctx.records}:
            raise InputError(f"run {run_id}: not a run of this evaluation's plan in {ctx.ledger.path}")
        candidates = [r for r in ctx.records if r.run_id == run_id]
    else:
        candidates = with_events
    if not candidates or not with_events:
        return None, (
            f"No run of this plan kept an event trace (none of its {origins_text(ctx.records)} did), "
            "so there is no timeline."
        )
    seen: set[tuple[str, int]] = set()
    first: Block | None = None
    for r in candidates:
        key = (repr(sorted(r.stratum.items())), r.replicate)
        if key in seen:
            continue
        seen.add(key)
        block = _load_checked(ctx, r.run_id)
        if isinstance(block, str):
            return None, block
        if run_id is not None:
            return block, f"The block of run {run_id} (chosen with --run)."
        first = first or block
        if _has_failure(block):
            return block, (
                "The first block in the ledger whose runs met a failure; "
                "<code>reports html RUNS --run ID</code> draws another."
            )
    return first, "No block met a failure; the first block is drawn."


def _load_checked(ctx: RunsContext, run_id: str) -> Block | str:
    """The block, or why it is not drawn: a trace of its runs that does not match its record."""
    target = next(r for r in ctx.records if r.run_id == run_id)
    mates = [r for r in ctx.records if r.stratum == target.stratum and r.replicate == target.replicate]
    bad = [
        (r.run_id, name, why)
        for r in mates
        for name, why in ctx.problems.get(r.run_id, [])
        if name.endswith(TRACE_SUFFIXES)
    ]
    if bad:
        return "NOT DRAWN: the block's traces do not match the ledger: " + "; ".join(
            f"run {rid}: {name} {why}" for rid, name, why in bad
        )
    try:
        return load_block(ctx.folder, run_id)  # reads each trace only after it matches its record
    except (InputError, IntegrityError) as err:
        return f"NOT DRAWN: {err}"


def _defs() -> str:
    pats = "".join(
        f'<pattern id="tl-h{i}" width="8" height="8" patternUnits="userSpaceOnUse">{body}</pattern>'
        for i, body in enumerate(HATCHES.values())
    )
    return f"<defs>{pats}</defs>"


def _pattern(hatch: str) -> str | None:
    keys = list(HATCHES)
    return f"url(#tl-h{keys.index(hatch)})" if hatch in keys else None


def timeline_svg(block: Block) -> str:
    """Every arm and site of the block as lanes on one time axis: spans by kind (colour and pattern), marks by shape."""
    lanes = timeline_lanes(block)
    end = max([t.end for t in block.runs] + [1e-9]) * 1.04
    body: list[str] = []

    def fx(t: float) -> float:
        return min(1.0, max(0.0, t / end))

    for y_index, (label, i, site) in enumerate(lanes):
        top = 4 + LANE * y_index
        body.append(f'<text x="{x_at(0)}" y="{top + 11}" font-size="12" fill="{TEXT_COLOUR}">{esc(label)}</text>')
        body.append(f'<rect x="{x_at(0)}" width="{XW}%" y="{top + 15}" height="16" fill="#f6f8fa"/>')
        events = [e for e in block.runs[i].events if e.site == site]
        for kind in sorted({e.kind for e in events}):
            spans = [(e.start, e.end) for e in events if e.kind == kind and e.end > e.start]
            if spans and (kind in SPAN_KINDS or kind not in MARK_KINDS):
                colour, hatch = SPAN_STYLE.get(kind, OTHER_SPAN)
                thin = kind in ("state_transfer", "restore", "replay")
                y, h = (top + 19, 8) if thin else (top + 15, 16)
                pattern = _pattern(hatch)
                for a, w in merge_spans(spans):
                    rect = f'x="{x_at(fx(a))}" width="{XW * max(w / end, 0.0015):.3f}%" y="{y}" height="{h}"'
                    body.append(f'<rect {rect} fill="{colour}"><title>{esc(kind)}</title></rect>')
                    if pattern:
                        body.append(f'<rect {rect} fill="{pattern}"/>')
            if kind in MARK_STYLE and kind in MARK_PATHS:
                for start in sorted({e.start for e in events if e.kind == kind}):
                    dy = -6 if kind == "preemption" else 0
                    body.append(
                        f'<svg x="{x_at(fx(start))}" y="{top + 23 + dy}" width="1" height="1" '
                        f'overflow="visible">{MARK_PATHS[kind][0]}</svg>'
                    )
    for i, t in enumerate(block.runs):
        ys = [y for y, lane in enumerate(lanes) if lane[1] == i]
        y0, y1 = 4 + LANE * min(ys) + 13, 4 + LANE * max(ys) + 33
        if i:
            body.append(f'<line x1="0" x2="100%" y1="{y0 - 15}" y2="{y0 - 15}" stroke="#8c959f"/>')
        if t.events:
            f = fx(t.end)
            body.append(f'<line x1="{x_at(f)}" x2="{x_at(f)}" y1="{y0}" y2="{y1}" stroke="#000" stroke-width="2"/>')
            body.append(
                f'<text x="{x_at(f)}" y="{y0 - 1}" font-size="11" text-anchor="end" fill="{TEXT_COLOUR}">'
                f"{esc(t.arm)} done {t.end:.4g} s</text>"
            )
    axis_y = 4 + LANE * len(lanes) + 4
    body += linear_axis(end, axis_y, "time since the start of the run (s)", fx)
    title = f"Recovery timeline of {block.title}: every arm on one time axis"
    desc = f"{len(lanes)} lanes (arm and site); the event list after the figure gives every event's times"
    return (
        f'<svg class="figure" width="100%" height="{axis_y + 40}" role="img" aria-labelledby="tl-t tl-d" '
        f'font-family="system-ui, sans-serif"><title id="tl-t">{esc(title)}</title><desc id="tl-d">{esc(desc)}'
        f"</desc>{_defs()}" + "".join(body) + "</svg>"
    )


def _legend(block: Block) -> str:
    items = []
    for kind in kinds_present(block):
        if kind in SPAN_KINDS or kind not in MARK_KINDS:
            colour, hatch = SPAN_STYLE.get(kind, OTHER_SPAN)
            pattern = _pattern(hatch)
            over = f'<rect x="1" y="2" width="24" height="10" fill="{pattern}"/>' if pattern else ""
            swatch = (
                f'<svg width="26" height="14" aria-hidden="true" focusable="false">{_defs()}'
                f'<rect x="1" y="2" width="24" height="10" fill="{colour}"/>{over}</svg>'
            )
            items.append(f"<li>{swatch}{esc(kind)} (span{', ' + _hatch_words(hatch) if hatch else ''})</li>")
        if kind in MARK_PATHS:
            path, words = MARK_PATHS[kind]
            swatch = (
                f'<svg width="16" height="14" aria-hidden="true" focusable="false">'
                f'<g transform="translate(8 7)">{path}</g></svg>'
            )
            items.append(f"<li>{swatch}{esc(kind)} (mark at its start: {esc(words)})</li>")
    items.append(
        '<li><svg width="10" height="14" aria-hidden="true" focusable="false"><line x1="5" x2="5" y1="0" '
        'y2="14" stroke="#000" stroke-width="2"/></svg>run done</li>'
    )
    return '<ul class="legend">' + "".join(items) + "</ul>"


def _hatch_words(hatch: str) -> str:
    return {
        "////": "hatched /",
        "\\\\\\\\": "hatched \\",
        "xxxx": "cross-hatched",
        "xx": "cross-hatched",
        "....": "dotted",
        "++": "gridded",
    }.get(hatch, "patterned")


def event_list(block: Block) -> str:
    """Per arm, every event kind with its times in seconds: the figure's text equivalent."""
    fmt = seconds_format(block)
    out = []
    for t in block.runs:
        mark = " (the run asked for)" if t.run_id == block.run_id else ""
        if not t.events:
            out.append(
                f"<h3>{esc(t.arm)}</h3><p>run <code>{esc(t.run_id)}</code>{esc(mark)}, {esc(t.status)}: "
                "no event trace</p>"
            )
            continue
        kinds = [k for k in TEXT_ORDER if any(e.kind == k for e in t.events)]
        kinds += sorted({e.kind for e in t.events} - set(TEXT_ORDER))
        items = []
        for kind in kinds:
            events = [e for e in t.events if e.kind == kind]
            if kind in SUMMARISED:
                items.append(f"<li><strong>{esc(kind)}</strong>: {esc(event_summary(events, fmt))}</li>")
                continue
            entries = event_entries(events, fmt)
            more = len(entries) - MAX_LISTED
            shown = "; ".join(entries[:MAX_LISTED]) + (f"; and {more} more" if more > 0 else "")
            items.append(f"<li><strong>{esc(kind)}</strong> ({len(events)}): {esc(shown)}</li>")
        out.append(
            f"<h3>{esc(t.arm)}</h3><p>run <code>{esc(t.run_id)}</code>{esc(mark)}, {esc(t.status)}, "
            f"ends at {esc(fmt.format(t.end))} s; times in seconds from the run's start:</p>"
            f"<ul>{''.join(items)}</ul>"
        )
    return "".join(out)


def timeline_section(ctx: RunsContext, run_id: str | None) -> str:
    """The chosen block's figure, legend, event list and (torch runs) held-out NLL table; for ``command``
    runs every block's attempts, faults, restarts and progress (:mod:`reports.html.attempts`)."""
    if is_story_plan(ctx.records):
        return command_timeline_section(ctx, run_id)
    block, why = choose_block(ctx, run_id)
    if block is None:
        cls = "alarm" if why.startswith("NOT DRAWN") else "notice"
        return f'<p class="{cls}">{esc(why)}</p>'
    parts = [f"<p><strong>{esc(block.title)}</strong>. {_why_html(why)}</p>"]
    if any(t.events for t in block.runs):
        parts.append(
            f"<figure>{timeline_svg(block)}<figcaption>Every policy of the block on one time axis; the "
            "event list below gives the same events in words.</figcaption>" + _legend(block) + "</figure>"
        )
    parts.append(event_list(block))
    if has_trajectories(block):
        parts.append(
            f"<details><summary>Held-out NLL over ticks (table)</summary><pre>{esc(nll_text(block))}</pre></details>"
        )
    return "".join(parts)


def _why_html(why: str) -> str:
    """The reason sentence: escaped, with the one command it names shown as code."""
    command = "<code>reports html RUNS --run ID</code>"
    return command.join(esc(part) for part in why.split(command))
