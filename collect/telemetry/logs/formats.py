"""The power-log formats by name, how a log file is recognised, and the one entry point.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields
from itertools import islice
from pathlib import Path

from collect.telemetry.logs import codecarbon, dcgm, nvidia_smi, zeus
from collect.telemetry.logs.common import LogError, LogOptions
from collect.telemetry.logs.gpus import refuse_gpu_with_all
from collect.telemetry.logs.reading import LogText, log_lines
from collect.traces.telemetry import Trace, write_trace

Converter = Callable[[LogText, str, LogOptions], Trace]
#: format name -> its converter (each one module, one signature)
FORMATS: dict[str, Converter] = {
    "nvidia-smi": nvidia_smi.convert,
    "dcgm": dcgm.convert,
    "zeus": zeus.convert,
    "codecarbon": codecarbon.convert,
}
#: file-name suffix -> format (the longest suffix that matches wins)
SUFFIXES = {
    ".nvidia-smi.csv": "nvidia-smi",
    ".smi.csv": "nvidia-smi",
    ".dcgm.txt": "dcgm",
    ".dcgmi.txt": "dcgm",
    ".dcgm": "dcgm",
    ".zeus.csv": "zeus",
    ".zeus.jsonl": "zeus",
    ".emissions.csv": "codecarbon",
    ".codecarbon.csv": "codecarbon",
}


#: a ``LogOptions`` field set away from its default -> (its command-line option, the formats that use it, why)
APPLIES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "gpu": ("--gpu", ("nvidia-smi", "dcgm", "zeus"), "CodeCarbon logs the sum of every GPU"),
    "poll_ms": ("--poll-ms", ("nvidia-smi", "dcgm"), "Zeus and CodeCarbon log windows, not polls"),
    "power_window_ms": ("--power-window-ms", ("nvidia-smi", "dcgm"), "only they log a driver-averaged power"),
    "power_model": ("--power-model", ("nvidia-smi", "dcgm"), "only they log a driver-averaged power"),
    "window": ("--window", ("zeus",), "only Zeus names its windows"),
    "max_gap_ms": ("--max-gap-ms", ("zeus",), "only Zeus windows are chained across gaps"),
    "query_fields": ("--query-fields", ("nvidia-smi",), "they name nvidia-smi's --query-gpu fields"),
}


def check_options(fmt: str, options: LogOptions, where: str | None = None) -> None:
    """``LogError`` for an option the format ``fmt`` cannot use (:data:`APPLIES`), or for one GPU
    and every GPU asked for at once; ``where`` names the log in the message."""
    default = {f.name: f.default for f in fields(LogOptions)}
    prefix = f"{where}: " if where else ""
    for name, (flag, formats, why) in APPLIES.items():
        if fmt not in formats and getattr(options, name) != default[name]:
            raise LogError(
                f"{prefix}{flag} does not apply to {fmt} logs ({why}); it applies to {', '.join(formats)} logs"
            )
    refuse_gpu_with_all(options, where or "the options")


class _Lines:
    """A log's lines (:func:`~collect.telemetry.logs.reading.log_lines`), one held back so that the
    last line is known -- and whether it has a line ending -- before the converter reads it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.unterminated: int | None = None  # the number of a last line without a line ending

    def __iter__(self) -> Iterator[str]:
        held: str | None = None
        number = 0
        for line in log_lines(self.path):
            if held is not None:
                yield held
            held, number = line, number + 1
        if held is not None:
            if not held.endswith(("\n", "\r")):
                self.unterminated = number
            yield held


def recognise(name: str) -> tuple[str, str] | None:
    """``(format, suffix)`` of a log file name, or None when no known suffix ends it."""
    if name == "emissions.csv":
        return "codecarbon", name
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix) and len(name) > len(suffix):
            return SUFFIXES[suffix], suffix
    return None


def format_of(path: Path, fmt: str | None) -> str:
    """The format ``fmt`` names, else the one the file's name says; ``LogError`` otherwise."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise LogError(f"unknown log format {fmt!r}; known: {', '.join(FORMATS)}")
        return fmt
    found = recognise(path.name)
    if found is None:
        raise LogError(
            f"{path}: the format is not recognised from the name (suffixes: {', '.join(SUFFIXES)}); "
            f"give it with --format ({'|'.join(FORMATS)})"
        )
    return found[0]


def convert_log(
    path: str | Path, fmt: str | None = None, options: LogOptions | None = None, notes: list[str] | None = None
) -> Trace:
    """The trace of the power log at ``path`` (format ``fmt`` or recognised; module doc), read one
    line at a time (memory: :mod:`collect.telemetry.logs.reading`). What the user should know of
    the conversion (a truncated last line dropped) is appended to ``notes``."""
    path = Path(path)
    name = format_of(path, fmt)
    options = options or LogOptions()
    source = str(path)
    check_options(name, options, source)
    lines = _Lines(path)
    try:
        trace = FORMATS[name](lines, source, options)
    except LogError as err:
        cut = lines.unterminated
        prefix = f"{source} line {cut}:"
        if cut is None or not str(err).startswith(prefix):
            raise
        trace = FORMATS[name](islice(log_lines(path), cut - 1), source, options)
        if notes is not None:
            notes.append(
                f"dropped the truncated last line {cut} of {source} (it has no line ending and "
                f"{str(err)[len(prefix) :].strip()}: the logger was stopped while writing it)"
            )
        return trace
    if lines.unterminated is not None and notes is not None:
        notes.append(
            f"the last line {lines.unterminated} of {source} has no line ending (was the logger stopped "
            "while writing it?); it reads as a whole line and was kept"
        )
    return trace


def default_trace_base(path: Path) -> Path:
    """Where ``collect telemetry LOG`` writes without ``-o``: beside the log, its suffix replaced
    by ``.telemetry`` (``run7.nvidia-smi.csv`` -> ``run7.telemetry``)."""
    found = recognise(path.name)
    stem = path.name[: -len(found[1])] if found and found[1] != path.name else path.stem
    return path.with_name((stem or "log") + ".telemetry")


def convert_to_trace(
    path: str | Path,
    out: str | Path | None = None,
    fmt: str | None = None,
    options: LogOptions | None = None,
    notes: list[str] | None = None,
) -> tuple[Trace, list[Path]]:
    """Convert the log at ``path`` and write its trace (``write_trace``) at ``out`` (a base name;
    default :func:`default_trace_base`): the trace and the files written (``notes``: as
    :func:`convert_log`'s)."""
    trace = convert_log(path, fmt, options, notes)
    base = Path(out) if out is not None else default_trace_base(Path(path))
    for suffix in (".meta.json", ".polls.parquet", ".polls.csv.gz"):
        if base.name.endswith(suffix):
            base = base.with_name(base.name[: -len(suffix)])
    return trace, write_trace(trace, base)


__all__ = [
    "APPLIES",
    "FORMATS",
    "SUFFIXES",
    "LogError",
    "LogOptions",
    "check_options",
    "convert_log",
    "convert_to_trace",
    "default_trace_base",
    "format_of",
    "recognise",
]
