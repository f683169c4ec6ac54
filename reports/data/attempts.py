"""The story of a ``command`` run: its attempts, faults, restarts and phases, and its reported progress.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from collect.traces.events import Event

if TYPE_CHECKING:
    from collect.traces.progress import Progress
    from reports.data.timeline import Block, RunTrace

STORY_KINDS = ("attempt", "failure", "restart")  # the collector's own events; every other kind is a phase mark
MAX_ROWS = 12  # rows of a sampled table


@dataclass(frozen=True)
class AttemptRow:
    """One start of the program: its number (0 the first), span in seconds, the fault that ended it
    (None: it ran to its end) and the restart that followed (None: none followed)."""

    index: int
    start: float
    end: float
    aborted: bool
    fault: Event | None = None
    restart: Event | None = None


def has_attempts(events: Sequence[Event]) -> bool:
    """Whether the trace is a command run's (it holds ``attempt`` spans)."""
    return any(e.kind == "attempt" for e in events)


def phase_events(events: Sequence[Event]) -> list[Event]:
    """The program's phase marks (every kind but the collector's own attempt, failure and restart)."""
    return [e for e in events if e.kind not in STORY_KINDS]


def restarts(events: Sequence[Event]) -> list[Event]:
    """The restarts in time order: the k-th (1-based) started the program with ``PREREG_RESTART=k``."""
    return sorted((e for e in events if e.kind == "restart"), key=lambda e: (e.start, e.end))


def faults(events: Sequence[Event]) -> list[Event]:
    """The faults (``failure`` instants) in time order."""
    return sorted((e for e in events if e.kind == "failure"), key=lambda e: (e.start, e.end))


def attempt_rows(events: Sequence[Event]) -> list[AttemptRow]:
    """The attempts in time order, each with the fault that ended it and the restart after it.

    A fault belongs to the attempt its ``attempt`` field names, else to the attempt whose span holds
    its time (the latest such); a restart follows the attempt that ended where (or just before) it
    starts. Attempts are numbered by their ``attempt`` field, else in time order."""
    spans = sorted((e for e in events if e.kind == "attempt"), key=lambda e: (e.start, e.end))
    numbers = [e.attempt if e.attempt is not None else i for i, e in enumerate(spans)]
    fault_of: dict[int, Event] = {}
    for f in faults(events):
        owner = next((i for i, n in enumerate(numbers) if f.attempt is not None and n == f.attempt), None)
        if owner is None:
            owner = next((i for i in reversed(range(len(spans))) if spans[i].start <= f.start <= spans[i].end), None)
        if owner is not None:
            fault_of.setdefault(owner, f)
    restart_of: dict[int, Event] = {}
    for r in restarts(events):
        ended = [i for i, a in enumerate(spans) if a.end <= r.start + 1e-9 and i not in restart_of]
        if ended:
            restart_of[max(ended, key=lambda i: spans[i].end)] = r
    return [
        AttemptRow(n, a.start, a.end, a.aborted, fault_of.get(i), restart_of.get(i))
        for i, (n, a) in enumerate(zip(numbers, spans, strict=True))
    ]


def attempt_of(event: Event, rows: Sequence[AttemptRow]) -> int | None:
    """The attempt an event fell in: its ``attempt`` field, else the attempt whose span holds its start."""
    if event.attempt is not None:
        return event.attempt
    inside = [r.index for r in rows if r.start <= event.start <= r.end]
    return inside[-1] if inside else None


def fault_label(fault: Event) -> str:
    """'fault at step 120', or 'fault at 4.1 s' when the program had reported no progress."""
    return f"fault at step {fault.step}" if fault.step is not None else f"fault at {fault.start:.4g} s"


def story_counts(events: Sequence[Event]) -> str:
    """'3 attempts, 2 faults, 2 restarts'."""
    n = len([e for e in events if e.kind == "attempt"])
    f, r = len(faults(events)), len(restarts(events))
    return f"{n} attempt{'s' if n != 1 else ''}, {f} fault{'s' if f != 1 else ''}, {r} restart{'s' if r != 1 else ''}"


def attempt_lines(events: Sequence[Event], fmt: str, width: int) -> list[str]:
    """The timeline's text for the collector's own events: one line per attempt, fault and restart."""
    lines = []
    rows = attempt_rows(events)
    for k, row in enumerate(rows):
        head = f"  {'attempt ' + str(row.index):<{width}}"
        if row.fault is not None:
            how = f"ended by the {fault_label(row.fault)} at {fmt.format(row.fault.start)} s"
        elif row.aborted:
            how = "ABORTED (no fault recorded)"
        else:
            how = "ran to its end"
        lines.append(f"{head}{fmt.format(row.start)}-{fmt.format(row.end)} s, {how}")
        if row.restart is not None:
            number = sum(1 for r in rows[: k + 1] if r.restart is not None)
            lines.append(
                f"  {'restart ' + str(number):<{width}}{fmt.format(row.restart.start)}-"
                f"{fmt.format(row.restart.end)} s (the program started again with PREREG_RESTART={number})"
            )
    owned = {id(r.fault) for r in rows if r.fault is not None}
    for f in faults(events):
        if id(f) not in owned:
            lines.append(f"  {'fault':<{width}}{fmt.format(f.start)} s, {fault_label(f)}, during no attempt")
    return lines


# --- progress --------------------------------------------------------------------------------------


