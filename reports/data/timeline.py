"""The data behind ``reports plot RUNS --run ID``: one block's runs, their event traces and NLL trajectories.

A *block* is every run in ``RUNS/ledger.jsonl`` with the same plan, stratum and replicate as the run
asked for: one run per arm (policy), all meeting the same outages. For each run this module reads

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collect.ledger.cells import run_record, standing
from collect.traces.events import Event, read_events
from collect.traces.progress import Progress, read_progress
from collect.traces.trajectory import read_trajectory
from prereg.errors import InputError, IntegrityError
from reports.data.attempts import attempt_lines, attempt_of, attempt_rows, has_attempts, phase_events, story_counts

if TYPE_CHECKING:
    from collect.ledger.store import Ledger, RunRecord

# Kinds the timeline draws as spans (bars) and as marks (symbols at the event's start), in legend order.
SPAN_KINDS = ("compute", "checkpoint", "collective", "state_transfer", "restore", "replay", "failure")
MARK_KINDS = ("failure", "preemption", "restore", "replay", "rejoin")
# Order of kinds in the text equivalent: recovery first, then the routine work.
TEXT_ORDER = (
    "failure",
    "preemption",
    "restore",
    "replay",
    "state_transfer",
    "rejoin",
    "checkpoint",
    "compute",
    "collective",
)
TRACE_SUFFIXES = (".events.jsonl", ".trajectory.csv", ".progress.csv")  # the traces a block's plots read
SUMMARISED = ("compute", "collective")  # too many to list one by one: count, busy time, range
MAX_LISTED = 40
WRAP = 100


@dataclass
class RunTrace:
    """One run of the block: its arm, events (empty when no trace) and trajectory (None when none)."""

    run_id: str
    arm: str
    status: str
    events: list[Event] = field(default_factory=list)
    events_path: Path | None = None
    trajectory: list[tuple[float, float]] | None = None  # (tick, held-out NLL)
    trajectory_path: Path | None = None
    progress: list[Progress] | None = None  # what a command run's program reported (None: no trace)
    progress_path: Path | None = None

    @property
    def end(self) -> float:
        return max((e.end for e in self.events), default=0.0)

    @property
    def sites(self) -> list[int]:
        return sorted({e.site for e in self.events if e.site is not None})

    @property
    def has_job_events(self) -> bool:
        return any(e.site is None for e in self.events)


@dataclass
class Block:
    """The runs of one stratum and replicate (one per arm, sorted by arm), and the run asked for."""

    run_id: str
    stratum: dict[str, Any]
    replicate: int
    runs: list[RunTrace]
    unlisted: list[str] = field(default_factory=list)  # trace files no record lists: never drawn

    @property
    def title(self) -> str:
        where = ", ".join(f"{k}={v}" for k, v in self.stratum.items()) or "no factors"
        return f"stratum {where}, replicate {self.replicate}"


def _trace_file(runs_dir: Path, traces: list[str], run_id: str, suffix: str) -> tuple[str | None, Path | None]:
    """The run's trace ending in ``suffix`` as its record lists it (its name and path), else
    ``(None, the unlisted file)`` when ``traces/<run_id><suffix>`` exists: a file no record lists
    cannot be checked against the ledger and is never drawn."""
    from collect.ledger.store import trace_path  # lazy: pydantic

    for rel in traces:
        if rel.endswith(suffix):
            try:
                return rel, trace_path(runs_dir, rel)  # never outside RUNS/traces, never through a link
            except OSError as err:
                raise IntegrityError(f"run {run_id}: trace {err.filename}: {err.strerror}; not read") from None
    stray = runs_dir / "traces" / f"{run_id}{suffix}"
    return None, stray if stray.exists() or stray.is_symlink() else None


def open_runs_ledger(runs_dir: str | Path) -> Ledger:
    """The runs folder's ledger; ``InputError`` (one message) for a missing folder or one without
    ``ledger.jsonl``."""
    from collect.ledger.store import LEDGER_NAME, read_ledger  # lazy: pydantic

    folder = Path(runs_dir)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder" if not folder.exists() else f"{folder}: not a folder")
    ledger = read_ledger(folder)
    if not ledger.path.is_file():
        raise InputError(f"{folder}: not a runs folder (no {LEDGER_NAME})")
    return ledger


def find_run(runs_dir: str | Path, run_id: str) -> tuple[Ledger, RunRecord]:
    """The runs folder's ledger and ``run_id``'s record (the ledger's duplicate rule,
    ``collect.ledger.cells``: its complete record, else its last failed one; ``DuplicateCell`` when
    recorded complete twice); ``InputError`` (one message) for a missing folder, a folder without a
    ledger or an unknown id."""
    ledger = open_runs_ledger(runs_dir)
    target = run_record(ledger.records, run_id)
    if target is None:
        some = ", ".join(sorted({r.run_id for r in ledger.records})[:3])
        hint = f" (it holds {len(ledger.records)} runs, e.g. {some})" if some else " (it holds no runs)"
        raise InputError(f"run {run_id}: not in {ledger.path}{hint}")
    return ledger, target


def load_block(runs_dir: str | Path, run_id: str) -> Block:
    """The block of ``run_id`` in the runs folder, with every run's events and trajectory."""
    folder = Path(runs_dir)
    ledger, target = find_run(folder, run_id)
    same = standing(
        r
        for r in ledger.records
        if r.prereg_sha256 == target.prereg_sha256 and r.stratum == target.stratum and r.replicate == target.replicate
    )
    from collect.ledger.trace_check import read_verified_trace  # lazy: pydantic

    runs, unlisted = [], []
    for r in sorted(same.values(), key=lambda r: (r.arm, r.run_id)):
        trace = RunTrace(r.run_id, r.arm, r.status)
        for suffix in TRACE_SUFFIXES:
            name, path = _trace_file(folder, r.traces, r.run_id, suffix)
            if name is None:
                if path is not None:
                    unlisted.append(str(path))
                continue
            assert path is not None
            if not path.exists() and not path.is_symlink():
                raise InputError(f"{path}: no such file (listed in the ledger for run {r.run_id})")
            data = read_verified_trace(folder, r, name)  # exit 3 unless it matches the record's SHA-256
            if suffix == ".events.jsonl":
                trace.events_path, trace.events = path, read_events(path, data)
            elif suffix == ".trajectory.csv":
                trace.trajectory_path, trace.trajectory = path, read_trajectory(path, data)
            else:
                trace.progress_path, trace.progress = path, read_progress(path, data)
        runs.append(trace)
    if not any(t.events_path or t.trajectory_path or t.progress_path for t in runs):
        note = (
            (
                f"; {', '.join(unlisted)} exist(s) but no record lists them, so they cannot be checked against "
                "the ledger and are not drawn"
            )
            if unlisted
            else ""
        )
        raise InputError(
            f"run {run_id}: no event trace, trajectory or progress trace for any run of its block "
            f"(looked in {folder / 'traces'}){note}"
        )
    return Block(run_id, dict(target.stratum), target.replicate, runs, unlisted)


