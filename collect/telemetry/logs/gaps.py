"""Stretches of a converted log with no reading: a logger that died (with the job, or before it).

More in ``docs/internals.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from collect.telemetry.sensors.base import DEFAULT_POWER_RANGE_W
from collect.traces.telemetry import Trace

#: a gap longer than this many poll intervals is shown
GAP_POLLS = 10
#: logs whose times are not wall-clock times (dcgmi dmon: samples placed from 0 by its delay)
NO_WALL_CLOCK = {"log:dcgm"}
#: logs whose zone-less times are read as UTC
ZONELESS = {"log:nvidia-smi", "log:codecarbon"}


@dataclass(frozen=True)
class Gap:
    """A stretch without a reading of one signal: where it starts and ends (ns since the log's
    start), and whether a counter reset lies across it (its energy then bounded by the range)."""

    start_ns: int
    end_ns: int
    reset: bool

    @property
    def seconds(self) -> float:
        """The gap's length (s)."""
        return (self.end_ns - self.start_ns) / 1e9


def reading_gaps(trace: Trace, signal: str) -> list[Gap]:
    """Every gap longer than :data:`GAP_POLLS` poll intervals between two ok readings of
    ``signal``, longest first."""
    rows = trace.rows(signal)
    before, after, value = rows["t_before_ns"], rows["t_after_ns"], rows["value"]
    if before.size < 2:
        return []
    limit = GAP_POLLS * trace.requested_poll_ms * 1e6
    space = before[1:] - after[:-1]
    at = np.flatnonzero(space > limit)
    origin = int(trace.poll_ns[0]) if trace.poll_ns.size else int(before[0])
    counter = trace.signals[signal].kind == "counter"
    gaps = [
        Gap(int(after[k]) - origin, int(before[k + 1]) - origin, not counter or bool(value[k + 1] < value[k]))
        for k in at.tolist()
    ]
    return sorted(gaps, key=lambda g: g.end_ns - g.start_ns, reverse=True)


def gap_note(trace: Trace, signal: str) -> str | None:
    """What the log's gaps in ``signal`` are (a predicate: "has no ... reading for 35.2 s ..."; None:
    none), naming the longest."""
    gaps = reading_gaps(trace, signal)
    if not gaps:
        return None
    g = gaps[0]
    low, high = trace.power_range_w or DEFAULT_POWER_RANGE_W
    how = (
        f"bounded by the power range ({low:g} to {high:g} W)"
        if g.reset
        else "the counter's difference across it holds its energy"
    )
    more = f" ({len(gaps) - 1} more gaps over {GAP_POLLS} poll intervals)" if len(gaps) > 1 else ""
    return (
        f"has no {signal} reading for {g.seconds:.1f} s ({g.start_ns / 1e9:.1f} s to {g.end_ns / 1e9:.1f} s into the "
        f"log, over {GAP_POLLS} poll intervals of {trace.requested_poll_ms:g} ms): {how}{more}"
    )


def end_gap_s(trace: Trace, signal: str, finished_at: str | None) -> float | None:
    """How long (s) before the run's end ``finished_at`` (ISO 8601 with a zone) the last ok reading
    of ``signal`` ends, when that is over :data:`GAP_POLLS` poll intervals; None otherwise, and
    when the run's end or the log's wall-clock times are unknown."""
    if finished_at is None or trace.sensor in NO_WALL_CLOCK:
        return None
    try:
        end = datetime.fromisoformat(finished_at.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if end.tzinfo is None:
        return None
    rows = trace.rows(signal)
    if rows["t_after_ns"].size == 0:
        return None
    tail_s = end.timestamp() - int(rows["t_after_ns"].max()) / 1e9
    return tail_s if tail_s * 1000 > GAP_POLLS * trace.requested_poll_ms else None


def end_note(trace: Trace, signal: str, finished_at: str | None) -> str | None:
    """A predicate ("ends 42.0 s before ...") when the log of ``signal`` ends well before the run
    does (:func:`end_gap_s`); None otherwise."""
    tail = end_gap_s(trace, signal, finished_at)
    if tail is None:
        return None
    zone = " (the log's zone-less times read as UTC)" if trace.sensor in ZONELESS else ""
    return (
        f"ends {tail:.1f} s before the run's finished_at {finished_at}{zone}: no reading covers that "
        "stretch, and the energy taken from the log (with its bound) does not include it"
    )


__all__ = ["GAP_POLLS", "Gap", "end_gap_s", "end_note", "gap_note", "reading_gaps"]
