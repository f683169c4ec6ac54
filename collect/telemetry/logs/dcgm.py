"""``dcgmi dmon -e 155,156,... -d N`` output, as a trace.

What this follows (dcgmi dmon's text output): a header line starting ``#Entity`` followed by the
fields' short tags (``POWER`` = field 155 ``DCGM_FI_DEV_POWER_USAGE``, W; ``TOTEC`` = field 156
``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``, mJ; ...), a second line starting ``ID`` (which may list
units), then one whitespace-separated line per entity per sample, the entity written as two words
(``GPU 0``); a field the entity cannot give reads ``N/A``. dcgmi repeats the two header lines
every so often; they are skipped wherever they occur. Lines starting ``#`` elsewhere are comments.

Tags read (others are ignored): ``POWER`` -> ``power_average`` (NVML's ``nvmlDeviceGetPowerUsage``,
a 1 s average on Ampere and newer: ``window_ms`` = ``LogOptions.power_window_ms``), ``POWINST``
-> ``power_instant`` (instantaneous, ``window_ms`` 0), ``TOTEC`` -> ``energy_counter`` (mJ),
``GPUTL`` -> ``utilization_gpu``, ``TMPTR`` -> ``temperature_gpu``, ``SMCLK`` -> ``clock_sm``,
``MMCLK`` -> ``clock_mem``.

Times (an assumption: dmon writes none): sample k of the selected entity was taken during
``[k d, (k + 1) d)`` from the start of the log, d being dmon's ``-d`` delay (``LogOptions.poll_ms``,
1000 ms -- dmon's default -- when not given). Durations are therefore as good as dmon's schedule;
a log of a GPU that was slow to answer is stretched in time, never compressed.
"""

from __future__ import annotations

import numpy as np

from collect.telemetry.logs.common import Column, LogError, LogOptions, build_trace, choose_device, parse_cells, signal
from collect.telemetry.sensors.base import Kind
from collect.traces.telemetry import Trace

TOOL = "dcgm"
DEFAULT_DELAY_MS = 1000.0


def _tags(options: LogOptions) -> dict[str, tuple[str, str, Kind, float | None]]:
    """dmon tag -> (signal, unit, kind, window_ms)."""
    return {"POWER": ("power_average", "W", "gauge", options.power_window_ms),
            "POWINST": ("power_instant", "W", "gauge", 0.0), "TOTEC": ("energy_counter", "mJ", "counter", None),
            "GPUTL": ("utilization_gpu", "%", "gauge", None), "TMPTR": ("temperature_gpu", "C", "gauge", None),
            "SMCLK": ("clock_sm", "MHz", "gauge", None), "MMCLK": ("clock_mem", "MHz", "gauge", None)}


def convert(text: str, source: str, options: LogOptions) -> Trace:
    """The dcgmi dmon output ``text`` (from ``source``, named in messages) as a trace (module doc)."""
    header: list[str] | None = None
    devices: list[str] = []
    cells: list[list[str]] = []
    line_of: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words:
            continue
        if words[0] in ("#Entity", "#") and (words[0] == "#Entity" or words[1:2] == ["Entity"]):
            tags = words[1:] if words[0] == "#Entity" else words[2:]
            if header is not None and tags != header:
                raise LogError(f"{source} line {number}: the fields changed mid-log ({' '.join(tags)} after "
                               f"{' '.join(header)})")
            header = tags
            continue
        if words[0] == "ID" or words[0].startswith("#"):
            continue
        if header is None:
            raise LogError(f"{source} line {number}: a reading before the '#Entity' header line")
        if len(words) != len(header) + 2:
            raise LogError(f"{source} line {number}: {len(words)} words where 'ENTITY ID' and the {len(header)} "
                           f"fields {' '.join(header)} make {len(header) + 2}")
        devices.append(f"{words[0]} {words[1]}")
        cells.append(words[2:])
        line_of.append(number)
    if header is None or not cells:
        raise LogError(f"{source}: no '#Entity' header or no readings (is this dcgmi dmon output?)")
    gpus = [d.split()[1] if d.startswith("GPU ") else d for d in devices]
    device = choose_device(gpus, options, source)
    keep = [i for i, g in enumerate(gpus) if g == device]
    lines = np.array([line_of[i] for i in keep], dtype=np.int64)
    delay_ns = int(round((options.poll_ms or DEFAULT_DELAY_MS) * 1e6))
    t_before = np.arange(len(keep), dtype=np.int64) * delay_ns
    known = _tags(options)
    out: dict[str, Column] = {}
    for j, tag in enumerate(header):
        if tag not in known:
            continue
        name, unit, kind, window = known[tag]
        values, status, _ = parse_cells([cells[i][j] for i in keep], unit, source, int(lines[0]), lines)
        out[name] = Column(signal(name, unit, kind, window), values, status)
    if not any(s in out for s in ("energy_counter", "power_average", "power_instant")):
        raise LogError(f"{source}: no power or energy field among {' '.join(header)} (dmon -e 155,156)")
    return build_trace(t_before, t_before + delay_ns, out, TOOL,
                       LogOptions(**{**options.__dict__, "poll_ms": options.poll_ms or DEFAULT_DELAY_MS}))


__all__ = ["TOOL", "convert"]