def seconds_format(block: Block) -> str:
    """A format for times: finer for short runs (torch on CPU) than for long ones (simulated)."""
    longest = max((t.end for t in block.runs), default=0.0)
    return "{:.3f}" if longest < 10 else "{:.2f}" if longest < 100 else "{:.1f}"


def event_entries(events: list[Event], fmt: str) -> list[str]:
    """'22.8-29.1 site 0' per event; events at the same times on several sites are merged."""
    merged: dict[tuple[float, float, bool], list[str]] = {}
    for e in events:
        merged.setdefault((e.start, e.end, e.aborted), []).append("all" if e.site is None else str(e.site))
    out = []
    for (start, end, aborted), sites in sorted(merged.items()):
        when = fmt.format(start) if end == start else f"{fmt.format(start)}-{fmt.format(end)}"
        where = ("site " if sites == ["all"] or len(sites) == 1 else "sites ") + ",".join(sites)
        out.append(f"{when} {where}" + (" ABORTED" if aborted else ""))
    return out


def _wrap(head: str, first: str, entries: list[str]) -> list[str]:
    """``head first e1; e2; ...`` wrapped at ``WRAP`` columns between entries, never inside one."""
    lines, line = [], f"{head}{first}"
    for i, entry in enumerate(entries):
        piece = entry + (";" if i < len(entries) - 1 else "")
        if len(line) + 1 + len(piece) > WRAP and line.strip() != first:
            lines.append(line)
            line = " " * len(head) + piece
        else:
            line += " " + piece
    return lines + [line]


def event_summary(events: list[Event], fmt: str) -> str:
    busy = sum(e.end - e.start for e in events)
    sites = sorted({"all" if e.site is None else str(e.site) for e in events})
    first, last = min(e.start for e in events), max(e.end for e in events)
    return (
        f"{len(events)} spans on site {','.join(sites)}, {fmt.format(busy)} s busy in all, "
        f"from {fmt.format(first)} to {fmt.format(last)}"
    )


def kinds_present(block: Block) -> list[str]:
    """Every event kind in the block's traces, known kinds first in their order."""
    seen = {e.kind for t in block.runs for e in t.events}
    return [k for k in TEXT_ORDER if k in seen] + sorted(seen - set(TEXT_ORDER))


