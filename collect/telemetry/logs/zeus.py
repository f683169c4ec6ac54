"""Zeus ``ZeusMonitor(log_file=...)`` logs, as a trace of the GPU energy counter at window boundaries.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from itertools import chain

from collect.telemetry.logs.checks import duration_ns, epoch_ns
from collect.telemetry.logs.common import LogError, LogOptions, cell_number, choose_device
from collect.telemetry.logs.gpus import refuse_gpu_with_all, summed_options
from collect.telemetry.logs.reading import LogText, text_lines
from collect.telemetry.logs.windows import Window, Windows, windows_trace
from collect.traces.lines import LineError, json_rows
from collect.traces.telemetry import Trace

TOOL = "zeus"
_COLUMNS = "a Zeus log has start_time,window_name,elapsed_time,gpu<i>_energy"


def _json_rows(first: str, lines: Iterator[str], source: str) -> Iterator[tuple[int, dict[str, str]]]:
    """JSON Lines, read as the toolkit's own JSON-lines traces are (one object per line)."""
    try:
        for number, row in json_rows(chain([first], lines)):
            yield number, {str(k): str(v) for k, v in row.items()}
    except LineError as err:
        raise LogError(f"{source} line {err.number}: {err}") from None


def _csv_rows(first: str, lines: Iterator[str], source: str) -> Iterator[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(chain([first], lines))
    for row in reader:
        if None in row or None in row.values():
            raise LogError(f"{source} line {reader.line_num}: not as many cells as the header names")
        yield reader.line_num, row


def _rows(text: LogText, source: str) -> Iterator[tuple[int, dict[str, str]]]:
    lines = text_lines(text)
    first = next(lines, "")
    rows = _json_rows if first.lstrip().startswith("{") else _csv_rows
    return rows(first, lines, source)


def _number(row: dict[str, str], key: str, source: str, line: int) -> float:
    return cell_number(row, key, source, line, nonnegative=key != "start_time", missing=_COLUMNS)


def convert(text: LogText, source: str, options: LogOptions) -> Trace:
    """The Zeus log ``text`` (from ``source``, named in messages; its text or its lines) as a trace
    (module doc). Times must be Unix seconds from 1970 to 2200 (``LogError`` naming the line)."""
    refuse_gpu_with_all(options, source)
    rows = _rows(text, source)
    windows = Windows()
    columns: list[str] | None = None
    for line, row in rows:
        if columns is None:
            gpus = [k[3:-7] for k in row if k.startswith("gpu") and k.endswith("_energy")]
            if not gpus:
                raise LogError(
                    f"{source} line 1: no gpu<i>_energy column (a Zeus log has start_time,window_name,"
                    "elapsed_time,gpu0_energy,...)"
                )
            chosen = (
                gpus
                if options.all_gpus
                else [choose_device(gpus, options, source) if options.gpu is not None or len(gpus) > 1 else gpus[0]]
            )
            columns = [f"gpu{g}_energy" for g in chosen]
        name = row.get("window_name", "")
        if options.window is not None and name != options.window:
            continue
        start = _number(row, "start_time", source, line)
        elapsed = _number(row, "elapsed_time", source, line)
        start_ns = epoch_ns(start, source, line, "start_time")
        duration_ns(elapsed, source, line, "elapsed_time")
        end_ns = epoch_ns(start + elapsed, source, line, "start_time + elapsed_time")
        energy_j = sum(_number(row, column, source, line) for column in columns)
        windows.add(Window(start_ns, end_ns, energy_j, name, line))
    if columns is None:
        raise LogError(f"{source}: no measurement windows")
    if not len(windows):
        raise LogError(f"{source}: no window named {options.window!r}")
    order = windows.by_start(
        source, "window", "concurrent windows cannot share one counter series: convert one window name (--window NAME)"
    )
    summed = summed_options(options, len(columns)) if options.all_gpus else options
    return windows_trace(windows, order, TOOL, summed, 1000, source, lossy_joins=True)


__all__ = ["TOOL", "convert"]
