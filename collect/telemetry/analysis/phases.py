"""Energy per phase of a run, with guaranteed bounds, and the same above an idle baseline.

A run's recorder marks phases (``compute``, ``replay``, ``checkpoint``, ``restore``, ``stall`` and
an ``idle`` baseline window); a phase usually occurs many times. The energy of a phase is the sum
of its intervals' energies, and its bounds the sums of their bounds (each interval's bounds
contain its true energy, so the sums contain the phase's). Intervals come from the outermost
marks of that name (a nested mark of the same name is not counted twice).

*Support* of a phase is the number of signal updates whose whole update window lies inside one
of its intervals: a checkpoint phase of 200 ms on a counter that updates every 100 ms has one or
two; a rare 50 ms restore usually none, and its energy bound is then the power range times its
length -- honest, and what ``counter_support`` with ``phase:`` refuses gates on.

*Idle-subtracted* energy (a sensitivity figure, never the measured energy) removes the idle
power times the phase's duration, with the idle power's own bounds from the ``idle`` window
(:func:`collect.telemetry.analysis.bounds.idle_subtracted`). Energies are J, durations ms, powers W.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is loaded only when energies are computed
    from collect.telemetry.analysis.bounds import EnergyEstimate
    from collect.telemetry.analysis.resolution import Updates
    from collect.traces.telemetry import Trace

#: the phases a run's recorder marks (a failure-recovery harness: compute, replay, ...), in report order
RUN_PHASES = ("compute", "replay", "checkpoint", "restore", "stall")
IDLE = "idle"
_S = 1e9


@dataclass(frozen=True)
class PhaseEnergy:
    """One phase over a run: energy (J) with bounds, its summed duration, intervals and support."""

    phase: str
    energy: EnergyEstimate
    duration_ms: float
    intervals: int
    updates: int


def intervals_of(trace: Trace, phase: str) -> list[tuple[int, int]]:
    """The [start, end] ns of each outermost mark called ``phase`` (closed marks only)."""
    out: list[tuple[int, int]] = []
    for p in trace.phases:
        if p.name != phase or p.end_ns < p.start_ns:
            continue
        if out and p.start_ns < out[-1][1]:  # nested inside the previous mark of the same name
            continue
        out.append((p.start_ns, p.end_ns))
    return out


def interval_energy(
    trace: Trace,
    signal: str,
    a_ns: int,
    b_ns: int,
    p_min_w: float,
    p_max_w: float,
    wrap_mj: int | None = None,
    updates: Updates | None = None,
) -> EnergyEstimate:
    """Energy of [a, b] from ``signal``: the counter method for a counter, integration for power
    (``updates``: the signal's ``value_changes`` when already computed)."""
    from collect.telemetry.analysis.bounds import energy_from_counter, energy_from_power  # lazy: numpy

    info = trace.signals.get(signal)
    if info is not None and info.kind == "counter":
        return energy_from_counter(trace, a_ns, b_ns, p_min_w, p_max_w, signal, wrap_mj=wrap_mj, updates=updates)
    return energy_from_power(trace, a_ns, b_ns, p_min_w, p_max_w, signal, updates=updates)


def phase_energy_total(
    trace: Trace, signal: str, phase: str, p_min_w: float, p_max_w: float, wrap_mj: int | None = None
) -> PhaseEnergy:
    """Summed energy, bounds, duration and support of every interval of ``phase`` (module doc)."""
    from collect.telemetry.analysis.bounds import EnergyEstimate  # lazy: numpy
    from collect.telemetry.analysis.resolution import value_changes  # lazy: numpy

    spans = intervals_of(trace, phase)
    u = value_changes(trace, signal, wrap_mj)
    est = lower = upper = systematic = 0.0
    updates = 0
    method = "none"
    notes: set[str] = set()
    for a, b in spans:
        e = interval_energy(trace, signal, a, b, p_min_w, p_max_w, wrap_mj, updates=u)
        est, lower, upper = est + e.estimate_j, lower + e.lower_j, upper + e.upper_j
        systematic += e.systematic_bound_j  # the arm-dependent parts add up (each at most its bound)
        method = e.method if method in ("none", e.method) else "mixed"
        notes.update(e.notes)
        updates += int(((u.lo_ns >= a) & (u.hi_ns <= b)).sum())
    duration_ms = sum(b - a for a, b in spans) / 1e6
    energy = EnergyEstimate(est, lower, upper, updates, method, tuple(sorted(notes)), systematic)
    return PhaseEnergy(phase, energy, duration_ms, len(spans), updates)


def run_phase_energies(
    trace: Trace,
    signal: str,
    p_min_w: float,
    p_max_w: float,
    phases: tuple[str, ...] = RUN_PHASES,
    wrap_mj: int | None = None,
) -> dict[str, PhaseEnergy]:
    """:func:`phase_energy_total` of each phase (absent phases: zero energy, zero duration)."""
    return {name: phase_energy_total(trace, signal, name, p_min_w, p_max_w, wrap_mj) for name in phases}


def net_of(phase: PhaseEnergy, idle: PhaseEnergy) -> EnergyEstimate | None:
    """``phase`` above the idle baseline (None without an idle window)."""
    from collect.telemetry.analysis.bounds import idle_subtracted  # lazy: numpy

    if idle.duration_ms <= 0:
        return None
    return idle_subtracted(phase.energy, idle.energy, idle.duration_ms / 1e3, phase.duration_ms / 1e3)


def support_summary(phases: dict[str, PhaseEnergy]) -> dict[str, dict[str, float | int]]:
    """The ledger's per-phase support: ``{phase: {updates, intervals, duration_ms}}``."""
    return {
        name: {
            "updates": pe.updates,
            "intervals": pe.intervals,
            "duration_ms": round(pe.duration_ms, 6) if math.isfinite(pe.duration_ms) else 0.0,
        }
        for name, pe in phases.items()
    }
