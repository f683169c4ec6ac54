"""``nvidia-smi --query-gpu=timestamp,index,power.draw,... --format=csv -lms N`` logs, as a trace.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from itertools import chain, islice

import numpy as np

from collect.telemetry.logs.checks import check_epoch_ms, check_power
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
from collect.telemetry.logs.gpus import (
    first_rows,
    last_rows,
    polls_by_order,
    refuse_gpu_with_all,
    sum_over_gpus,
    summed_options,
)
from collect.telemetry.logs.numbers import Numbers
from collect.telemetry.logs.reading import Cells, LogText, text_lines
from collect.telemetry.sensors.base import SignalInfo
from collect.traces.telemetry import Trace

TOOL = "nvidia-smi"
GAUGES = {
    "utilization.gpu": "utilization_gpu",
    "temperature.gpu": "temperature_gpu",
    "clocks.sm": "clock_sm",
    "clocks.current.sm": "clock_sm",
    "clocks.mem": "clock_mem",
    "clocks.current.memory": "clock_mem",
    "memory.used": "memory_used",
}
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
                    raise LogError(
                        f"{self.source} line {line}: timestamp {cell.strip()!r} is not a time like "
                        "2026/12/03 10:15:01.123"
                    ) from None
            raise
        ms = stamps.astype(np.int64)
        check_epoch_ms(ms, self.source, np.array(self.lines, dtype=np.int64))
        self.ms.frombytes(ms.tobytes())
        self.pending, self.lines = [], []


def _pstate(cell: str) -> str:
    """``P0`` -> ``0``."""
    return cell.strip().lstrip("Pp") if cell.strip()[:1] in "Pp" else cell


#: a ``nounits`` cell's unit by its field's prefix, as nvidia-smi's documentation of ``--query-gpu`` gives it
_DOCUMENTED_UNITS = {"power.": "W", "memory.": "MiB", "utilization.": "%", "temperature.": "C", "clocks.": "MHz"}


def _query_field(text: str) -> tuple[str, str | None]:
    """A ``--query-fields`` entry as ``(name, unit)``: its bracketed unit, else the documented one."""
    name, unit = split_unit(text)
    if unit is None:
        unit = next((u for prefix, u in _DOCUMENTED_UNITS.items() if name.startswith(prefix)), None)
    return name, unit


def _header(
    lines: Iterator[str], source: str, query_fields: tuple[str, ...] | None
) -> tuple[str, str, list[tuple[str, str | None]], Iterator[str], int]:
    """``(where header messages point, the header line's text, its fields, the data lines, the line
    before the first data line)``: the log's header, or for a headerless log the ``query_fields``."""
    for number, line in enumerate(lines, start=1):
        if line.strip():
            first_line, first = number, line.rstrip("\r\n")
            break
    else:
        raise LogError(f"{source}: empty log")
    fields = [split_unit(h) for h in first.split(",")]
    names = [name for name, _ in fields]
    if "timestamp" in names:
        wanted = None if query_fields is None else [split_unit(f)[0] for f in query_fields]
        if wanted is not None and wanted != names:
            raise LogError(
                f"{source} line {first_line}: the log has a header line naming {', '.join(names)}, not the "
                f"--query-fields {', '.join(wanted)}; a log with a header needs no --query-fields"
            )
        return f"{source} line {first_line}", first, fields, lines, first_line
    if query_fields is None:
        if first[:1].isdigit():
            raise LogError(
                f"{source} line {first_line}: the log has no header line (--format=csv,noheader); give its "
                "--query-gpu fields in order with --query-fields timestamp,index,power.draw,..."
            )
        raise LogError(
            f"{source} line {first_line}: no 'timestamp' column in the header ({first.strip()!r}); log "
            "with --query-gpu=timestamp,index,power.draw,... --format=csv (keep the header)"
        )
    fields = [_query_field(f) for f in query_fields]
    if "timestamp" not in [name for name, _ in fields]:
        raise LogError(
            f"--query-fields {','.join(query_fields)}: no timestamp field; the log's times are needed "
            "(query timestamp,index,power.draw,...)"
        )
    header = ", ".join(f"{name} [{unit}]" if unit else name for name, unit in fields)
    return f"{source} (--query-fields)", header, fields, chain([line], lines), first_line - 1


def _read(
    text: LogText, source: str, query_fields: tuple[str, ...] | None = None
) -> tuple[str, Cells | None, dict[str, Numbers], _Times, np.ndarray]:
    """Where header messages point, the GPU index column, the wanted columns parsed, the timestamps
    and each row's line, read a block of lines at a time; a line without the header's cells is
    named. A headerless log is read with ``query_fields`` (module doc)."""
    where, header, fields, lines, header_line = _header(text_lines(text), source, query_fields)
    names = [name for name, _ in fields]
    wanted = [(i, name, unit) for i, (name, unit) in enumerate(fields) if name in _READ or "energy" in name]
    twice = sorted(
        {
            name
            for name in names
            if names.count(name) > 1 and (name in _READ or "energy" in name or name in ("timestamp", "index"))
        }
    )
    if twice:
        raise LogError(f"{where}: the header names {', '.join(twice)} more than once")
    for _, name, unit in wanted:
        if "energy" in name and unit is None and name not in _READ:
            hint = f"give it in --query-fields ('{name} [mJ]')" if where.endswith("(--query-fields)") else "[mJ] or [J]"
            raise LogError(f"{where}: the energy column {name!r} names no unit ({hint})")
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
    return where, index, columns, times, np.frombuffer(row_lines, dtype=np.int64)


