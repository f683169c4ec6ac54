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

import io

import numpy as np

from collect.telemetry.logs.common import (
    Column,
    LogError,
    LogOptions,
    build_trace,
    check_order,
    choose_device,
    parse_cells,
    signal,
    split_unit,
)
from collect.traces.telemetry import Trace

TOOL = "nvidia-smi"
GAUGES = {"utilization.gpu": "utilization_gpu", "temperature.gpu": "temperature_gpu", "clocks.sm": "clock_sm",
          "clocks.current.sm": "clock_sm", "clocks.mem": "clock_mem", "clocks.current.memory": "clock_mem",
          "memory.used": "memory_used"}


def _timestamps(cells: list[str], where: str, line_of: np.ndarray) -> tuple[np.ndarray, int]:
    """nvidia-smi timestamps as ns since the epoch (zone-less, read as UTC), and their resolution (ns)."""
    iso = [c.strip().replace("/", "-") for c in cells]
    try:
        stamps = np.array(iso, dtype="datetime64[ms]")
    except ValueError:
        for i, c in enumerate(iso):
            try:
                np.datetime64(c, "ms")
            except ValueError:
                raise LogError(f"{where} line {int(line_of[i])}: timestamp {cells[i].strip()!r} is not a time like "
                               "2026/12/03 10:15:01.123") from None
        raise
    resolution = 1_000_000 if "." in iso[0] else 1_000_000_000
    return stamps.astype(np.int64) * 1_000_000, resolution


def _columns(text: str, header_line: int, header: str, names: list[str],
             source: str) -> tuple[dict[str, list[str]], np.ndarray]:
    """The log's cells by column, and each row's line number. A plain log (no blank line, no
    repeated header) is split in one pass; anything else line by line, naming a line that does
    not have the header's cells."""
    width = len(names)
    parts = text.split("\n", header_line)
    body = parts[-1] if len(parts) > header_line else ""
    body = body[:-1] if body.endswith("\n") else body
    if body and "\r" not in body and "\n\n" not in body and ("\n" + header) not in body:
        flat = body.replace("\n", ",").split(",")
        count = body.count("\n") + 1
        if len(flat) == width * count:
            return ({name: flat[i::width] for i, name in enumerate(names)},
                    np.arange(header_line + 1, header_line + 1 + count, dtype=np.int64))
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if n > header_line and line.strip()]
    rows = [(n, line.split(",")) for n, line in numbered if line != header]  # a restarted logger's header
    for n, cells in rows:
        if len(cells) != width:
            raise LogError(f"{source} line {n}: {len(cells)} cells where the header names {width}")
    if not rows:
        raise LogError(f"{source}: a header and no readings")
    columns = list(zip(*(cells for _, cells in rows), strict=True))
    return {name: list(columns[i]) for i, name in enumerate(names)}, np.array([n for n, _ in rows], dtype=np.int64)


def convert(text: str, source: str, options: LogOptions) -> Trace:
    """The nvidia-smi CSV log ``text`` (from ``source``, named in messages) as a trace (module doc)."""
    header_line, header = 0, ""
    for number, line in enumerate(io.StringIO(text), start=1):
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
    col, line_of = _columns(text, header_line, header, names, source)
    if "index" in col:
        devices = dict.fromkeys(col["index"])  # in order of appearance
        device = choose_device([c.strip() for c in devices], options, source)
        if len(devices) > 1:
            keep = np.flatnonzero(np.array([c.strip() == device for c in col["index"]]))
            col = {k: [v[i] for i in keep] for k, v in col.items()}
            line_of = line_of[keep]
    t_ns, resolution = _timestamps(col["timestamp"], source, line_of)
    check_order(t_ns, source, line_of)
    out: dict[str, Column] = {}
    units = dict(fields)
    first = int(line_of[0])
    averaged = "power.draw.average" in col
    for name, cells in col.items():
        where = source
        if name == "power.draw" or name == "power.draw.average":
            target = "power_average" if name == "power.draw.average" or not averaged else "power_usage"
            info = signal(target, "W", "gauge", options.power_window_ms)
        elif name == "power.draw.instant":
            info = signal("power_instant", "W", "gauge", 0.0)
        elif "energy" in name:
            if units[name] is None:
                raise LogError(f"{source} line {header_line}: the energy column {name!r} names no unit ([mJ] or [J])")
            info = signal("energy_counter", "mJ", "counter")
        elif name == "pstate":
            cells = [c.strip().lstrip("Pp") if c.strip()[:1] in "Pp" else c for c in cells]
            info = signal("pstate", "-")
        elif name in GAUGES:
            info = signal(GAUGES[name], units[name] or "-")
        else:
            continue
        values, status, unit = parse_cells(cells, units[name], where, first, line_of)
        if info.name == "energy_counter" and unit != "mJ":
            raise LogError(f"{source} line {header_line}: the energy column {name!r} is in {unit}, not an energy unit")
        if info.unit == "W" and unit not in (None, "W"):
            raise LogError(f"{source} line {header_line}: the power column {name!r} is in {unit}, not a power unit")
        out[info.name] = Column(info, values, status)
    if not any(s in out for s in ("energy_counter", "power_average", "power_usage", "power_instant")):
        raise LogError(f"{source} line {header_line}: no power or energy column (query power.draw, power.draw.average "
                       "or power.draw.instant)")
    return build_trace(t_ns, t_ns + resolution, out, TOOL, options)


__all__ = ["TOOL", "convert"]
