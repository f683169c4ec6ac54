"""The data behind ``reports plot RUNS --run ID --telemetry``: one run's kept telemetry trace, checked.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collect.telemetry.analysis.energy import ENERGY_SIGNALS, run_energy
from collect.telemetry.analysis.phases import intervals_of, phase_energy_total
from collect.telemetry.sensors.base import DEFAULT_POWER_RANGE_W
from prereg.errors import InputError, IntegrityError
from reports.data.origin import no_telemetry_reason
from reports.data.timeline import find_run

if TYPE_CHECKING:
    import numpy as np

    from collect.ledger.store import RunRecord
    from collect.telemetry.analysis.phases import PhaseEnergy
    from collect.telemetry.analysis.resolution import PeriodEstimate, Updates
    from collect.traces.telemetry import Trace

META_SUFFIX = ".telemetry.meta.json"
#: the faint poll line is decimated above this many points (bins keep their min and max)
MAX_POLL_POINTS = 20_000
PHASE_ORDER = ("idle", "compute", "replay", "checkpoint", "restore", "stall")


@dataclass(frozen=True)
class PhaseRow:
    """One phase of the run: its outermost intervals (ns) and its summed energy and support."""

    name: str
    intervals: list[tuple[int, int]]
    total: PhaseEnergy


@dataclass
class TelemetryView:
    """Everything the figure and its text show, from the run's record and its verified trace."""

    run_id: str
    arm: str
    status: str
    stratum: dict[str, Any]
    replicate: int
    trace_name: str  # traces/<run_id>.telemetry.meta.json, as the record lists it
    checked: list[str]  # the telemetry trace's files whose SHA-256 matched the record
    trace: Trace
    signal: str
    updates: Updates
    period: PeriodEstimate
    phases: list[PhaseRow]
    energy_j: float  # the ledger's `energy` (end of the idle window to the last poll), its bound and summary
    energy_bound_j: float
    summary: dict[str, Any]
    power_range_w: tuple[float, float]
    range_recorded: bool
    other_problems: list[tuple[str, str]] = field(default_factory=list)  # other traces failing their hash

    @property
    def t0_ns(self) -> int:
        """The first poll: time zero of the figure and the text."""
        return int(self.trace.poll_ns[0])

    @property
    def is_counter(self) -> bool:
        info = self.trace.signals.get(self.signal)
        return info is not None and info.kind == "counter"

    @property
    def unit(self) -> str:
        info = self.trace.signals.get(self.signal)
        return info.unit if info is not None else "?"

    @property
    def title(self) -> str:
        where = ", ".join(f"{k}={v}" for k, v in self.stratum.items()) or "no factors"
        return f"run {self.run_id} (arm {self.arm}, {self.status}; stratum {where}, replicate {self.replicate})"


# --- loading ---------------------------------------------------------------------------------


def _record(folder: Path, run_id: str) -> RunRecord:
    """The run's record (the last one when recorded twice); ``InputError`` when there is none."""
    return find_run(folder, run_id)[1]


def _telemetry_files(folder: Path, record: RunRecord) -> tuple[str, list[str]]:
    """The record's telemetry meta file and every listed file of that trace; ``InputError`` when none."""
    meta = next((t for t in record.traces if t.endswith(META_SUFFIX)), None)
    if meta is None:
        origin = f" (it came from {record.source})" if record.source else ""
        stray = folder / "traces" / f"{record.run_id}{META_SUFFIX}"
        note = (
            (
                f"; {stray} exists but the record does not list it, so it cannot be checked against the "
                "ledger and is not drawn"
            )
            if stray.exists() or stray.is_symlink()
            else ""
        )
        raise InputError(
            f"run {record.run_id}: no kept telemetry trace{origin}: its record lists no "
            f"traces/...{META_SUFFIX} ({no_telemetry_reason(record)}){note}"
        )
    base = meta[: -len(".meta.json")]
    files = [t for t in record.traces if t.startswith(base + ".")]
    if not any(t.startswith(base + ".polls.") for t in files):
        raise IntegrityError(
            f"run {record.run_id}: telemetry trace {folder / meta}: the record lists no polls "
            "file beside it, so its readings cannot be checked against the ledger; not drawn"
        )
    return meta, files


def _energy_signal(trace: Trace, record: RunRecord) -> str | None:
    """The run's energy signal (``collect.telemetry.analysis.energy.ENERGY_SIGNALS``): the one its record
    summarises, else the first the trace holds ok readings of."""
    for signal in [*(s for s in record.telemetry if s in ENERGY_SIGNALS), *ENERGY_SIGNALS]:
        if trace.rows(signal)["value"].size:
            return signal
    return None


def _phase_names(trace: Trace) -> list[str]:
    present = {p.name for p in trace.phases}
    return [n for n in PHASE_ORDER if n in present] + sorted(present - set(PHASE_ORDER))