def by_attempt(rows: Sequence[Progress]) -> dict[int, list[Progress]]:
    """The reports of each attempt, in report order, attempts ascending."""
    out: dict[int, list[Progress]] = {}
    for p in rows:
        out.setdefault(p.attempt, []).append(p)
    return dict(sorted(out.items()))


def _loss(value: float | None) -> str:
    return "-" if value is None else "nan" if math.isnan(value) else f"{value:.4g}"


def _range(values: list[int]) -> str:
    return f"{values[0]}" if values[0] == values[-1] else f"{values[0]}-{values[-1]}"


def _attempt_progress(attempt: int, rows: list[Progress], before: list[Progress] | None, fmt: str) -> str:
    steps = [p.step for p in rows]
    line = (
        f"  attempt {attempt}: {len(rows)} report{'s' if len(rows) != 1 else ''}, "
        f"{fmt.format(rows[0].t_s)}-{fmt.format(rows[-1].t_s)} s, step {_range(steps)}"
    )
    if before:
        line += f" (resumed at step {steps[0]}; last report before: step {before[-1].step})"
    tokens = [p.tokens for p in rows if p.tokens is not None]
    if tokens:
        line += f", tokens {_range(tokens)}"
    losses = [p.loss for p in rows if p.loss is not None]
    if losses:
        line += f", loss {_loss(losses[0])} -> {_loss(losses[-1])}"
    return line


def progress_runs(block: Block) -> list[RunTrace]:
    """The block's runs that left a progress trace with at least one report."""
    return [t for t in block.runs if t.progress]


def progress_text(block: Block, fmt: str) -> str:
    """The progress plot's text equivalent: per run and attempt, its reports, steps, tokens and loss."""
    lines = [f"Progress the programs reported, {block.title}; times in seconds from each run's first start"]
    for t in block.runs:
        mark = " (the run asked for)" if t.run_id == block.run_id else ""
        if not t.progress:
            lines.append(f"{t.arm}: run {t.run_id}{mark}: no progress reported")
            continue
        groups = by_attempt(t.progress)
        lines.append(
            f"{t.arm}: run {t.run_id}{mark}: {len(t.progress)} reports in {len(groups)} "
            f"attempt{'s' if len(groups) != 1 else ''}"
        )
        previous: list[Progress] | None = None
        for attempt, rows in groups.items():
            lines.append(_attempt_progress(attempt, rows, previous, fmt))
            previous = rows
        for row in attempt_rows(t.events):
            if row.fault is not None:
                lines.append(f"  {fault_label(row.fault)} at {fmt.format(row.fault.start)} s ended attempt {row.index}")
    return "\n".join(lines)


def has_loss(block: Block) -> bool:
    return any(p.loss is not None for t in block.runs for p in t.progress or [])


def loss_curve(rows: Sequence[Progress]) -> list[tuple[int, float]]:
    """(step, loss) of the run as it finally stands: for a step reported more than once (work replayed
    after a fault), its latest report."""
    latest: dict[int, float] = {}
    for p in rows:
        if p.loss is not None:
            latest[p.step] = p.loss
    return sorted(latest.items())


def _loss_at(curve: list[tuple[int, float]], step: int) -> str:
    if not curve or step < curve[0][0] or step > curve[-1][0]:
        return "-"
    return _loss([loss for s, loss in curve if s <= step][-1])


def loss_text(block: Block) -> str:
    """The loss plot's text equivalent: a table of step vs training loss per arm (each cell the latest
    report at or before the step), then each run's final loss and its replayed steps."""
    runs = [t for t in block.runs if any(p.loss is not None for p in t.progress or [])]
    curves = [loss_curve(t.progress or []) for t in runs]
    steps = sorted({s for c in curves for s, _ in c})
    if len(steps) > MAX_ROWS:  # evenly spaced rows, always with the first and each run's last step
        stride = (len(steps) - 1) / (MAX_ROWS - 1)
        steps = sorted({steps[round(i * stride)] for i in range(MAX_ROWS)} | {c[-1][0] for c in curves})
    names = [t.arm for t in runs]
    widths = [max(len(n), 8) for n in names]
    step_w = max([4] + [len(str(s)) for s in steps])
    lines = [
        f"Training loss the programs reported over steps, {block.title}; each cell is the latest report at or "
        "before the step (a replayed step: its report after the restart)"
    ]
    lines.append(f"{'step':>{step_w}}  " + "  ".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True)))
    for step in steps:
        cells = [f"{_loss_at(c, step):>{w}}" for c, w in zip(curves, widths, strict=True)]
        lines.append(f"{step:>{step_w}}  " + "  ".join(cells))
    for t, curve in zip(runs, curves, strict=True):
        reported = [p.step for p in t.progress or [] if p.loss is not None]
        replayed = len(reported) - len(set(reported))
        lines.append(
            f"final {t.arm}: step {curve[-1][0]}, loss {_loss(curve[-1][1])} (run {t.run_id}; "
            f"{replayed} report{'s' if replayed != 1 else ''} of a step already reported: replayed work)"
        )
    kept = {id(t) for t in runs}
    missing = [t.arm for t in block.runs if id(t) not in kept]
    if missing:
        lines.append("no loss reported by: " + ", ".join(missing))
    return "\n".join(lines)


__all__ = [
    "STORY_KINDS",
    "AttemptRow",
    "attempt_lines",
    "attempt_of",
    "attempt_rows",
    "by_attempt",
    "fault_label",
    "faults",
    "has_attempts",
    "has_loss",
    "loss_curve",
    "loss_text",
    "phase_events",
    "progress_runs",
    "progress_text",
    "restarts",
    "story_counts",
]
