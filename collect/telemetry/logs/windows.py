"""Energy measured over windows (Zeus, CodeCarbon) as a cumulative counter read at the windows' ends.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, replace

import numpy as np

from collect.telemetry.logs.common import Column, LogError, LogOptions, build_trace, signal
from collect.telemetry.logs.reading import Cells
from collect.traces.telemetry import Phase, Trace


@dataclass(frozen=True)
class Window:
    """One measured window: start and end (ns since the epoch), its energy (J), its name, its line."""

    start_ns: int
    end_ns: int
    energy_j: float
    name: str
    line: int


class Windows:
    """Measured windows kept as compact columns (a few numbers each, names as codes), in log order."""

    def __init__(self) -> None:
        self.start_ns, self.end_ns, self.line = array("q"), array("q"), array("q")
        self.energy_j = array("d")
        self.names = Cells()

    def __len__(self) -> int:
        return len(self.line)

    def add(self, window: Window) -> None:
        """Append one window."""
        self.start_ns.append(window.start_ns)
        self.end_ns.append(window.end_ns)
        self.energy_j.append(window.energy_j)
        self.line.append(window.line)
        self.names.add(window.name)

    def window(self, k: int, order: np.ndarray) -> Window:
        """The ``k``-th window in ``order``."""
        i = int(order[k])
        return Window(
            self.start_ns[i], self.end_ns[i], self.energy_j[i], self.names.distinct[self.names.codes[i]], self.line[i]
        )

    def by_start(self, source: str, what: str, hint: str) -> np.ndarray:
        """The windows' order by start time (ties in log order); ``LogError`` naming both lines where
        one starts before the one before it ends (``what`` names them, ``hint`` says what to do)."""
        start = np.frombuffer(self.start_ns, dtype=np.int64)
        order = np.argsort(start, kind="stable")
        end = np.frombuffer(self.end_ns, dtype=np.int64)[order]
        overlap = np.flatnonzero(start[order][1:] < end[:-1])
        if overlap.size:
            before, after = self.window(int(overlap[0]), order), self.window(int(overlap[0]) + 1, order)
            raise LogError(
                f"{source} line {after.line}: {what} {after.name!r} starts before {what} {before.name!r} "
                f"(line {before.line}) ends; {hint}"
            )
        return order


def windows_trace(
    windows: Windows,
    order: np.ndarray,
    tool: str,
    options: LogOptions,
    resolution_ns: int,
    source: str,
    phases: bool = True,
    *,
    lossy_joins: bool = False,
) -> Trace:
    """The counter trace of the non-overlapping ``windows`` taken in ``order`` (by start; module
    doc); with ``phases``, each window is also a phase named after it; ``lossy_joins``: a window's
    end and the next one's start are separate reads (Zeus; module doc). Every window's energy is
    checked against the power range as the trace's counter (``build_trace``)."""
    if not len(windows):
        raise LogError(f"{source}: no measurement windows")
    start = np.frombuffer(windows.start_ns, dtype=np.int64)[order]
    end = np.frombuffer(windows.end_ns, dtype=np.int64)[order]
    lines = np.frombuffer(windows.line, dtype=np.int64)[order]
    energy_mj = np.frombuffer(windows.energy_j, dtype=np.float64)[order] * 1000.0
    new = np.ones(start.size, dtype=bool)  # a new series: a gap of unknown energy, read as a reset
    new[1:] = start[1:] - end[:-1] > int(options.max_gap_ms * 1e6)
    firsts = np.flatnonzero(new)
    total = np.empty(start.size, dtype=np.float64)
    for a, b in zip(firsts.tolist(), [*firsts[1:].tolist(), start.size], strict=True):
        total[a:b] = np.cumsum(energy_mj[a:b])  # summed in order from 0, one series at a time
    end_row = np.cumsum(1 + new.astype(np.int64)) - 1
    t = np.empty(int(end_row[-1]) + 1, dtype=np.int64)
    values = np.empty(t.size, dtype=np.float64)
    line_of = np.empty(t.size, dtype=np.int64)
    t[end_row], values[end_row], line_of[end_row] = end, total, lines
    start_row = end_row[new] - 1
    t[start_row], values[start_row], line_of[start_row] = start[new], 0.0, lines[new]
    t_after = t + resolution_ns
    joined = np.flatnonzero(~new[1:])  # window k ends where window k + 1 starts: one read stands for both
    t_after[end_row[joined]] = np.maximum(t_after[end_row[joined]], start[joined + 1] + resolution_ns)
    column = Column(replace(signal("energy_counter", "mJ", "counter"), lossy_joins=lossy_joins), values)
    names, codes = windows.names.distinct, windows.names.code_array()[order]
    marks = (
        [Phase(names[c], s, e, 0) for c, s, e in zip(codes.tolist(), start.tolist(), end.tolist(), strict=True)]
        if phases
        else []
    )
    return build_trace(t, t_after, {"energy_counter": column}, tool, options, marks, source=source, line_of=line_of)


__all__ = ["Window", "Windows", "windows_trace"]