def load_telemetry(runs_dir: str | Path, run_id: str) -> TelemetryView:
    """The run's verified telemetry trace and every number the plot shows (see the module doc)."""
    from collect.ledger.store import trace_path, trace_problems  # lazy: pydantic
    from collect.ledger.trace_check import verified_loader  # lazy: pydantic
    from collect.telemetry.analysis.resolution import update_period, value_changes  # lazy: numpy
    from collect.traces.telemetry import read_trace  # lazy: numpy

    folder = Path(runs_dir)
    record = _record(folder, run_id)
    meta, files = _telemetry_files(folder, record)
    problems = trace_problems(folder, record)
    bad = [(name, why) for name, why in problems if name in files]
    if bad:
        what = "; ".join(f"{folder / name} {why}" for name, why in bad)
        raise IntegrityError(
            f"run {run_id}: telemetry trace does not match the ledger: {what}; refusing to draw "
            "it (the ledger holds the SHA-256 the run recorded)",
            details=[n for n, _ in bad],
        )
    trace = read_trace(trace_path(folder, meta), load=verified_loader(folder, record))  # the bytes read are checked
    if trace.poll_ns.size == 0:
        raise InputError(f"{folder / meta}: the telemetry trace has no polls; nothing to draw")
    signal = _energy_signal(trace, record)
    if signal is None:
        raise InputError(
            f"{folder / meta}: the trace holds no ok reading of an energy or power signal "
            f"(it lists {', '.join(trace.signals) or 'no signals'})"
        )
    recorded = trace.power_range_w is not None

    p_min, p_max = trace.power_range_w if trace.power_range_w is not None else DEFAULT_POWER_RANGE_W
    energy = run_energy(trace, signal, p_min, p_max)  # the collector's function, the collector's numbers
    rows = []
    for name in _phase_names(trace):
        spans = intervals_of(trace, name)
        if spans:
            total = (
                energy.phases[name] if name in energy.phases else phase_energy_total(trace, signal, name, p_min, p_max)
            )
            rows.append(PhaseRow(name, spans, total))
    return TelemetryView(
        run_id=record.run_id,
        arm=record.arm,
        status=record.status,
        stratum=dict(record.stratum),
        replicate=record.replicate,
        trace_name=meta,
        checked=files,
        trace=trace,
        signal=signal,
        updates=value_changes(trace, signal),
        period=update_period(trace, signal),
        phases=rows,
        energy_j=energy.metrics["energy"],
        energy_bound_j=energy.bounds["energy"],
        summary=energy.summary,
        power_range_w=(p_min, p_max),
        range_recorded=recorded,
        other_problems=[(n, w) for n, w in problems if n not in files],
    )


# --- what is drawn -----------------------------------------------------------------------------


def envelope(n: int, values: np.ndarray, limit: int) -> np.ndarray:
    """Indices of at most about ``limit`` of ``n`` points that keep the line's envelope.

    All of them when ``n <= limit``; else the points are cut into ``limit // 2`` bins and each
    bin keeps its lowest and highest value (in time order), plus the first and last point.
    """
    import numpy as np  # lazy: numpy

    if n <= limit:
        return np.arange(n)
    bins = max(1, limit // 2)
    size = math.ceil(n / bins)
    padded = np.pad(values.astype(np.float64), (0, bins * size - n), mode="edge").reshape(bins, size)
    starts = np.arange(bins) * size
    keep = np.concatenate([[0, n - 1], starts + padded.argmin(axis=1), starts + padded.argmax(axis=1)])
    return np.unique(np.clip(keep, 0, n - 1))


def energy_scale(view: TelemetryView) -> tuple[float, str]:
    """Joules per plotted unit and its name: J, kJ or MJ, by the counter's total rise (mJ)."""
    import numpy as np  # lazy: numpy

    values = view.updates.value
    rise = (float(np.max(values)) - (view.updates.first_value or 0.0)) / 1000.0 if values.size else 0.0
    return (1e6, "MJ") if rise >= 1e7 else (1e3, "kJ") if rise >= 1e4 else (1.0, "J")


def duration_text(seconds: float) -> str:
    return f"{seconds:.3g} s" if seconds < 1000 else f"{seconds:,.0f} s"


@dataclass(frozen=True)
class Drawn:
    """The figure's data in seconds from the first poll (and J or W): polls, updates, derived power."""

    poll_x: np.ndarray
    poll_y: np.ndarray
    polls: int  # ok readings before decimation
    update_x: np.ndarray  # window midpoints
    update_lo: np.ndarray
    update_hi: np.ndarray
    update_y: np.ndarray
    power_edges: np.ndarray | None  # counter only: mean power between consecutive updates (NaN beside a reset)
    power: np.ndarray | None
    failed_x: np.ndarray  # readings that were not ok
    resets: list[tuple[float, float]]

    @property
    def decimated(self) -> bool:
        return self.poll_x.size < self.polls


def drawn(view: TelemetryView, limit: int | None = None) -> Drawn:
    """What :func:`telemetry_figure` draws: every update, the polls decimated above ``MAX_POLL_POINTS``."""
    import numpy as np  # lazy: numpy

    trace, u, t0 = view.trace, view.updates, view.t0_ns
    rows = trace.rows(view.signal)
    x = ((rows["t_before_ns"] + rows["t_after_ns"]) / 2.0 - t0) / 1e9
    scale, offset = (1000.0 * energy_scale(view)[0], float(rows["value"][0])) if view.is_counter else (1.0, 0.0)
    y = (rows["value"] - offset) / scale
    keep = envelope(x.size, y, MAX_POLL_POINTS if limit is None else limit)
    lo, hi = (u.lo_ns - t0) / 1e9, (u.hi_ns - t0) / 1e9
    mid = (lo + hi) / 2.0
    edges = power = None
    if view.is_counter and mid.size >= 2:
        dv = np.diff(u.value) / 1000.0
        dt = np.diff(mid)
        reset = np.isin(u.hi_ns, [b for _, b in u.resets])  # an update that was a reset: no power beside it
        ok = (dv >= 0) & (dt > 0) & ~reset[:-1] & ~reset[1:]
        power = np.where(ok, dv / np.where(dt > 0, dt, 1.0), np.nan)
        edges = mid
    mask = (trace.signal == view.signal) & (trace.status != "ok")
    failed = ((trace.t_before_ns[mask] + trace.t_after_ns[mask]) / 2.0 - t0) / 1e9
    resets = [((a - t0) / 1e9, (b - t0) / 1e9) for a, b in u.resets]
    return Drawn(x[keep], y[keep], int(x.size), mid, lo, hi, (u.value - offset) / scale, edges, power, failed, resets)
