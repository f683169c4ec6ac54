"""``nvidia-smi --query-gpu=timestamp,index,power.draw,... --format=csv -lms N`` logs, as a trace.

What this follows (nvidia-smi's CSV query output, as the tool writes it): a header line naming
the queried fields with their units in brackets (``timestamp, index, power.draw [W],
utilization.gpu [%], memory.used [MiB]``), then one line per GPU per poll, cells separated by
``", "``; with ``--format=csv`` the cells carry their units (``123.45 W``, ``45 %``, ``1024 MiB``),
with ``csv,nounits`` they do not. The timestamp is the local time of the query, to the
millisecond: ``2026/12/03 10:15:01.123``. A field the GPU cannot give reads ``[N/A]`` or ``[Not
Supported]``. ``noheader`` logs are refused: without the header no column can be named.

Fields read (others are ignored):

* ``power.draw``: NVML's ``nvmlDeviceGetPowerUsage``, which on Ampere (except GA100) and newer is
  the power averaged over the last second (NVML's documentation of that call): signal
  ``power_average`` with ``window_ms`` = ``LogOptions.power_window_ms`` (1000 by default; 0 for an
  older GPU, whose reading is instantaneous). With ``power.draw.average`` in the same log, that one
  is ``power_average`` and ``power.draw`` becomes ``power_usage``;
* ``power.draw.instant``: ``power_instant``, an instantaneous sample (``window_ms`` 0);
* a field naming ``energy`` with a unit (``[mJ]``, ``[J]``): the cumulative ``energy_counter`` (mJ);
* ``utilization.gpu``, ``temperature.gpu``, ``clocks.sm``/``clocks.current.sm``,
  ``clocks.mem``/``clocks.current.memory``, ``pstate`` (``P0`` -> 0), ``memory.used`` (MiB).

Times (assumptions the log cannot check): the timestamp is read on the logging machine's clock
just before the query and truncated to its resolution, so the value was produced in
``[timestamp, timestamp + 1 ms]`` (1 s for a timestamp without milliseconds). The local zone is
not written, so times are taken as UTC: durations are right, wall-clock times are the log's.
"""

from __future__ import annotations

from array import array
from itertools import islice

import numpy as np

from collect.telemetry.logs.checks import check_epoch_ms
from collect.telemetry.logs.common import (
    Column,
    LogError,
    LogOptions,
    build_trace,
    check_order,
    choose_device,
    signal,
    split_unit,
)
from collect.telemetry.logs.numbers import Numbers
from collect.telemetry.logs.reading import Cells, LogText, text_lines
from collect.traces.telemetry import Trace

TOOL = "nvidia-smi"
GAUGES = {"utilization.gpu": "utilization_gpu", "temperature.gpu": "temperature_gpu", "clocks.sm": "clock_sm",
          "clocks.current.sm": "clock_sm", "clocks.mem": "clock_mem",
          "clocks.current.memory": "clock_mem", "memory.used": "memory_used"}
_READ = {"power.draw", "power.draw.average", "power.draw.instant", "pstate", *GAUGES}
_CHUNK = 16_384  # rows split and coded this many at a time


class _Times:
    """The timestamp column, parsed a chunk at a time into int64 ms since the epoch (zone-less: UTC)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.ms = array("q")
        self.pending: list[str] = []
        self.lines: list[int] = []
        self.first = ""

    def add(self, cells: list[str], lines: list[int]) -> None:
        """Append a block of rows' timestamps."""
        if not self.first and cells:
            self.first = cells[0].strip()
        self.pending += cells
        self.lines += lines
        if len(self.pending) >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        """Parse the pending timestamps (``LogError`` naming the line of one that is not a time, or
        not one from 1970 to 2200)."""
        if not self.pending:
            return
        iso = list(map(str.strip, "\n".join(self.pending).replace("/", "-").split("\n")))
        try:
            stamps = np.array(iso, dtype="datetime64[ms]")
        except ValueError:
            for c, cell, line in zip(iso, self.pending, self.lines, strict=True):
                try:
                    np.datetime64(c, "ms")
                except ValueError:
                    raise LogError(f"{self.source} line {line}: timestamp {cell.strip()!r} is not a time like "
                                   "2026/12/03 10:15:01.123") from None
            raise
        ms = stamps.astype(np.int64)
        check_epoch_ms(ms, self.source, np.array(self.lines, dtype=np.int64))
        self.ms.frombytes(ms.tobytes())
        self.pending, self.lines = [], []


def _pstate(cell: str) -> str:
    """``P0`` -> ``0``."""
    return cell.strip().lstrip("Pp") if cell.strip()[:1] in "Pp" else cell


