"""``dcgmi dmon -e 155,156,... -d N`` output, as a trace.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from array import array

import numpy as np

from collect.telemetry.logs.checks import check_power
from collect.telemetry.logs.common import Column, LogError, LogOptions, build_trace, choose_device, signal
from collect.telemetry.logs.gpus import first_rows, polls_by_rank, refuse_gpu_with_all, sum_over_gpus, summed_options
from collect.telemetry.logs.numbers import Numbers
from collect.telemetry.logs.reading import Cells, LogText, text_lines
from collect.traces.readings import Kind
from collect.traces.telemetry import Trace

TOOL = "dcgm"
DEFAULT_DELAY_MS = 1000.0
_CHUNK = 16_384  # readings parsed this many at a time


def _tags(options: LogOptions) -> dict[str, tuple[str, str, Kind, float | None]]:
    """dmon tag -> (signal, unit, kind, window_ms)."""
    return {
        "POWER": ("power_average", "W", "gauge", options.power_window_ms),
        "POWINST": ("power_instant", "W", "gauge", 0.0),
        "TOTEC": ("energy_counter", "mJ", "counter", None),
        "GPUTL": ("utilization_gpu", "%", "gauge", None),
        "TMPTR": ("temperature_gpu", "C", "gauge", None),
        "SMCLK": ("clock_sm", "MHz", "gauge", None),
        "MMCLK": ("clock_mem", "MHz", "gauge", None),
    }


def _read(text: LogText, source: str, units: dict[str, str]) -> tuple[list[str], Cells, dict[int, Numbers], np.ndarray]:
    """The field tags, each reading's entity, the columns of the tags in ``units`` (tag -> unit)
    parsed, by position, and each reading's line, read a block of lines at a time."""
    header: list[str] | None = None
    devices = Cells()
    columns: dict[int, Numbers] = {}
    line_of = array("q")
    block: dict[int, list[str]] = {}
    block_lines: list[int] = []

    def flush() -> None:
        for j, column in columns.items():
            column.extend(block[j], block_lines)
            block[j] = []
        line_of.extend(block_lines)
        block_lines.clear()

    for number, line in enumerate(text_lines(text), start=1):
        words = line.split()
        if not words:
            continue
        if words[0] in ("#Entity", "#") and (words[0] == "#Entity" or words[1:2] == ["Entity"]):
            tags = words[1:] if words[0] == "#Entity" else words[2:]
            if header is not None and tags != header:
                raise LogError(
                    f"{source} line {number}: the fields changed mid-log ({' '.join(tags)} after {' '.join(header)})"
                )
            header = tags
            if not columns:
                columns = {j: Numbers(units[tag], source) for j, tag in enumerate(tags) if tag in units}
                block = {j: [] for j in columns}
            continue
        if words[0] == "ID" or words[0].startswith("#"):
            continue
        if header is None:
            raise LogError(f"{source} line {number}: a reading before the '#Entity' header line")
        if len(words) != len(header) + 2:
            raise LogError(
                f"{source} line {number}: {len(words)} words where 'ENTITY ID' and the {len(header)} "
                f"fields {' '.join(header)} make {len(header) + 2}"
            )
        devices.add(f"{words[0]} {words[1]}")
        for j in columns:
            block[j].append(words[j + 2])
        block_lines.append(number)
        if len(block_lines) >= _CHUNK:
            flush()
    flush()
    if header is None or not line_of:
        raise LogError(f"{source}: no '#Entity' header or no readings (is this dcgmi dmon output?)")
    return header, devices, columns, np.frombuffer(line_of, dtype=np.int64)


def convert(text: LogText, source: str, options: LogOptions) -> Trace:
    """The dcgmi dmon output ``text`` (from ``source``, named in messages; its text or its lines) as
    a trace (module doc)."""
    refuse_gpu_with_all(options, source)
    known = _tags(options)
    header, devices, columns, line_of = _read(text, source, {tag: spec[1] for tag, spec in known.items()})
    gpus = [d.split()[1] if d.startswith("GPU ") else d for d in devices.distinct]
    if options.all_gpus and len(gpus) > 1:
        return _summed(header, devices.code_array(), columns, line_of, known, source, options, len(gpus))
    device = choose_device(gpus, options, source)
    chosen = np.array([g == device for g in gpus])
    keep = np.flatnonzero(chosen[devices.code_array()])
    out: dict[str, Column] = {}
    for j, column in columns.items():
        name, unit, kind, window = known[header[j]]
        values, status, _ = column.finish(keep)
        out[name] = Column(signal(name, unit, kind, window), values, status)
    return _trace(out, line_of[keep], header, source, options)


def _trace(out: dict[str, Column], lines: np.ndarray, header: list[str], source: str, options: LogOptions) -> Trace:
    """The trace of one device's samples ``out`` (sample ``k`` read in ``[k d, (k + 1) d)``)."""
    if not any(s in out for s in ("energy_counter", "power_average", "power_instant")):
        raise LogError(f"{source}: no power or energy field among {' '.join(header)} (dmon -e 155,156)")
    delay_ns = int(round((options.poll_ms or DEFAULT_DELAY_MS) * 1e6))
    t_before = np.arange(lines.size, dtype=np.int64) * delay_ns
    return build_trace(
        t_before,
        t_before + delay_ns,
        out,
        TOOL,
        LogOptions(**{**options.__dict__, "poll_ms": options.poll_ms or DEFAULT_DELAY_MS}),
        source=source,
        line_of=lines,
    )


def _summed(
    header: list[str],
    device: np.ndarray,
    columns: dict[int, Numbers],
    line_of: np.ndarray,
    known: dict[str, tuple[str, str, Kind, float | None]],
    source: str,
    options: LogOptions,
    gpus: int,
) -> Trace:
    """The trace of every entity summed (module doc): sample ``k`` is each entity's ``k``-th line."""
    poll = polls_by_rank(device)
    polls = int(poll.max()) + 1
    out: dict[str, Column] = {}
    for j, column in columns.items():
        name, unit, kind, window = known[header[j]]
        if unit not in ("W", "mJ"):
            continue
        values, status, _ = column.finish()
        if unit == "W":
            check_power(values, name, source, line_of, options.power_range)
        total, total_status = sum_over_gpus(values, status, poll, polls, gpus)
        out[name] = Column(signal(name, unit, kind, window), total, total_status)
    return _trace(out, line_of[first_rows(poll, polls)], header, source, summed_options(options, gpus))


__all__ = ["TOOL", "convert"]
