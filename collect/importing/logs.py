"""``collect import --telemetry DIR``: each run's power log fills its telemetry columns and becomes its trace.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import shutil
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from collect.importing.rows import TELEMETRY_FIELDS, CellError, metric_bound_columns, metrics_on, row_record, signals_of
from collect.ledger.store import TRACES_DIR, RunRecord, run_id
from collect.telemetry.analysis.energy import run_energy
from collect.telemetry.logs.common import LogError, LogOptions, with_meter
from collect.telemetry.logs.formats import FORMATS, SUFFIXES, check_options, convert_log, format_of
from collect.telemetry.logs.gaps import end_note, gap_note
from collect.telemetry.sensors.base import DEFAULT_POWER_RANGE_W
from collect.traces.telemetry import Trace, write_trace
from prereg.schema import Plan

STAGING = ".import-traces"  # inside RUNS, while an import runs


class LogNote(UserWarning):
    """What the user should know of one run's power log (``<run_id>: ...``); nothing was refused."""


@dataclass(frozen=True)
class TelemetryLogs:
    """Where the runs' power logs are, their format (None: recognised from the names) and options."""

    folder: Path
    fmt: str | None = None
    options: LogOptions = field(default_factory=LogOptions)


def find_log(logs: TelemetryLogs, ids: list[str]) -> tuple[Path | None, str]:
    """The log of the first of ``ids`` that has one in the folder, and what was looked for."""
    suffixes = sorted(SUFFIXES, key=len, reverse=True) if logs.fmt is None else None
    for rid in ids:
        if suffixes is not None:
            for suffix in suffixes:
                path = logs.folder / f"{rid}{suffix}"
                if path.is_file():
                    return path, ""
        else:
            found = sorted(p for p in logs.folder.glob(f"{rid}.*") if p.is_file())
            if found:
                return found[0], ""
    wanted = " or ".join(f"{rid}.*" for rid in ids)
    return None, f"no telemetry log {wanted} in {logs.folder}" + (
        f" (known suffixes: {', '.join(SUFFIXES)})" if logs.fmt is None else ""
    )


def _fill(row: dict[str, Any], trace: Trace, plan: Plan, number: int, source: Path) -> tuple[dict[str, Any], list[str]]:
    """``row`` with its telemetry columns (and empty energy metrics) from ``trace``; errors."""
    out, errors = dict(row), []
    p_min, p_max = trace.power_range_w or DEFAULT_POWER_RANGE_W
    per_metric = metric_bound_columns(plan)
    for signal in signals_of(plan):
        if signal not in trace.signals or trace.rows(signal)["value"].size == 0:
            errors.append(
                f"row {number}: the log {source.name} has no {signal} readings (it has {', '.join(trace.signals)})"
            )
            continue
        energy = run_energy(trace, signal, p_min, p_max)
        cells: dict[str, Any] = {
            f"{signal}.{f}": energy.summary[f]
            for f in sorted(TELEMETRY_FIELDS - {"bound"})
            if energy.summary.get(f) is not None
        }
        names = metrics_on(plan, signal)
        for metric in names:
            bound = energy.summary["metric_bounds"].get(metric)
            column = f"{metric}.bound" if f"{metric}.bound" in per_metric else f"{signal}.bound"
            if bound is not None and (column != f"{signal}.bound" or len(names) == 1):
                cells[column] = bound
            if out.get(metric) in (None, "") and metric in energy.metrics:
                cells[metric] = energy.metrics[metric]
        given = [c for c in cells if c in row and row[c] not in (None, "") and c not in names]
        if given:
            errors.append(
                f"row {number}: column(s) {', '.join(given)} are given in the table and filled from the "
                f"telemetry log {source.name}; drop them from the table (or import without --telemetry)"
            )
        out.update(cells)
    return out, errors


def plan_meter(options: LogOptions, plan: Plan) -> LogOptions:
    """``options`` with what the plan's metrics declare of their meter (``meter``: the counter's
    update period, the power averaging model); ``LogError`` where a given option contradicts it."""
    for metric in plan.metrics.values():
        if metric.meter is not None:
            options = with_meter(options, metric.meter.counter_period_ms, metric.meter.power_model)
    return options


