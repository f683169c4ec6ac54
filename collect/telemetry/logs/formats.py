"""The power-log formats by name, how a log file is recognised, and the one entry point.

``convert_log(path, fmt, options)`` reads the file and returns its trace (``LogError``, exit 2,
naming the file and line, for anything it cannot convert). A format is named by ``fmt`` or
recognised from the file's name: ``*.nvidia-smi.csv`` / ``*.smi.csv``, ``*.dcgm.txt`` /
``*.dcgmi.txt`` / ``*.dcgm``, ``*.zeus.csv`` / ``*.zeus.jsonl``, ``*.emissions.csv`` /
``*.codecarbon.csv`` (and a file called ``emissions.csv``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from collect.telemetry.logs import codecarbon, dcgm, nvidia_smi, zeus
from collect.telemetry.logs.common import LogError, LogOptions
from collect.telemetry.logs.reading import LogText, log_lines
from collect.traces.telemetry import Trace, write_trace

Converter = Callable[[LogText, str, LogOptions], Trace]
#: format name -> its converter (each one module, one signature)
FORMATS: dict[str, Converter] = {"nvidia-smi": nvidia_smi.convert, "dcgm": dcgm.convert, "zeus": zeus.convert,
                                 "codecarbon": codecarbon.convert}
#: file-name suffix -> format (the longest suffix that matches wins)
SUFFIXES = {".nvidia-smi.csv": "nvidia-smi", ".smi.csv": "nvidia-smi", ".dcgm.txt": "dcgm", ".dcgmi.txt": "dcgm",
            ".dcgm": "dcgm", ".zeus.csv": "zeus", ".zeus.jsonl": "zeus", ".emissions.csv": "codecarbon",
            ".codecarbon.csv": "codecarbon"}


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
        raise LogError(f"{path}: the format is not recognised from the name (suffixes: {', '.join(SUFFIXES)}); "
                       f"give it with --format ({'|'.join(FORMATS)})")
    return found[0]


def convert_log(path: str | Path, fmt: str | None = None, options: LogOptions | None = None) -> Trace:
    """The trace of the power log at ``path`` (format ``fmt`` or recognised; module doc), read one
    line at a time (memory: :mod:`collect.telemetry.logs.reading`)."""
    path = Path(path)
    name = format_of(path, fmt)
    return FORMATS[name](log_lines(path), str(path), options or LogOptions())


def default_trace_base(path: Path) -> Path:
    """Where ``collect telemetry LOG`` writes without ``-o``: beside the log, its suffix replaced
    by ``.telemetry`` (``run7.nvidia-smi.csv`` -> ``run7.telemetry``)."""
    found = recognise(path.name)
    stem = path.name[: -len(found[1])] if found and found[1] != path.name else path.stem
    return path.with_name((stem or "log") + ".telemetry")


def convert_to_trace(path: str | Path, out: str | Path | None = None, fmt: str | None = None,
                     options: LogOptions | None = None) -> tuple[Trace, list[Path]]:
    """Convert the log at ``path`` and write its trace (``write_trace``) at ``out`` (a base name;
    default :func:`default_trace_base`): the trace and the files written."""
    trace = convert_log(path, fmt, options)
    base = Path(out) if out is not None else default_trace_base(Path(path))
    for suffix in (".meta.json", ".polls.parquet", ".polls.csv.gz"):
        if base.name.endswith(suffix):
            base = base.with_name(base.name[: -len(suffix)])
    return trace, write_trace(trace, base)


__all__ = ["convert_to_trace", "default_trace_base", "FORMATS", "SUFFIXES", "LogError", "LogOptions", "convert_log", "format_of", "recognise"]