def _read(text: LogText, source: str) -> tuple[int, str, Cells | None, dict[str, Numbers], _Times, np.ndarray]:
    """The header (its line and text), the GPU index column, the wanted columns parsed, the
    timestamps and each row's line, read a block of lines at a time; a line without the header's
    cells is named."""
    lines = text_lines(text)
    header_line, header = 0, ""
    for number, line in enumerate(lines, start=1):
        if line.strip():
            header_line, header = number, line.rstrip("\r\n")
            break
    if not header:
        raise LogError(f"{source}: empty log")
    fields = [split_unit(h) for h in header.split(",")]
    names = [name for name, _ in fields]
    if "timestamp" not in names:
        raise LogError(f"{source} line {header_line}: no 'timestamp' column in the header ({header.strip()!r}); log "
                       "with --query-gpu=timestamp,index,power.draw,... --format=csv (keep the header)")
    wanted = [(i, name, unit) for i, (name, unit) in enumerate(fields) if name in _READ or "energy" in name]
    twice = sorted({name for name in names if names.count(name) > 1 and (name in _READ or "energy" in name
                                                                          or name in ("timestamp", "index"))})
    if twice:
        raise LogError(f"{source} line {header_line}: the header names {', '.join(twice)} more than once")
    for _, name, unit in wanted:
        if "energy" in name and unit is None and name not in _READ:
            raise LogError(f"{source} line {header_line}: the energy column {name!r} names no unit ([mJ] or [J])")
    index = Cells() if "index" in names else None
    columns = {name: Numbers(unit, source, _pstate if name == "pstate" else None) for _, name, unit in wanted}
    times, stamp, at = _Times(source), names.index("timestamp"), names.index("index") if index else -1
    row_lines = array("q")
    width = len(names)

    def flush(block: list[str], block_lines: list[int]) -> None:
        """Split a block of rows into its columns at once (a row without the header's cells is named)."""
        counts = list(map(str.count, block, [","] * len(block)))
        if any(c != width - 1 for c in counts):
            k = next(k for k, c in enumerate(counts) if c != width - 1)
            raise LogError(f"{source} line {block_lines[k]}: {counts[k] + 1} cells where the header names {width}")
        flat = ",".join(block).split(",")
        row_lines.extend(block_lines)
        times.add(flat[stamp::width], block_lines)
        if index is not None:
            index.extend(flat[at::width])
        for i, name, _ in wanted:
            columns[name].extend(flat[i::width], block_lines)

    number = header_line
    while chunk := list(islice(lines, _CHUNK)):
        block = [raw.rstrip("\r\n") for raw in chunk]
        block_lines = list(range(number + 1, number + 1 + len(chunk)))
        number += len(chunk)
        if header in block or not all(map(str.strip, block)):  # a restarted logger's header; blank lines
            kept = [(n, line) for n, line in zip(block_lines, block, strict=True) if line != header and line.strip()]
            block, block_lines = [line for _, line in kept], [n for n, _ in kept]
        flush(block, block_lines)
    if not row_lines:
        raise LogError(f"{source}: a header and no readings")
    times.flush()
    return header_line, header, index, columns, times, np.frombuffer(row_lines, dtype=np.int64)


def convert(text: LogText, source: str, options: LogOptions) -> Trace:
    """The nvidia-smi CSV log ``text`` (from ``source``, named in messages; its text or its lines)
    as a trace (module doc); memory: about 9 bytes per row and column read, plus the trace."""
    header_line, header, index, columns, times, line_of = _read(text, source)
    keep: np.ndarray | None = None
    if index is not None:
        distinct = index.distinct
        device = choose_device(list(dict.fromkeys(c.strip() for c in distinct)), options, source)
        if len({c.strip() for c in distinct}) > 1:
            chosen = np.array([c.strip() == device for c in distinct])
            keep = np.flatnonzero(chosen[index.code_array()])
            line_of = line_of[keep]
    t_ns = np.frombuffer(times.ms, dtype=np.int64)
    t_ns = (t_ns[keep] if keep is not None else t_ns) * 1_000_000
    resolution = 1_000_000 if "." in times.first else 1_000_000_000
    check_order(t_ns, source, line_of)
    out: dict[str, Column] = {}
    averaged = "power.draw.average" in columns
    for name, column in columns.items():
        if name == "power.draw" or name == "power.draw.average":
            target = "power_average" if name == "power.draw.average" or not averaged else "power_usage"
            info = signal(target, "W", "gauge", options.power_window_ms)
        elif name == "power.draw.instant":
            info = signal("power_instant", "W", "gauge", 0.0)
        elif name in GAUGES or name == "pstate":
            info = signal(GAUGES.get(name, "pstate"), (column.unit or "-") if name != "pstate" else "-")
        else:
            info = signal("energy_counter", "mJ", "counter")
        values, status, unit = column.finish(keep)
        if info.name == "energy_counter" and unit != "mJ":
            raise LogError(f"{source} line {header_line}: the energy column {name!r} is in {unit}, not an energy unit")
        if info.unit == "W" and unit not in (None, "W"):
            raise LogError(f"{source} line {header_line}: the power column {name!r} is in {unit}, not a power unit")
        out[info.name] = Column(info, values, status)
    if not any(s in out for s in ("energy_counter", "power_average", "power_usage", "power_instant")):
        raise LogError(f"{source} line {header_line}: no power or energy column (query power.draw, power.draw.average "
                       "or power.draw.instant)")
    return build_trace(t_ns, t_ns + resolution, out, TOOL, options, source=source, line_of=line_of)


__all__ = ["TOOL", "convert"]