def timeline_text(block: Block) -> str:
    """The timeline's text equivalent: per arm, every event kind with its times in seconds."""
    fmt = seconds_format(block)
    lines = [f"Recovery timeline of {block.title} (run {block.run_id}); times in seconds from each run's start"]
    if any(has_attempts(t.events) for t in block.runs):
        lines = [
            f"Timeline of {block.title} (run {block.run_id}): each run's attempts, faults, restarts and phase "
            "marks; times in seconds from each run's first start"
        ]
    width = max((len(k) for k in kinds_present(block)), default=8) + 2
    if any(has_attempts(t.events) for t in block.runs):  # room for 'attempt 12' and 'restart 12'
        width = max(width, 12)
    for t in block.runs:
        mark = " (the run asked for)" if t.run_id == block.run_id else ""
        if not t.events:
            lines.append(f"{t.arm}: run {t.run_id}{mark}, {t.status}: no event trace")
            continue
        story = has_attempts(t.events)
        counts = f": {story_counts(t.events)}" if story else ""
        lines.append(f"{t.arm}: run {t.run_id}{mark}, {t.status}, ends at {fmt.format(t.end)} s{counts}")
        if story:  # a command run: its attempts, faults and restarts, then its phase marks by attempt
            lines += attempt_lines(t.events, fmt, width)
            lines += _phase_lines(t.events, fmt, width)
            continue
        kinds = [k for k in TEXT_ORDER if any(e.kind == k for e in t.events)]
        kinds += sorted({e.kind for e in t.events} - set(TEXT_ORDER))
        for kind in kinds:
            events = [e for e in t.events if e.kind == kind]
            head = f"  {kind:<{width}}"
            if kind in SUMMARISED:
                lines.append(head + event_summary(events, fmt))
                continue
            entries = event_entries(events, fmt)
            more = len(entries) - MAX_LISTED
            entries = entries[:MAX_LISTED] + ([f"and {more} more"] if more > 0 else [])
            lines += _wrap(head, f"{len(events)}:", entries)
    return "\n".join(lines)


def _phase_lines(events: list[Event], fmt: str, width: int) -> list[str]:
    """A command run's phase marks per kind: each with its times and the attempt it fell in."""
    rows, lines = attempt_rows(events), []
    marks = phase_events(events)
    kinds = [k for k in TEXT_ORDER if any(e.kind == k for e in marks)]
    for kind in kinds + sorted({e.kind for e in marks} - set(TEXT_ORDER)):
        of_kind = sorted((e for e in marks if e.kind == kind), key=lambda e: (e.start, e.end))
        head = f"  {kind:<{width}}"
        if kind in SUMMARISED:
            busy = sum(e.end - e.start for e in of_kind)
            lines.append(
                f"{head}{len(of_kind)} spans, {fmt.format(busy)} s in all, from "
                f"{fmt.format(of_kind[0].start)} to {fmt.format(max(e.end for e in of_kind))}"
            )
            continue
        entries = []
        for e in of_kind:
            when = fmt.format(e.start) if e.end == e.start else f"{fmt.format(e.start)}-{fmt.format(e.end)}"
            attempt = attempt_of(e, rows)
            entries.append(when + (f" attempt {attempt}" if attempt is not None else " between attempts"))
        more = len(entries) - MAX_LISTED
        entries = entries[:MAX_LISTED] + ([f"and {more} more"] if more > 0 else [])
        lines += _wrap(head, f"{len(of_kind)}:", entries)
    return lines


def has_trajectories(block: Block) -> bool:
    return any(t.trajectory for t in block.runs)


def _nll_at(rows: list[tuple[float, float]], tick: float) -> str:
    """The NLL of the last evaluation at or before ``tick`` ('-' before the first, or after the run ended)."""
    if not rows or tick < rows[0][0] or tick > rows[-1][0]:
        return "-"
    value = [nll for t, nll in rows if t <= tick][-1]
    return "nan" if math.isnan(value) else f"{value:.4f}"


def nll_text(block: Block, max_rows: int = 12) -> str:
    """The NLL plot's text equivalent: a table of tick vs held-out NLL (nats/token), one column per arm."""
    runs = [t for t in block.runs if t.trajectory]
    ticks = sorted({tick for t in runs for tick, _ in t.trajectory or []})
    if len(ticks) > max_rows:  # evenly spaced rows, always with the first and each arm's last tick
        step = (len(ticks) - 1) / (max_rows - 1)
        chosen = {ticks[round(i * step)] for i in range(max_rows)}
        chosen |= {(t.trajectory or [])[-1][0] for t in runs}
        ticks = sorted(chosen)
    names = [t.arm for t in runs]
    widths = [max(len(n), 8) for n in names]
    tick_w = max([4] + [len(f"{x:g}") for x in ticks])
    lines = [
        (
            f"Held-out NLL (nats/token) over ticks, {block.title}; each cell is the arm's last evaluation at "
            "or before the tick ('-': not started or already finished)"
        )
    ]
    lines.append(f"{'tick':>{tick_w}}  " + "  ".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True)))
    for tick in ticks:
        cells = [f"{_nll_at(t.trajectory or [], tick):>{w}}" for t, w in zip(runs, widths, strict=True)]
        lines.append(f"{tick:>{tick_w}g}  " + "  ".join(cells))
    for t in runs:
        last_tick, last_nll = (t.trajectory or [])[-1]
        lines.append(f"final {t.arm}: tick {last_tick:g}, NLL {last_nll:.4f} (run {t.run_id})")
    missing = [t.arm for t in block.runs if not t.trajectory]
    if missing:
        lines.append("no trajectory recorded for: " + ", ".join(missing))
    return "\n".join(lines)