def _info(name: str, column: Numbers, averaged: bool, options: LogOptions) -> SignalInfo:
    """The signal a read field becomes (module doc)."""
    if name == "power.draw" or name == "power.draw.average":
        target = "power_average" if name == "power.draw.average" or not averaged else "power_usage"
        return signal(target, "W", "gauge", options.power_window_ms)
    if name == "power.draw.instant":
        return signal("power_instant", "W", "gauge", 0.0)
    if name in GAUGES or name == "pstate":
        return signal(GAUGES.get(name, "pstate"), (column.unit or "-") if name != "pstate" else "-")
    return signal("energy_counter", "mJ", "counter")


def _finish(
    name: str, column: Numbers, info: SignalInfo, keep: np.ndarray | None, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """A column's values in the signal's unit and their statuses; ``LogError`` for a wrong unit."""
    values, status, unit = column.finish(keep)
    if info.name == "energy_counter" and unit != "mJ":
        raise LogError(f"{where}: the energy column {name!r} is in {unit}, not an energy unit")
    if info.unit == "W" and unit not in (None, "W"):
        raise LogError(f"{where}: the power column {name!r} is in {unit}, not a power unit")
    return values, status


def _no_power(out: dict[str, Column], where: str) -> None:
    if not any(s in out for s in ("energy_counter", "power_average", "power_usage", "power_instant")):
        raise LogError(
            f"{where}: no power or energy column (query power.draw, power.draw.average or power.draw.instant)"
        )


def convert(text: LogText, source: str, options: LogOptions) -> Trace:
    """The nvidia-smi CSV log ``text`` (from ``source``, named in messages; its text or its lines)
    as a trace (module doc); memory: about 9 bytes per row and column read, plus the trace."""
    refuse_gpu_with_all(options, source)
    where, index, columns, times, line_of = _read(text, source, options.query_fields)
    resolution = 1_000_000 if "." in times.first else 1_000_000_000
    t_ns = np.frombuffer(times.ms, dtype=np.int64) * 1_000_000
    averaged = "power.draw.average" in columns
    keep: np.ndarray | None = None
    if index is not None:
        distinct = index.distinct
        gpus = list(dict.fromkeys(c.strip() for c in distinct))
        if options.all_gpus and len(gpus) > 1:
            position = np.array([gpus.index(c.strip()) for c in distinct])[index.code_array()]
            return _summed(position, len(gpus), columns, t_ns, resolution, line_of, where, source, options)
        device = choose_device(gpus, options, source)
        if len(gpus) > 1:
            chosen = np.array([c.strip() == device for c in distinct])
            keep = np.flatnonzero(chosen[index.code_array()])
            line_of, t_ns = line_of[keep], t_ns[keep]
    check_order(t_ns, source, line_of)
    out: dict[str, Column] = {}
    for name, column in columns.items():
        info = _info(name, column, averaged, options)
        values, status = _finish(name, column, info, keep, where)
        out[info.name] = Column(info, values, status)
    _no_power(out, where)
    return build_trace(t_ns, t_ns + resolution, out, TOOL, options, source=source, line_of=line_of)


def _summed(
    position: np.ndarray,
    gpus: int,
    columns: dict[str, Numbers],
    t_ns: np.ndarray,
    resolution: int,
    line_of: np.ndarray,
    where: str,
    source: str,
    options: LogOptions,
) -> Trace:
    """Every GPU's power and energy summed per poll (module doc); each GPU's readings checked
    against the per-GPU power range first."""
    check_order(t_ns, source, line_of)
    poll = polls_by_order(position)
    polls = int(poll[-1]) + 1
    first, last = first_rows(poll, polls), last_rows(poll, polls)
    averaged = "power.draw.average" in columns
    out: dict[str, Column] = {}
    for name, column in columns.items():
        info = _info(name, column, averaged, options)
        if info.unit not in ("W", "mJ"):
            continue
        values, status = _finish(name, column, info, None, where)
        if info.unit == "W":
            check_power(values, name, source, line_of, options.power_range)
        total, total_status = sum_over_gpus(values, status, poll, polls, gpus)
        out[info.name] = Column(info, total, total_status)
    _no_power(out, where)
    return build_trace(
        t_ns[first],
        t_ns[last] + resolution,
        out,
        TOOL,
        summed_options(options, gpus),
        source=source,
        line_of=line_of[first],
    )


__all__ = ["TOOL", "convert"]
