"""Zeus ``ZeusMonitor(log_file=...)`` logs, as a trace of the GPU energy counter at window boundaries.

What this follows (``zeus/monitor/energy.py`` of ml-energy/zeus, the monitor that writes the log):
a CSV header ``start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy,...`` and one line per
ended measurement window: ``start_time`` in Unix seconds (``time.time()``, a float), the window's
name, ``elapsed_time`` in seconds and each GPU's energy over the window in J (the difference of
``nvmlDeviceGetTotalEnergyConsumption`` at the window's ends on Volta and newer). A window shorter
than the counter's update period reads 0 J (Zeus warns of it): here that is "no update seen", and
the bounds say how much energy the window may still have held. A JSON Lines log of the same fields
(one object per window) is read too.

Windows are converted as :mod:`collect.telemetry.logs.windows` describes; each window is also a
phase named after it. Zeus allows concurrent windows (an epoch holding its steps): overlapping
windows are refused unless ``LogOptions.window`` picks one name. Times are read to 1 microsecond.
"""

from __future__ import annotations

import csv
import io

from collect.telemetry.logs.common import LogError, LogOptions, cell_number, choose_device
from collect.telemetry.logs.windows import Window, windows_trace
from collect.traces.lines import LineError, json_rows
from collect.traces.telemetry import Trace

TOOL = "zeus"
_S = 1_000_000_000


def _rows(text: str, source: str) -> list[tuple[int, dict[str, str]]]:
    if text.lstrip().startswith("{"):
        try:  # JSON lines, read as the toolkit's own JSON-lines traces are
            return [(number, {str(k): str(v) for k, v in row.items()}) for number, row in json_rows(text)]
        except LineError as err:
            raise LogError(f"{source} line {err.number}: {err}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    out = []
    for row in reader:
        if None in row or None in row.values():
            raise LogError(f"{source} line {reader.line_num}: not as many cells as the header names")
        out.append((reader.line_num, row))
    return out


def _number(row: dict[str, str], key: str, source: str, line: int) -> float:
    return cell_number(row, key, source, line, nonnegative=key != "start_time",
                       missing="a Zeus log has start_time,window_name,elapsed_time,gpu<i>_energy")


def convert(text: str, source: str, options: LogOptions) -> Trace:
    """The Zeus log ``text`` (from ``source``, named in messages) as a trace (module doc)."""
    rows = _rows(text, source)
    if not rows:
        raise LogError(f"{source}: no measurement windows")
    gpus = [k[3:-7] for k in rows[0][1] if k.startswith("gpu") and k.endswith("_energy")]
    if not gpus:
        raise LogError(f"{source} line 1: no gpu<i>_energy column (a Zeus log has start_time,window_name,"
                       "elapsed_time,gpu0_energy,...)")
    gpu = choose_device(gpus, options, source) if options.gpu is not None or len(gpus) > 1 else gpus[0]
    windows = []
    for line, row in rows:
        name = row.get("window_name", "")
        if options.window is not None and name != options.window:
            continue
        start = _number(row, "start_time", source, line)
        elapsed = _number(row, "elapsed_time", source, line)
        energy = _number(row, f"gpu{gpu}_energy", source, line)
        windows.append(Window(round(start * _S), round((start + elapsed) * _S), energy, name, line))
    if not windows:
        raise LogError(f"{source}: no window named {options.window!r}")
    windows.sort(key=lambda w: w.start_ns)
    for before, after in zip(windows, windows[1:], strict=False):
        if after.start_ns < before.end_ns:
            raise LogError(f"{source} line {after.line}: window {after.name!r} starts before window {before.name!r} "
                           f"(line {before.line}) ends; concurrent windows cannot share one counter series: "
                           "convert one window name (--window NAME)")
    return windows_trace(windows, TOOL, options, 1000)


__all__ = ["TOOL", "convert"]
