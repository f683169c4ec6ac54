"""CodeCarbon ``emissions.csv`` files, as a trace of the GPU energy counter.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime

from collect.telemetry.logs.checks import duration_ns, epoch_ns
from collect.telemetry.logs.common import LogError, LogOptions, cell_number, split_unit
from collect.telemetry.logs.reading import LogText, text_lines
from collect.telemetry.logs.windows import Window, Windows, windows_trace
from collect.traces.telemetry import Trace

TOOL = "codecarbon"
_S = 1_000_000_000
_MS = 1_000_000
KWH_J = 3.6e6


def _time(text: str, source: str, line: int) -> int:
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise LogError(
            f"{source} line {line}: timestamp {text!r} is not an ISO-8601 time (2024-07-19T15:57:43)"
        ) from None
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value
    try:
        seconds = value.timestamp()
    except (OverflowError, ValueError):  # a zone offset that moves year 1 or 9999 out of range
        seconds = float("nan")
    return epoch_ns(seconds, source, line, f"timestamp {text.strip()!r} =")


def convert(text: LogText, source: str, options: LogOptions) -> Trace:
    """The CodeCarbon file ``text`` (from ``source``, named in messages; its text or its lines) as a
    trace (module doc). Timestamps must lie from 1970 to 2200, durations be finite and ``>= 0``
    (``LogError`` naming the line)."""
    reader = csv.reader(text_lines(text))
    try:
        header = [split_unit(h)[0] for h in next(reader)]
    except StopIteration:
        raise LogError(f"{source}: empty file") from None
    missing = [c for c in ("timestamp", "run_id", "duration", "gpu_energy") if c not in header]
    if missing:
        raise LogError(f"{source} line 1: no {', '.join(missing)} column (is this CodeCarbon's emissions.csv?)")
    trackers: dict[str, list[tuple[int, float, float, int]]] = {}
    for cells in reader:
        if not cells:
            continue
        line = reader.line_num
        if len(cells) != len(header):
            raise LogError(f"{source} line {line}: {len(cells)} cells where the header names {len(header)}")
        row = dict(zip(header, cells, strict=True))
        end = _time(row["timestamp"], source, line)
        duration = cell_number(row, "duration", source, line)
        duration_ns(duration, source, line, "duration")
        trackers.setdefault(row["run_id"], []).append(
            (end, duration, cell_number(row, "gpu_energy", source, line) * KWH_J, line)
        )
    if not trackers:
        raise LogError(f"{source}: a header and no measurements")
    windows = Windows()
    for run, rows in trackers.items():
        rows.sort()
        start = rows[0][0] - round(rows[0][1] * _S)
        if start < 0:
            raise LogError(
                f"{source} line {rows[0][3]}: duration {rows[0][1]!r} s puts the tracker's start before 1970"
            )
        at, energy = start, 0.0
        for _, duration, cumulative, line in rows:
            end = start + round(duration * _S)  # the tracker's clock: its durations, finer than the timestamps
            if cumulative < energy:
                raise LogError(
                    f"{source} line {line}: gpu_energy of run {run} went down ({cumulative / KWH_J:g} kWh "
                    f"after {energy / KWH_J:g}); a tracker's energies are cumulative"
                )
            windows.add(Window(at, end, cumulative - energy, run, line))
            at, energy = end, cumulative
    order = windows.by_start(source, "tracker", "convert one tracker's lines")
    return windows_trace(windows, order, TOOL, options, _MS, source)


__all__ = ["TOOL", "convert"]