def attach_logs(
    rows: list[dict[str, Any]], plan: Plan, plan_sha256: str, source: str, logs: TelemetryLogs
) -> tuple[list[dict[str, Any]], dict[str, Trace], list[str]]:
    """Each row with its log's telemetry (module doc): ``(rows, run id -> trace, errors naming rows)``.
    A row whose cells do not fit the plan is passed on as it is (the import names what is wrong)."""
    if logs.fmt is not None and logs.fmt not in FORMATS:
        raise LogError(f"unknown log format {logs.fmt!r}; known: {', '.join(FORMATS)}")
    if not logs.folder.is_dir():
        raise LogError(f"--telemetry {logs.folder}: not a folder")
    if not signals_of(plan):
        raise LogError("--telemetry: the plan names no telemetry signal (a metric's 'signal'), so no log can fill one")
    logs = replace(logs, options=plan_meter(logs.options, plan))
    if logs.fmt is not None:
        check_options(logs.fmt, logs.options, "--telemetry")
    checked = {logs.fmt}
    out, traces, errors = [], {}, []
    for number, row in enumerate(rows, start=1):
        try:
            record = row_record(row, number, plan, plan_sha256, source)
        except (CellError, ValueError, ValidationError):
            out.append(row)
            continue
        given = str(row.get("run_id") or "").strip()
        ids = [given] if given else [run_id(plan_sha256, record.stratum, record.arm, record.replicate), record.run_id]
        path, missing = find_log(logs, ids)
        if path is None:
            errors.append(f"row {number}: {missing}")
            out.append(row)
            continue
        fmt = format_of(path, logs.fmt)
        if fmt not in checked:  # an option this format cannot use: one message, not one per row
            check_options(fmt, logs.options, f"--telemetry {path}")
            checked.add(fmt)
        notes: list[str] = []
        try:
            trace = convert_log(path, fmt, logs.options, notes)
        except LogError as err:
            errors.append(f"row {number}: {err}")
            out.append(row)
            continue
        _warn_notes(record.run_id, path, notes, trace, plan, record.finished_at)
        filled, problems = _fill(row, trace, plan, number, path)
        errors += problems
        traces[record.run_id] = trace
        out.append(filled)
    _warn_meter(traces, plan)
    return out, traces, errors


def _warn_meter(traces: dict[str, Trace], plan: Plan) -> None:
    """One :class:`LogNote` per signal saying what the bounds took of the meter and from where: the
    counter's update period and its basis, a power signal's averaging model."""
    said: dict[str, set[str]] = {}
    for trace in traces.values():
        for signal in signals_of(plan):
            info = trace.signals.get(signal)
            if info is None:
                continue
            if info.period_ms is not None:
                said.setdefault(signal, set()).add(f"counter update period {info.period_ms:g} ms ({info.period_basis})")
            if info.power_model is not None:
                how = (
                    "a true mean over its window"
                    if info.power_model == "average"
                    else "part-time samples (only the power range bounds the rest)"
                )
                said.setdefault(signal, set()).add(f"power read as {how} (power_model {info.power_model})")
    for signal, texts in said.items():
        warnings.warn(LogNote(f"{signal}: bounds use " + "; ".join(sorted(texts))), stacklevel=2)


def _warn_notes(rid: str, path: Path, notes: list[str], trace: Trace, plan: Plan, finished_at: str | None) -> None:
    """One :class:`LogNote` per note of the conversion, and for the gaps the plan's first signal in
    the trace shows (module doc)."""
    signal = next((s for s in signals_of(plan) if s in trace.signals), None)
    if signal is not None:
        notes += [f"log {path.name} {n}" for n in (gap_note(trace, signal), end_note(trace, signal, finished_at)) if n]
    for note in notes:
        warnings.warn(LogNote(f"{rid}: {note}"), stacklevel=2)


def stage_traces(runs_dir: Path, traces: dict[str, Trace]) -> dict[str, list[str]]:
    """Write each trace to the staging folder: run id -> its files' names as records list them."""
    staging = Path(runs_dir) / STAGING
    shutil.rmtree(staging, ignore_errors=True)
    names = {}
    for rid, trace in traces.items():
        names[rid] = [f"{TRACES_DIR}/{p.name}" for p in write_trace(trace, staging / f"{rid}.telemetry")]
    return names


def install_traces(runs_dir: Path, records: list[RunRecord]) -> None:
    """Move the staged traces of ``records`` into ``RUNS/traces`` (before their records are appended)."""
    staging = Path(runs_dir) / STAGING
    (Path(runs_dir) / TRACES_DIR).mkdir(parents=True, exist_ok=True)
    for record in records:
        for name in record.traces:
            (staging / Path(name).name).replace(Path(runs_dir) / name)


def drop_staging(runs_dir: Path) -> None:
    """Remove the staging folder (what it still holds belongs to no record)."""
    shutil.rmtree(Path(runs_dir) / STAGING, ignore_errors=True)


__all__ = ["LogNote", "TelemetryLogs", "attach_logs", "drop_staging", "find_log", "install_traces", "stage_traces"]
