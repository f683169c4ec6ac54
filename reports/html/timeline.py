"""The HTML report's recovery timeline: one block's runs on one time axis (inline SVG) and the event list.

The block is the first in the ledger whose runs met a failure, or ``--run ID``'s; its traces are
read only after they matched the ledger (a changed one is not drawn). Lanes, kinds, marks and
colours are ``reports plot RUNS --run ID``'s, each kind also told by pattern or shape and named in
the legend. ``command`` runs are drawn by :mod:`reports.html.attempts` instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from markupsafe import Markup

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
from reports.html.render import macro, x_at
from reports.html.svg import hatch_fill, linear_axis, span
from reports.plots.figures import MARK_STYLE, OTHER_SPAN, SPAN_STYLE, merge_spans, timeline_lanes

if TYPE_CHECKING:
    from reports.data.timeline import Block
    from reports.html.runs import RunsContext

LANE = 36
COMMAND = "reports html RUNS --run ID"  # shown as code wherever a reason names it
TEMPLATE = "timeline.html"
MARK_WORDS = {  # the PNG's marker shapes (X, v, square, >, o), drawn by templates/timeline.html
    "failure": "cross",
    "preemption": "down triangle",
    "restore": "hollow square",
    "replay": "right triangle",
    "rejoin": "hollow circle",
}
HATCH_WORDS = {
    "////": "hatched /",
    "\\\\\\\\": "hatched \\",
    "xxxx": "cross-hatched",
    "xx": "cross-hatched",
    "....": "dotted",
    "++": "gridded",
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
            return block, f"The first block in the ledger whose runs met a failure; {COMMAND} draws another."
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


def timeline_svg(block: Block) -> Markup:
    """Every arm and site of the block as lanes on one time axis: spans by kind (colour and pattern), marks by shape."""
    lanes = timeline_lanes(block)
    end = max([t.end for t in block.runs] + [1e-9]) * 1.04

    def fx(t: float) -> float:
        return min(1.0, max(0.0, t / end))

    drawn = []
    for y_index, (label, i, site) in enumerate(lanes):
        top, items = 4 + LANE * y_index, list[tuple[Any, ...]]()
        events = [e for e in block.runs[i].events if e.site == site]
        for kind in sorted({e.kind for e in events}):
            spans = [(e.start, e.end) for e in events if e.kind == kind and e.end > e.start]
            if spans and (kind in SPAN_KINDS or kind not in MARK_KINDS):
                colour, hatch = SPAN_STYLE.get(kind, OTHER_SPAN)
                y, h = (top + 19, 8) if kind in ("state_transfer", "restore", "replay") else (top + 15, 16)
                items += [
                    ("span", x_at(fx(a)), y, span(0, w / end, 0.0015), h, colour, kind, hatch_fill("tl", hatch))
                    for a, w in merge_spans(spans)
                ]
            if kind in MARK_STYLE and kind in MARK_WORDS:
                dy = -6 if kind == "preemption" else 0
                starts = sorted({e.start for e in events if e.kind == kind})
                items += [("mark", x_at(fx(t)), top + 23 + dy, 0, 0, "", kind, None) for t in starts]
        drawn.append((label, top, items))
    runs = []
    for i, t in enumerate(block.runs):
        ys = [y for y, lane in enumerate(lanes) if lane[1] == i]
        done = (x_at(fx(t.end)), f"{t.arm} done {t.end:.4g} s") if t.events else None
        runs.append((i == 0, 4 + LANE * min(ys) + 13, 4 + LANE * max(ys) + 33, done))
    axis_y = 4 + LANE * len(lanes) + 4
    return macro(TEMPLATE, "timeline_svg")(
        height=axis_y + 40,
        title=f"Recovery timeline of {block.title}: every arm on one time axis",
        desc=f"{len(lanes)} lanes (arm and site); the event list after the figure gives every event's times",
        lanes=drawn,
        runs=runs,
        axis=linear_axis(end, axis_y, "time since the start of the run (s)", fx),
    )


def _legend(block: Block) -> list[tuple[str, str | None, str | None, str, str | None]]:
    """(kind, span colour, span pattern, hatch words, mark words) of every kind the block shows."""
    items = []
    for kind in kinds_present(block):
        colour, hatch = SPAN_STYLE.get(kind, OTHER_SPAN) if kind in SPAN_KINDS or kind not in MARK_KINDS else (None, "")
        words = (HATCH_WORDS.get(hatch, "patterned") if hatch else "") if colour else ""
        items.append((kind, colour, hatch_fill("tl", hatch), words, MARK_WORDS.get(kind)))
    return items


def event_list(block: Block) -> list[tuple[object, str, str, list[tuple[str, int | None, str]] | None]]:
    """Per arm, every event kind with its times in seconds: the figure's text equivalent."""
    fmt = seconds_format(block)
    out: list[tuple[object, str, str, list[tuple[str, int | None, str]] | None]] = []
    for t in block.runs:
        mark = " (the run asked for)" if t.run_id == block.run_id else ""
        if not t.events:
            out.append((t, mark, "", None))
            continue
        kinds = [k for k in TEXT_ORDER if any(e.kind == k for e in t.events)]
        kinds += sorted({e.kind for e in t.events} - set(TEXT_ORDER))
        items: list[tuple[str, int | None, str]] = []
        for kind in kinds:
            events = [e for e in t.events if e.kind == kind]
            if kind in SUMMARISED:
                items.append((kind, None, event_summary(events, fmt)))
                continue
            entries = event_entries(events, fmt)
            more = len(entries) - MAX_LISTED
            items.append(
                (kind, len(events), "; ".join(entries[:MAX_LISTED]) + (f"; and {more} more" if more > 0 else ""))
            )
        out.append((t, mark, fmt.format(t.end), items))
    return out


def timeline_section(ctx: RunsContext, run_id: str | None) -> Markup:
    """The chosen block's figure, legend, event list and (torch runs) held-out NLL table; for ``command``
    runs every block's attempts, faults, restarts and progress (:mod:`reports.html.attempts`)."""
    if is_story_plan(ctx.records):
        return command_timeline_section(ctx, run_id)
    block, why = choose_block(ctx, run_id)
    if block is None:
        return macro(TEMPLATE, "timeline_section")(None, why, COMMAND, None, [], [], "")
    drawn = any(t.events for t in block.runs)
    return macro(TEMPLATE, "timeline_section")(
        block,
        why,
        COMMAND,
        timeline_svg(block) if drawn else None,
        _legend(block) if drawn else [],
        event_list(block),
        nll_text(block) if has_trajectories(block) else "",
    )
