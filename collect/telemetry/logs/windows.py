"""Energy measured over windows (Zeus, CodeCarbon) as a cumulative counter read at the windows' ends.

Zeus and CodeCarbon read the GPU's cumulative energy counter (NVML's
``nvmlDeviceGetTotalEnergyConsumption``) when a window starts and when it ends, and log only the
difference. The trace gives them back as what they are: readings of an ``energy_counter`` (mJ) at
each window boundary, each read taken as ``[t, t + resolution]`` (the log's time resolution).
Contiguous windows (the next starts within ``max_gap_ms`` of the last one's end) chain into one
cumulative series. Across a longer gap the energy is unknown, so the series restarts at 0 there:
the analysis reads the decrease as a counter *reset* and bounds any interval overlapping the gap
by the power range alone -- never 0 J for the gap.

Between two reads the counter's own update times are unknown, so an interval's energy is bounded
as any counter's (``collect.telemetry.analysis.resolution.energy_from_counter``): each end is
uncertain by up to one window's length at the power range. Many short windows bound a run
tightly; one window for the whole run bounds it only by the power range, as it must.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collect.telemetry.logs.common import Column, LogOptions, build_trace, signal
from collect.traces.telemetry import Phase, Trace


@dataclass(frozen=True)
class Window:
    """One measured window: start and end (ns since the epoch), its energy (J), its name, its line."""

    start_ns: int
    end_ns: int
    energy_j: float
    name: str
    line: int


def windows_trace(windows: list[Window], tool: str, options: LogOptions, resolution_ns: int,
                  phases: bool = True) -> Trace:
    """The counter trace of time-ordered, non-overlapping ``windows`` (module doc); with ``phases``,
    each window is also a phase named after it."""
    times: list[int] = []
    values: list[float] = []
    max_gap = int(options.max_gap_ms * 1e6)
    total = 0.0
    last_end: int | None = None
    for w in windows:
        if last_end is None or w.start_ns - last_end > max_gap:
            total = 0.0  # a new series (a gap of unknown energy: read as a reset)
            times.append(w.start_ns)
            values.append(0.0)
        total += w.energy_j * 1000.0
        times.append(w.end_ns)
        values.append(total)
        last_end = w.end_ns
    t = np.array(times, dtype=np.int64)
    column = Column(signal("energy_counter", "mJ", "counter"), np.array(values, dtype=np.float64))
    marks = [Phase(w.name, w.start_ns, w.end_ns, 0) for w in windows] if phases else []
    return build_trace(t, t + resolution_ns, {"energy_counter": column}, tool, options, marks)


__all__ = ["Window", "windows_trace"]
